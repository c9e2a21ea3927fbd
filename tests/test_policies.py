"""Batched policy kinds against plain per-individual torch reference networks.

Each reference loads ordinary ``nn.Linear`` / ``nn.Conv2d`` modules from one individual's
slice of the parameter vector and runs that individual alone; the batched forward must give
the same raw outputs (logits / pre-squash values, so argmax near-ties cannot flip a test).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

import policies
from policies import ActionSpec

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DISCRETE4 = ActionSpec(discrete=True, n=4)
ATARI = (4, 84, 84)


def random_params(policy, P: int, seed: int, scale: float = 0.5) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.as_tensor(rng.normal(0.0, scale, size=(P, policy.num_params)), dtype=torch.float32)


def frames(shape, seed: int) -> torch.Tensor:
    """Random uint8 pixels, as EnvPool's Atari frame stacks."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, shape, dtype=torch.uint8, generator=gen)


def take(vec: torch.Tensor, off: int, shape) -> tuple[torch.Tensor, int]:
    n = int(np.prod(shape))
    return vec[off : off + n].reshape(shape), off + n


def linear(vec, off, fan_in, fan_out) -> tuple[nn.Linear, int]:
    """nn.Linear from the (in, out) row-major weight + bias layout of mlp/cnn fc layers."""
    layer = nn.Linear(fan_in, fan_out)
    w, off = take(vec, off, (fan_in, fan_out))
    b, off = take(vec, off, (fan_out,))
    with torch.no_grad():
        layer.weight.copy_(w.T)
        layer.bias.copy_(b)
    return layer, off


# ---------------------------------------------------------------- reference networks


def ref_mlp(policy, vec: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
    """One individual: ``vec (D,)``, ``obs (B, *obs_shape)`` -> ``(B, out)``."""
    layers, off = [], 0
    for fi, fo in zip(policy.sizes[:-1], policy.sizes[1:], strict=True):
        layer, off = linear(vec, off, fi, fo)
        layers += [layer, nn.Tanh()]
    assert off == policy.num_params
    net = nn.Sequential(*layers[:-1])
    with torch.no_grad():
        return net(obs.reshape(len(obs), -1).float())


def ref_cnn(policy, vec: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
    layers, off = [], 0
    c = policy.obs_shape[0]
    for out_ch, k, s in policy.options["convs"]:
        conv = nn.Conv2d(c, out_ch, k, stride=s)
        w, off = take(vec, off, (out_ch, c, k, k))
        b, off = take(vec, off, (out_ch,))
        with torch.no_grad():
            conv.weight.copy_(w)
            conv.bias.copy_(b)
        layers += [conv, nn.ReLU()]
        c = out_ch
    layers.append(nn.Flatten())
    sizes = (int(np.prod(policy.feature_shape)), *policy.options["hidden"], policy.action.size)
    for fi, fo in zip(sizes[:-1], sizes[1:], strict=True):
        layer, off = linear(vec, off, fi, fo)
        layers += [layer, nn.ReLU()]
    assert off == policy.num_params
    net = nn.Sequential(*layers[:-1])
    with torch.no_grad():
        return net(obs.float() / 255.0)


class RefNeuromod:
    """One individual of the plastic network, written out step by step."""

    def __init__(self, policy, vec: torch.Tensor, B: int) -> None:
        H, n_in, n_out = policy.hidden, policy.in_dim, policy.action.size
        self.inp, off = linear(vec, 0, n_in, H)  # W_in, b
        self.W, off = take(vec, off, (H, H))
        self.alpha, off = take(vec, off, (H, H))
        self.w_m, off = take(vec, off, (H,))
        self.b_m, off = take(vec, off, (1,))
        self.out, off = linear(vec, off, H, n_out)
        assert off == policy.num_params
        self.h = torch.zeros(B, H)
        self.hebb = torch.zeros(B, H, H)

    def reset(self, done: torch.Tensor) -> None:
        self.h[done] = 0.0
        self.hebb[done] = 0.0

    @torch.no_grad()
    def step(self, x: torch.Tensor) -> torch.Tensor:
        outs = []
        for b in range(len(x)):  # one env slot at a time, too: the plainest possible reference
            h_prev, hebb = self.h[b], self.hebb[b]
            h = torch.tanh(self.inp(x[b]) + h_prev @ (self.W + self.alpha * hebb))
            m = torch.tanh(h @ self.w_m + self.b_m)
            self.hebb[b] = torch.clamp(hebb + m * torch.outer(h_prev, h), -1.0, 1.0)
            self.h[b] = h
            outs.append(self.out(h))
        return torch.stack(outs)


# ---------------------------------------------------------------- parameter counts


def test_param_counts_closed_form():
    mlp = policies.make("mlp", (8,), DISCRETE4, hidden=(64, 32))
    assert mlp.num_params == 8 * 64 + 64 + 64 * 32 + 32 + 32 * 4 + 4 == 2788
    default = policies.make("mlp", (8,), DISCRETE4)  # hidden (64, 64)
    assert default.num_params == 8 * 64 + 64 + 64 * 64 + 64 + 64 * 4 + 4

    H = 32
    nm = policies.make("neuromod", (8,), DISCRETE4)
    assert nm.num_params == 8 * H + H + 2 * H * H + H + 1 + H * 4 + 4 == 2501

    for n in (4, 6, 18):
        cnn = policies.make("cnn", ATARI, ActionSpec(discrete=True, n=n))
        conv1 = 16 * 4 * 8 * 8 + 16
        conv2 = 32 * 16 * 4 * 4 + 32
        fc = (32 * 9 * 9) * 32 + 32
        assert cnn.feature_shape == (32, 9, 9)
        assert cnn.num_params == conv1 + conv2 + fc + 32 * n + n == 95312 + 33 * n
    assert 90_000 < policies.make("cnn", ATARI, DISCRETE4).num_params < 110_000  # "~100K"


# ---------------------------------------------------------------- batched == reference


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "action", [DISCRETE4, ActionSpec(False, shape=(2,), low=(-1.0, 0.0), high=(1.0, 2.0))]
)
def test_mlp_matches_reference(device, action):
    pol = policies.make("mlp", (3, 2), action, hidden=(16, 8))
    P, B = 5, 3
    params = random_params(pol, P, seed=1)
    obs = torch.randn(P, B, 3, 2, generator=torch.Generator().manual_seed(2))
    y, state = pol.forward(params.to(device), obs.to(device))
    assert state is None and y.shape == (P, B, action.size) and y.dtype == torch.float32
    ref = torch.stack([ref_mlp(pol, params[p], obs[p]) for p in range(P)])
    torch.testing.assert_close(y.cpu(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_cnn_matches_reference(device):
    pol = policies.make("cnn", ATARI, ActionSpec(discrete=True, n=6))
    P, B = 3, 2
    rng = np.random.default_rng(3)
    centers = np.stack([pol.init_params(rng) for _ in range(P)])
    params = torch.as_tensor(centers + rng.normal(0, 0.02, centers.shape), dtype=torch.float32)
    obs = frames((P, B, *ATARI), seed=4)
    y, _ = pol.forward(params.to(device), obs.to(device))
    assert y.shape == (P, B, 6)
    ref = torch.stack([ref_cnn(pol, params[p], obs[p]) for p in range(P)])
    torch.testing.assert_close(y.cpu(), ref, rtol=1e-4, atol=1e-4)
    a, _ = pol.act(params.to(device), obs.to(device))
    assert a.dtype == torch.int64 and a.shape == (P, B)


@pytest.mark.parametrize("device", DEVICES)
def test_cnn_custom_layers_match_reference(device):
    # Non-default stack on a small non-square image: exercises the layer bookkeeping.
    pol = policies.make(
        "cnn", (2, 30, 26), DISCRETE4, convs=[[4, 5, 2], [6, 3, 1], [5, 3, 2]], hidden=[7, 5]
    )
    P, B = 4, 3
    params = random_params(pol, P, seed=5, scale=0.3)
    obs = frames((P, B, 2, 30, 26), seed=6)
    y, _ = pol.forward(params.to(device), obs.to(device))
    ref = torch.stack([ref_cnn(pol, params[p], obs[p]) for p in range(P)])
    torch.testing.assert_close(y.cpu(), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_neuromod_matches_reference_over_steps_and_resets(device):
    pol = policies.make("neuromod", (5,), DISCRETE4, hidden=6)
    P, B, T = 3, 4, 8
    params = random_params(pol, P, seed=7, scale=0.8)
    gen = torch.Generator().manual_seed(8)
    xs = torch.randn(T, P, B, 5, generator=gen) * 2.0
    # Slot (p, b) ends an episode after step t where done[t, p, b]; step 3 resets several.
    done = torch.rand(T, P, B, generator=gen) < 0.2
    done[3, 0, :] = True
    done[3, 2, 1] = True
    refs = [RefNeuromod(pol, params[p], B) for p in range(P)]
    state = pol.initial_state(P, B, device)
    saw_plastic = False
    for t in range(T):
        y, state = pol.forward(params.to(device), xs[t].to(device), state)
        ref = torch.stack([refs[p].step(xs[t, p]) for p in range(P)])
        torch.testing.assert_close(y.cpu(), ref, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(state["hebb"].cpu(), torch.stack([r.hebb for r in refs]))
        saw_plastic |= bool(state["hebb"].abs().max() > 0.05)
        state = pol.reset_state(state, done[t].to(device))
        for p in range(P):
            refs[p].reset(done[t, p])
        assert (state["hebb"][done[t].to(device)] == 0).all()
        assert (state["h"][done[t].to(device)] == 0).all()
    assert saw_plastic, "traces never grew: the test would not exercise the plastic path"


def test_neuromod_reset_only_touches_done_slots():
    pol = policies.make("neuromod", (3,), DISCRETE4, hidden=4)
    P, B = 2, 3
    state = {"h": torch.randn(P, B, 4), "hebb": torch.full((P, B, 4, 4), float("nan"))}
    done = torch.tensor([[True, False, False], [False, False, True]])
    new = pol.reset_state(state, done)
    assert (new["h"][done] == 0).all() and (new["hebb"][done] == 0).all()  # NaN cleared too
    assert torch.equal(new["h"][~done], state["h"][~done])
    assert torch.isnan(new["hebb"][~done]).all()
    assert torch.isnan(state["hebb"]).all(), "reset_state must not modify its input"
    with pytest.raises(ValueError, match="done must have shape"):
        pol.reset_state(state, torch.zeros(3, 2, dtype=torch.bool))


# ---------------------------------------------------------------- no cross-talk


def _rollout(pol, params, obs_seq):
    """Raw outputs over a short obs sequence (state carried for plastic kinds)."""
    state = pol.initial_state(params.shape[0], obs_seq.shape[2])
    ys = []
    for x in obs_seq:
        y, state = pol.forward(params, x, state)
        ys.append(y)
    return torch.stack(ys)


@pytest.mark.parametrize(
    "kind,obs_shape,options",
    [
        ("mlp", (6,), {}),
        ("neuromod", (6,), {"hidden": 8}),
        ("cnn", (2, 20, 20), {"convs": [[4, 4, 2], [4, 3, 2]], "hidden": [8]}),
    ],
)
def test_population_together_equals_one_at_a_time(kind, obs_shape, options):
    pol = policies.make(kind, obs_shape, DISCRETE4, **options)
    P, B, T = 5, 2, 3
    params = random_params(pol, P, seed=9)
    gen = torch.Generator().manual_seed(10)
    if kind == "cnn":
        obs = torch.randint(0, 256, (T, P, B, *obs_shape), dtype=torch.uint8, generator=gen)
    else:
        obs = torch.randn(T, P, B, *obs_shape, generator=gen)
    together = _rollout(pol, params, obs)
    alone = torch.cat([_rollout(pol, params[p : p + 1], obs[:, p : p + 1]) for p in range(P)], 1)
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- action heads


@pytest.mark.parametrize("kind", ["mlp", "neuromod"])
def test_discrete_action_is_argmax_of_logits(kind):
    pol = policies.make(kind, (4,), ActionSpec(discrete=True, n=5))
    params = random_params(pol, 6, seed=11)
    obs = torch.randn(6, 7, 4, generator=torch.Generator().manual_seed(12))
    y, _ = pol.forward(params, obs)
    a, _ = pol.act(params, obs)
    assert a.dtype == torch.int64 and a.shape == (6, 7)
    assert torch.equal(a, y.argmax(-1))
    assert len(torch.unique(a)) > 1  # random nets do pick different actions


def test_discrete_argmax_picks_the_largest_output_bias():
    pol = policies.make("mlp", (3,), ActionSpec(discrete=True, n=4), hidden=(2,))
    params = torch.zeros(4, pol.num_params)
    for p in range(4):
        params[p, -4 + p] = 1.0  # output bias of action p: individual p always picks p
    a, _ = pol.act(params, torch.randn(4, 3, 3))
    assert a.tolist() == [[p] * 3 for p in range(4)]


def test_box_actions_stay_in_bounds():
    low, high = (-2.0, 0.0, 0.5), (2.0, 1.0, 0.75)
    action = ActionSpec(discrete=False, shape=(3,), low=low, high=high)
    pol = policies.make("mlp", (5,), action, hidden=(8,))
    params = random_params(pol, 8, seed=13, scale=5.0)  # large weights: saturating outputs
    a, _ = pol.act(params, torch.randn(8, 16, 5, generator=torch.Generator().manual_seed(14)) * 10)
    assert a.shape == (8, 16, 3) and a.dtype == torch.float32
    lo, hi = torch.tensor(low), torch.tensor(high)
    assert ((a >= lo) & (a <= hi)).all()
    assert (a.amin((0, 1)) < lo + 0.05 * (hi - lo)).all()  # the whole range is reachable
    assert (a.amax((0, 1)) > hi - 0.05 * (hi - lo)).all()
    # Zero params: the middle of the box.
    mid, _ = pol.act(torch.zeros(1, pol.num_params), torch.randn(1, 2, 5))
    torch.testing.assert_close(mid, ((lo + hi) / 2).expand(1, 2, 3))


def test_box_actions_keep_shape_and_pass_infinite_bounds_through():
    inf = float("inf")
    action = ActionSpec(discrete=False, shape=(2, 2), low=(-1.0, -inf, 0.0, -inf),
                        high=(1.0, inf, 3.0, 5.0))
    pol = policies.make("mlp", (3,), action, hidden=(4,))
    params = random_params(pol, 2, seed=15, scale=2.0)
    obs = torch.randn(2, 3, 3)
    a, _ = pol.act(params, obs)
    y, _ = pol.forward(params, obs)
    assert a.shape == (2, 3, 2, 2) and torch.isfinite(a).all()
    flat = a.reshape(2, 3, 4)
    torch.testing.assert_close(flat[..., 1], y[..., 1])  # unbounded: raw output
    torch.testing.assert_close(flat[..., 3], y[..., 3])  # half-bounded: raw output
    assert ((flat[..., 0].abs() <= 1) & (flat[..., 2] >= 0) & (flat[..., 2] <= 3)).all()


def test_box_from_gymnasium_space():
    gym = pytest.importorskip("gymnasium")
    space = gym.spaces.Box(
        low=np.array([-1.0, -2.0], dtype=np.float32), high=np.array([1.0, 2.0], dtype=np.float32)
    )
    pol = policies.make("neuromod", (4,), ActionSpec.from_space(space), hidden=4)
    a, _ = pol.act(random_params(pol, 3, seed=16, scale=3.0), torch.randn(3, 5, 4))
    assert all(space.contains(x) for x in a.reshape(-1, 2).numpy())


# ---------------------------------------------------------------- CNN specifics


def test_cnn_rejects_vector_observations():
    msg = r"policy 'cnn' needs image observations \(C, H, W\); env gives shape \(8,\)"
    with pytest.raises(ValueError, match=msg):
        policies.make("cnn", (8,), DISCRETE4)
    with pytest.raises(ValueError, match="too small"):
        policies.make("cnn", (210, 160, 3), DISCRETE4)  # channels last


def test_cnn_init_is_random_scaled_and_frame_dependent():
    pol = policies.make("cnn", ATARI, ActionSpec(discrete=True, n=6))
    a, b = pol.init_params(np.random.default_rng(0)), pol.init_params(np.random.default_rng(0))
    assert a.shape == (pol.num_params,) and a.dtype == np.float64 and np.array_equal(a, b)
    assert not np.array_equal(a, pol.init_params(np.random.default_rng(1)))
    params = torch.as_tensor(a, dtype=torch.float32)[None]
    y, _ = pol.forward(params, frames((1, 8, *ATARI), seed=0))
    assert torch.isfinite(y).all()
    assert y.std(dim=1).min() > 1e-3, "different frames must give different logits"
    assert 1e-2 < y.abs().mean() < 10.0  # neither vanishing nor exploding at init


def test_cnn_reduced_precision_close_to_float32():
    pol32 = policies.make("cnn", (4, 36, 36), DISCRETE4, hidden=[16])
    pol16 = policies.make("cnn", (4, 36, 36), DISCRETE4, hidden=[16], dtype="bfloat16")
    params = torch.as_tensor(pol32.init_params(np.random.default_rng(2)), dtype=torch.float32)
    params = params[None].repeat(2, 1)
    obs = torch.randint(0, 256, (2, 3, 4, 36, 36), dtype=torch.uint8)
    y32, _ = pol32.forward(params, obs)
    y16, _ = pol16.forward(params, obs)
    assert y16.dtype == torch.float32
    torch.testing.assert_close(y16, y32, rtol=0.05, atol=0.05)
    with pytest.raises(ValueError, match="dtype"):
        policies.make("cnn", ATARI, DISCRETE4, dtype="int8")


# ---------------------------------------------------------------- specs, registry, errors


@pytest.mark.parametrize(
    "kind,obs_shape,options",
    [
        ("mlp", (8,), {"hidden": (64, 32)}),
        ("cnn", ATARI, {}),
        ("cnn", (2, 30, 30), {"convs": [[4, 5, 2]], "hidden": [6], "dtype": "bfloat16"}),
        ("neuromod", (3, 2), {"hidden": 5}),
    ],
)
def test_from_spec_rebuilds_an_equal_policy(kind, obs_shape, options):
    action = ActionSpec(discrete=False, shape=(2,), low=(-1.0, 0.0), high=(1.0, 4.0))
    pol = policies.make(kind, obs_shape, action, **options)
    spec = json.loads(json.dumps(pol.spec()))  # must survive JSON
    again = policies.from_spec(spec)
    assert type(again) is type(pol) and again.spec() == pol.spec()
    assert again.num_params == pol.num_params and again.action == pol.action
    params = random_params(pol, 2, seed=17, scale=0.1)
    if kind == "cnn":
        obs = torch.randint(0, 256, (2, 2, *obs_shape), dtype=torch.uint8)
    else:
        obs = torch.randn(2, 2, *obs_shape)
    state = pol.initial_state(2, 2)
    assert torch.equal(pol.act(params, obs, state)[0], again.act(params, obs, state)[0])


def test_registry_and_input_errors():
    assert {"mlp", "cnn", "neuromod"} <= set(policies.POLICIES)
    with pytest.raises(ValueError, match="unknown policy 'rnn'"):
        policies.make("rnn", (4,), DISCRETE4)
    pol = policies.make("mlp", (4,), DISCRETE4)
    with pytest.raises(ValueError, match=r"needs params of shape \(P, "):
        pol.act(torch.zeros(2, pol.num_params + 1), torch.zeros(2, 1, 4))
    with pytest.raises(ValueError, match="needs obs of shape"):
        pol.act(torch.zeros(2, pol.num_params), torch.zeros(2, 1, 5))
    with pytest.raises(ValueError, match="2 individuals but obs hold 3"):
        pol.act(torch.zeros(2, pol.num_params), torch.zeros(3, 1, 4))
    with pytest.raises(ValueError, match="hidden"):
        policies.make("neuromod", (4,), DISCRETE4, hidden=0)
