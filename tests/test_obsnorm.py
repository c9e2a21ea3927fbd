"""RunningMeanStd (Chan et al. mergeable moments) and normalization inside the policies."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import policies
from policies import ActionSpec, RunningMeanStd

SHAPE = (3, 2)


def data(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # Offsets and scales far from 0/1 so a wrong merge formula cannot pass by accident.
    return rng.normal(loc=[[5.0, -3.0]], scale=[[0.1, 40.0]], size=(n, *SHAPE))


def test_merge_equals_statistics_of_concatenated_data():
    a, b = data(0, 37), data(1, 1000)
    ra, rb = RunningMeanStd(SHAPE), RunningMeanStd(SHAPE)
    ra.update(a)
    rb.update(b)
    ra.merge(rb)
    both = np.concatenate([a, b])
    assert ra.count == len(both)
    np.testing.assert_allclose(ra.mean, both.mean(0), rtol=0, atol=1e-10)
    np.testing.assert_allclose(ra.var, both.var(0), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ra.std, np.maximum(both.std(0), ra.eps), rtol=1e-10, atol=1e-10)


def test_many_small_updates_equal_one_big_one():
    x = data(2, 300)
    one, many = RunningMeanStd(SHAPE), RunningMeanStd(SHAPE)
    one.update(x)
    for chunk in np.array_split(x, [1, 2, 50, 51, 299]):
        many.update(chunk)
    assert many.count == one.count == 300
    np.testing.assert_allclose(many.mean, one.mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(many.var, one.var, rtol=1e-10, atol=1e-10)


def test_merge_with_empty_summaries_is_identity():
    x = data(3, 20)
    r = RunningMeanStd(SHAPE)
    r.merge(RunningMeanStd(SHAPE))  # empty into empty
    assert r.count == 0 and np.array_equal(r.var, np.ones(SHAPE))
    r.update(x)
    before = r.state_dict()
    r.merge(RunningMeanStd(SHAPE))  # empty into full
    assert r.count == before["count"] and np.array_equal(r.mean, before["mean"])
    empty = RunningMeanStd(SHAPE)
    empty.merge(r)  # full into empty
    np.testing.assert_array_equal(empty.mean, r.mean)
    np.testing.assert_array_equal(empty.m2, r.m2)


def test_update_skips_non_finite_rows():
    x = data(4, 10)
    bad = x.copy()
    bad[2, 0, 1] = np.nan
    bad[5, 2, 0] = np.inf
    bad[7, 1, 1] = -np.inf
    r = RunningMeanStd(SHAPE)
    r.update(bad)
    keep = np.delete(x, [2, 5, 7], axis=0)
    assert r.count == 7
    np.testing.assert_allclose(r.mean, keep.mean(0), rtol=0, atol=1e-10)
    np.testing.assert_allclose(r.var, keep.var(0), rtol=1e-10, atol=1e-10)
    r.update(np.full((4, *SHAPE), np.nan))  # nothing finite: no change
    assert r.count == 7 and np.isfinite(r.mean).all()


def test_constant_dimensions_get_eps_std():
    x = np.zeros((50, *SHAPE))
    x[:, 0, 0] = np.arange(50)
    r = RunningMeanStd(SHAPE, eps=1e-2)
    r.update(x)
    assert r.std[1, 1] == 1e-2 and r.std[0, 0] > 1.0


def test_state_dict_round_trip():
    r = RunningMeanStd(SHAPE, eps=0.05)
    r.update(data(5, 64))
    d = r.state_dict()
    for again in (RunningMeanStd.from_state_dict(d), r.copy()):
        assert again.shape == r.shape and again.eps == r.eps and again.count == r.count
        np.testing.assert_array_equal(again.mean, r.mean)
        np.testing.assert_array_equal(again.m2, r.m2)
    # The dict (and copies) are snapshots: later updates do not leak into them.
    copy = r.copy()
    r.update(data(6, 8))
    assert d["count"] == 64 and copy.count == 64
    # Lists (as after a JSON trip) load too.
    listed = {**d, "mean": d["mean"].tolist(), "m2": d["m2"].tolist()}
    np.testing.assert_array_equal(RunningMeanStd.from_state_dict(listed).mean, d["mean"])


@pytest.mark.parametrize(
    "kind,options", [("mlp", {"hidden": (16, 8)}), ("neuromod", {"hidden": 8})]
)
def test_policy_normalization_equals_acting_on_prenormalized_obs(kind, options):
    rs = RunningMeanStd(SHAPE)
    rs.update(data(7, 500))
    pol = policies.make(kind, SHAPE, ActionSpec(discrete=True, n=3), **options)
    rng = np.random.default_rng(8)
    P, B, T = 4, 5, 3
    params = torch.as_tensor(rng.normal(0, 0.5, (P, pol.num_params)), dtype=torch.float32)
    raw = data(9, T * P * B).reshape(T, P, B, *SHAPE)
    raw[0, 0, 0, 1, 1] = 1e6  # an outlier far past the clip
    mean = torch.as_tensor(rs.mean, dtype=torch.float32)
    std = torch.as_tensor(rs.std, dtype=torch.float32)
    pre = np.clip((raw - rs.mean) / rs.std, -policies.base.OBS_CLIP, policies.base.OBS_CLIP)

    s_raw, s_pre = pol.initial_state(P, B), pol.initial_state(P, B)
    for t in range(T):
        y_raw, s_raw = pol.forward(params, torch.as_tensor(raw[t]), s_raw, mean, std)
        y_pre, s_pre = pol.forward(params, torch.as_tensor(pre[t], dtype=torch.float32), s_pre)
        torch.testing.assert_close(y_raw, y_pre, rtol=1e-5, atol=1e-5)
        a_raw, _ = pol.act(params, torch.as_tensor(raw[t]), s_raw, mean, std)
        a_pre, _ = pol.act(params, torch.as_tensor(pre[t], dtype=torch.float32), s_pre)
        assert torch.equal(a_raw, a_pre)


def test_cnn_ignores_obs_statistics():
    pol = policies.make("cnn", (2, 20, 20), ActionSpec(discrete=True, n=3),
                        convs=[[4, 4, 2]], hidden=[8])
    params = torch.as_tensor(pol.init_params(np.random.default_rng(0)), dtype=torch.float32)[None]
    obs = torch.randint(0, 256, (1, 3, 2, 20, 20), dtype=torch.uint8)
    y, _ = pol.forward(params, obs)
    mean, std = torch.full((2, 20, 20), 100.0), torch.ones(2, 20, 20)
    y_norm, _ = pol.forward(params, obs, None, mean, std)
    assert torch.equal(y, y_norm)
