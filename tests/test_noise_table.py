"""openai-es-nt: the noise table, equivalence with plain openai-es, device path, state.

The registry-driven tests in test_strategies.py (contract, convergence, NaN/inf, state round
trips, bad input) run for "openai-es-nt" too; this file checks what is particular to it.
Everything runs on the CPU with small tables; ``DEVICES`` adds CUDA where there is one.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import islands.strategies.noise_table as nt
from envs.torch_evaluator import TorchEvaluator
from islands.persistence import plainstate
from islands.strategies import make
from islands.strategies.noise_table import NoiseTable, reconstruct

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
ACCESS = ["loop", "gather"]
DIM = 10


def sphere(X):
    """Maximize -||x - 1||^2 (as in test_strategies.py)."""
    return -np.sum((np.asarray(X) - 1.0) ** 2, axis=-1)


def nt_es(dim=DIM, **kw):
    kw.setdefault("table_size", 20_000)
    return make("openai-es-nt", dim, **kw)


def run(s, f, generations):
    for _ in range(generations):
        s.tell(f(s.ask()))
    return s


class TableNormals:
    """Stands in for plain openai-es's numpy Generator: its ``standard_normal(out=...)`` (the
    only draw in OpenAIES._ask) writes the windows the noise-table strategy just asked, so
    the unmodified plain code runs on the same perturbations."""

    def __init__(self, strategy):
        self.s = strategy

    def standard_normal(self, out):
        offsets = self.s.last_offsets[0][: len(out)]
        out[:] = self.s.table.gather(offsets, self.s.dim, method="loop").double().cpu().numpy()
        return out


# ---- the table -----------------------------------------------------------------------------
def test_table_is_a_function_of_seed_and_size():
    a = NoiseTable(7, 5000)
    expected = torch.randn(5000, generator=torch.Generator().manual_seed(7))
    assert torch.equal(a.data, expected) and a.data.dtype == torch.float32
    assert torch.equal(NoiseTable(7, 5000).data, a.data)
    assert a.fingerprint == NoiseTable(7, 5000).fingerprint
    assert not torch.equal(NoiseTable(8, 5000).data, a.data)
    assert NoiseTable(8, 5000).fingerprint != a.fingerprint
    wide = NoiseTable(7, 5000, dtype="float64")  # the same numbers, stored wider
    assert wide.data.dtype == torch.float64 and torch.equal(wide.data.float(), a.data)
    # one table per (seed, size, device, dtype) and process while someone holds it
    s1, s2 = nt_es(table_seed=7, table_size=5000), nt_es(seed=3, table_seed=7, table_size=5000)
    assert s1.table is s2.table and torch.equal(s1.table.data, a.data)
    # the zero-copy view of all windows: row o is the window at offset o
    W = a.windows(100)
    assert W.shape == (4901, 100) and W.data_ptr() == a.data.data_ptr()
    assert torch.equal(W[4900], a.data[4900:]) and torch.equal(W[17], a.window(17, 100))


@pytest.mark.parametrize("device", DEVICES)
def test_weighted_sum_and_gather_match_dense_maths(device):
    table = NoiseTable(1, 30_000, device)
    rng = np.random.default_rng(0)
    dim = 5_000
    off = table.sample_offsets(rng, 40, dim)
    w = rng.standard_normal(40)
    E = np.stack([table.data[o : o + dim].double().cpu().numpy() for o in off])
    for method in ACCESS:
        assert torch.equal(table.gather(off, dim, method=method).cpu(),
                           torch.as_tensor(E, dtype=torch.float32))
        g = table.weighted_sum(off, w, dim, method)
        assert g.dtype == torch.float64 and g.device.type == device
        np.testing.assert_allclose(g.cpu().numpy(), w @ E, rtol=0, atol=1e-5)
    # small gather chunks (several rounds) give the same sum
    old, nt.GATHER_BYTES = nt.GATHER_BYTES, 3 * dim * 4
    try:
        g = table.weighted_sum(off, w, dim, "gather").cpu().numpy()
    finally:
        nt.GATHER_BYTES = old
    np.testing.assert_allclose(g, w @ E, rtol=0, atol=1e-5)


@pytest.mark.parametrize("method", ACCESS)
def test_update_never_materializes_the_noise_matrix(method, monkeypatch):
    # dim 100K, 32 pairs: the (32, 100K) noise matrix would be one 12.8 MB (float32) or
    # 25.6 MB (float64) allocation. The largest single allocation of the whole tell() must
    # stay dim-sized ("loop": a float64 gradient of 0.8 MB) or within the gather chunk.
    dim, popsize = 100_000, 64
    monkeypatch.setattr(nt, "GATHER_BYTES", 8 * dim * 4)  # 8-row chunks (3.2 MB)
    s = make("openai-es-nt", dim, popsize=popsize, table_size=2**20, noise_access=method)
    s.ask_offsets()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        s.tell(np.arange(popsize, dtype=float))
    largest = max(e.cpu_memory_usage for e in prof.events())
    assert 0 < largest <= max(8 * dim, nt.GATHER_BYTES), largest
    assert s.t == 1


# ---- equivalence with plain openai-es ------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("method", ACCESS)
def test_same_update_as_plain_openai_es(dtype, method):
    dim, popsize = 200, 32
    s = nt_es(dim, popsize=popsize, seed=3, dtype=dtype, noise_access=method)
    p = make("openai-es", dim, popsize=popsize, seed=0)
    p._rng = TableNormals(s)
    worst = 0.0
    for g in range(40):
        Xs, Xp = s.ask(), p.ask()
        if g == 0 and dtype == "float64":
            assert np.array_equal(Xs, Xp)  # the same arithmetic on the same eps
        # later generations: theta differs by rounding; float32 genomes by float32 rounding
        np.testing.assert_allclose(Xs, Xp, rtol=0, atol=3e-7 * (1 + np.abs(Xp).max()))
        f = sphere(Xp)  # one fitness vector for both, so the ranks are identical
        s.tell(f)
        p.tell(f)
        if g == 15:  # a better migrant: both re-center and restart Adam
            for x in (s, p):
                x.inject(np.full(dim, 0.5), [x.best[1] + 1.0])
        if g == 25:  # ... and one arriving mid-generation drops that generation's gradient
            Xs, Xp = s.ask(), p.ask()
            for x in (s, p):
                x.inject(np.full(dim, 0.7), [x.best[1] + 1.0])
            s.tell(sphere(Xp))
            p.tell(sphere(Xp))
        worst = max(worst, np.abs(s.center - p.center).max() / np.abs(p.center).max())
    assert s.t == p.t == 14 and s.generation == p.generation == 41
    # Measured: float64 tables ~1e-15 either way; float32 tables ~1e-7 (partial sums of the
    # gradient in float32), the plain one recovering eps from its float64 population.
    assert worst < (1e-12 if dtype == "float64" else 2e-6), worst
    np.testing.assert_allclose(s.m.cpu().numpy(), p.m, rtol=0, atol=1e-6 * np.abs(p.m).max())
    np.testing.assert_allclose(s.v.cpu().numpy(), p.v, rtol=1e-5)


@pytest.mark.parametrize("method", ACCESS)
def test_sphere_convergence_as_plain_openai_es(method):
    # test_strategies.py's bound for openai-es; measured over seeds 0-19 (float32 genomes):
    # center >= -1.04e-5 and best-so-far >= -4.8e-4 for both methods, as the plain strategy
    s = run(nt_es(seed=0, noise_access=method), sphere, 300)
    assert sphere(s.center) > -1e-4 and s.best[1] > -4e-3


# ---- genomes as (offset, sign) ---------------------------------------------------------------
def test_describe_and_reconstruct_give_the_asked_genomes():
    s = run(nt_es(popsize=16, seed=4, table_seed=11, table_size=5000), sphere, 3)
    X = s.ask()
    offsets, signs = s.last_offsets
    h = s.popsize // 2
    assert np.array_equal(offsets[:h], offsets[h:]) and list(signs) == [1] * h + [-1] * h
    assert [s.describe(i) for i in range(s.popsize)] == list(zip(offsets, signs, strict=True))
    center = s.asked_center
    assert np.array_equal(center, s.center)
    # bit-identical, from the strategy and from nothing but the table's (seed, size)
    assert np.array_equal(s.reconstruct(offsets, signs), X)
    assert np.array_equal(reconstruct(offsets, signs, center, s.sigma, 11, 5000), X)
    assert np.array_equal(X, X.astype(np.float32))  # float32 genomes by default
    # after the update the description still refers to the center the rows were asked around
    f = sphere(X)
    s.tell(f)
    assert not np.array_equal(s.center, center) and np.array_equal(s.asked_center, center)
    i = int(np.argmax(f))
    off, sign = s.describe(i)
    assert np.array_equal(s.reconstruct([off], [sign])[0], X[i])
    assert s.best[1] == f.max() and np.array_equal(s.best[0], X[i])
    # a receiver with another seed but the same table rebuilds the emigrant
    other = nt_es(seed=99, table_seed=11, table_size=5000)
    assert np.array_equal(other.reconstruct([off], [sign], center), X[[i]])
    with pytest.raises(ValueError, match=r"offsets must be integers in \[0, 4990\]"):
        s.reconstruct([4991], [1])
    with pytest.raises(ValueError, match="signs must be 1 values of"):
        s.reconstruct([0], [0])
    with pytest.raises(RuntimeError, match="call ask"):
        nt_es().describe(0)


def test_offsets_cover_the_table_and_stay_inside():
    # smallest table allowed (dim + popsize): 11 windows, offsets 0..10, all reachable
    s = make("openai-es-nt", DIM, popsize=10, seed=0, table_size=DIM + 10)
    seen = np.concatenate([s.ask_offsets()[0] for _ in range(200)])
    assert seen.min() == 0 and seen.max() == 10 and len(np.unique(seen)) == 11
    s = run(nt_es(100, popsize=64, seed=1, table_size=1000), sphere, 20)
    offsets, _ = s.last_offsets
    assert offsets.min() >= 0 and offsets.max() + 100 <= 1000


# ---- device path -----------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_ask_tensor_feeds_the_torch_evaluator(device):
    ev = TorchEvaluator("CartPole-v1", policy="mlp", episodes=2, max_episode_steps=100,
                        device=device)
    a, b = (make("openai-es-nt", ev.num_params, popsize=16, seed=5, device=device,
                 table_size=50_000) for _ in range(2))
    for gen in range(3):
        P = a.ask_tensor()  # on the device, float32: what the evaluator runs
        assert P.device.type == device and P.dtype == torch.float32
        assert P.shape == (16, ev.num_params)
        X = b.ask()  # the numpy contract: the same genomes
        assert np.array_equal(P.double().cpu().numpy(), X)
        ra, rb = ev.evaluate(P, seed=gen), ev.evaluate(X, seed=gen)
        assert np.array_equal(ra.fitness, rb.fitness)
        a.tell(torch.as_tensor(ra.fitness, device=device))  # torch fitness is accepted
        b.tell(rb.fitness)
        assert np.array_equal(a.center, b.center)
    assert a.best[1] == b.best[1] and np.array_equal(a.best[0], b.best[0])
    ev.close()


def test_torch_fitness_with_nan_and_inf():
    s = nt_es(seed=2)
    gen = torch.Generator().manual_seed(0)
    for g in range(200):
        P = s.ask_tensor()
        f = -((P.double() - 1.0) ** 2).sum(1)
        f[torch.randperm(s.popsize, generator=gen)[:3]] = torch.tensor(
            [float("nan"), float("inf"), float("-inf")], dtype=torch.float64)
        if g == 5:
            f[:] = float("nan")
        s.tell(f)
        assert np.isfinite(s.center).all() and np.isfinite(s.best[1])
    assert sphere(s.center) > -1e-2 and np.isfinite(s.best[0]).all()
    s.ask()
    with pytest.raises(ValueError, match=r"fitness must have shape \(64,\)"):
        s.tell(torch.zeros(63))


# ---- state -----------------------------------------------------------------------------------
def test_state_holds_no_table_and_continues_bit_identically(tmp_path):
    a = run(nt_es(50, seed=5, table_size=30_000), sphere, 4)
    a.inject(np.full((2, 50), 0.95), [a.best[1] + 1.0, a.best[1]])  # re-centers
    sd = a.state_dict()
    arrays = [v for v in sd["impl"].values() if isinstance(v, np.ndarray)]
    assert max(x.size for x in arrays) == 50  # theta, m, v, ...: never the 30K table
    plainstate.save(tmp_path / "s.npz", sd)
    b = nt_es(50, seed=123, sigma=0.7, table_seed=9, table_size=40_000)  # the state decides
    b.load_state_dict(plainstate.load(tmp_path / "s.npz"))
    assert b.table.seed == a.table.seed and b.table.size == 30_000
    followers = [b]
    for g in range(6):
        Xs = [s.ask() for s in (a, *followers)]
        assert all(np.array_equal(Xs[0], X) for X in Xs[1:]), g
        if g == 2:  # a migrant arrives while a generation is outstanding; saved right then
            for s in (a, *followers):
                s.inject(np.ones(50), [0.0])
            c = nt_es(50)
            c.load_state_dict(plainstate.from_bytes(plainstate.to_bytes(a.state_dict())))
            followers.append(c)
        f = sphere(Xs[0])
        for s in (a, *followers):
            s.tell(f)
    for s in followers:
        assert np.array_equal(s.center, a.center) and s.best[1] == a.best[1]
        assert np.array_equal(s.best[0], a.best[0])
        assert s.t == a.t and s.generation == a.generation
        assert torch.equal(s.m, a.m) and torch.equal(s.v, a.v)
        assert s.describe(5) == a.describe(5)
        assert np.array_equal(s.reconstruct(*a.last_offsets), a.reconstruct(*a.last_offsets))


def test_state_refuses_a_table_that_draws_other_numbers():
    sd = run(nt_es(seed=1), sphere, 2).state_dict()
    sd["impl"]["table_fingerprint"] = "0123456789abcdef"
    with pytest.raises(ValueError, match="noise table .* differs from the saved one"):
        nt_es().load_state_dict(sd)


def test_bad_options():
    with pytest.raises(ValueError, match=r"table_size must be an integer >= dim \+ popsize = 74"):
        make("openai-es-nt", DIM, table_size=73)
    with pytest.raises(ValueError, match="dtype must be one of float32, float64"):
        nt_es(dtype="bfloat16")
    with pytest.raises(ValueError, match="noise_access must be one of auto, loop, gather"):
        nt_es(noise_access="fast")
    with pytest.raises(ValueError, match="device must be a torch device"):
        nt_es(device="gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device 'cuda' is not available"):
            nt_es(device="cuda")
    with pytest.raises(ValueError, match="unknown option 'table'"):
        make("openai-es-nt", DIM, table=5)
    with pytest.raises(ValueError, match="even popsize"):
        nt_es(popsize=7)


def test_a_generation_is_kept_as_its_offsets():
    # between ask and tell the base class keeps what _ask returned: popsize/2 int64 offsets,
    # not the (popsize, dim) population; ask_offsets starts the same generation unbuilt
    a, b = nt_es(50, popsize=16, seed=6), nt_es(50, popsize=16, seed=6)
    X = a.ask()
    off, signs = b.ask_offsets()
    asked = a.state_dict()["asked"]
    assert asked.dtype == np.int64 and asked.shape == (8,) and np.array_equal(asked, off[:8])
    assert np.array_equal(b.reconstruct(off, signs), X)
    c = nt_es(50, popsize=16, seed=1)
    c.load_state_dict(plainstate.from_bytes(plainstate.to_bytes(a.state_dict())))
    for s in (a, b, c):
        s.tell(sphere(X))
    assert np.array_equal(a.center, b.center) and np.array_equal(a.center, c.center)
    assert np.array_equal(a.best[0], c.best[0]) and a.best[1] == c.best[1] == sphere(X).max()


# ---- ars-nt: ars's steps on the table's noise ------------------------------------------------
@pytest.mark.parametrize("method", ACCESS)
def test_ars_nt_takes_plain_ars_steps_on_the_same_noise(method):
    dim, popsize = 200, 32
    s = make("ars-nt", dim, popsize=popsize, seed=3, dtype="float64", noise_access=method,
             table_size=20_000, top=6)
    p = make("ars", dim, popsize=popsize, seed=0, top=6)
    p._rng = TableNormals(s)
    worst = 0.0
    for g in range(30):
        Xs, Xp = s.ask(), p.ask()
        np.testing.assert_allclose(Xs, Xp, rtol=0, atol=1e-12 * (1 + np.abs(Xp).max()))
        f = sphere(Xp)
        s.tell(f)
        p.tell(f)
        if g == 12:  # a better migrant: both re-center
            for x in (s, p):
                x.inject(np.full(dim, 0.5), [x.best[1] + 1.0])
        worst = max(worst, np.abs(s.center - p.center).max() / np.abs(p.center).max())
    assert s.generation == p.generation == 30 and np.abs(p.center - 0.5).max() > 0.01
    assert worst < 1e-12, worst  # float64 tables: the same steps up to rounding


def test_ars_nt_state_continues_bit_identically(tmp_path):
    a = run(make("ars-nt", 50, seed=5, table_size=30_000), sphere, 4)
    plainstate.save(tmp_path / "s.npz", a.state_dict())
    b = make("ars-nt", 50, seed=9, table_size=30_000, table_seed=4)  # the state decides
    b.load_state_dict(plainstate.load(tmp_path / "s.npz"))
    for _ in range(5):
        Xa, Xb = a.ask(), b.ask()
        assert np.array_equal(Xa, Xb)
        a.tell(sphere(Xa))
        b.tell(sphere(Xa))
    assert np.array_equal(a.center, b.center) and a.best[1] == b.best[1]
    assert isinstance(a.ask_tensor(), torch.Tensor)  # the population on its device
