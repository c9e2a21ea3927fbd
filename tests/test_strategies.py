"""The strategy library: contract, convergence, state round trips, migrants, bad input.

Registry-driven: every test parametrized over ``STRATEGIES`` runs for each strategy. All
runs are seeded; objectives are cheap numpy functions so the file stays fast on 2 cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from islands.persistence import plainstate
from islands.strategies import STRATEGIES, make

NAMES = sorted(STRATEGIES)
DIM = 10
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sphere(X):
    """Maximize -||x - 1||^2: optimum 1 (away from the default start x0 = 0), value 0."""
    return -np.sum((np.asarray(X) - 1.0) ** 2, axis=-1)


def rastrigin(X):
    """Negated Rastrigin: global optimum at 0 (value 0), local optima near every integer."""
    X = np.asarray(X)
    return -(10 * X.shape[-1] + np.sum(X**2 - 10 * np.cos(2 * np.pi * X), axis=-1))


def run(s, f, generations):
    for _ in range(generations):
        X = s.ask()
        s.tell(f(X))
    return s


def plain(tree) -> bool:
    if tree is None or type(tree) in (bool, int, float, str):
        return True
    if isinstance(tree, (np.ndarray, np.generic)):
        return not np.asarray(tree).dtype.hasobject
    if type(tree) is list:
        return all(plain(x) for x in tree)
    if type(tree) is dict:
        return all(type(k) is str and plain(v) for k, v in tree.items())
    return False


# ---- contract ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_contract(name):
    s = make(name, DIM, seed=1)
    assert s.name == name and s.dim == DIM and s.popsize >= 2
    assert s.best[0] is None and s.best[1] == -np.inf
    with pytest.raises(RuntimeError, match="before ask"):
        s.tell(np.zeros(s.popsize))
    assert s.center.shape == (DIM,) and np.array_equal(s.center, np.zeros(DIM))  # x0 default
    X = s.ask()
    assert X.shape == (s.popsize, DIM) and X.dtype == np.float64 and np.isfinite(X).all()
    f = sphere(X)
    X[:] = 123.0  # ask() hands out a copy: the caller cannot corrupt the strategy
    s.tell(f)
    x, fx = s.best
    assert fx == f.max() and x.shape == (DIM,) and sphere(x) == fx
    assert s.generation == 1 and s.center.shape == (DIM,)
    assert s.stop_reason() is None  # one generation on a sphere: nothing converged yet
    assert plain(s.state_dict())
    x0 = np.linspace(-1, 1, DIM)
    assert np.array_equal(make(name, DIM, x0=x0).center, x0)


@pytest.mark.parametrize("name", ["cmaes", "sep-cmaes"])
def test_pycma_is_silent_and_writes_no_files(name, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    s = run(make(name, DIM, seed=0), sphere, 30)
    s.inject(np.ones(DIM), [0.0])
    run(s, sphere, 2)
    assert os.listdir(tmp_path) == []  # no outcmaes*.dat logger files
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("name", ["cmaes", "sep-cmaes"])
def test_pycma_reads_no_signals_file(name, tmp_path, monkeypatch):
    # pycma's stop() would read options from ./cma_signals.in (here: stop at once)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cma_signals.in").write_text("{'tolx': 1e9}")
    s = run(make(name, DIM, seed=0), sphere, 3)
    assert s.stop_reason() is None and s.es.opts["tolx"] == 1e-11


def test_make_rejects_unknown_names_and_options():
    with pytest.raises(ValueError, match="unknown strategy 'cma'.*cmaes.*ga.*openai-es"):
        make("cma", DIM)
    for name in NAMES:
        with pytest.raises(ValueError, match="unknown option 'bogus'"):
            make(name, DIM, bogus=1)
    with pytest.raises(ValueError, match="option 'randn'"):
        make("cmaes", DIM, randn=np.random.standard_normal)
    with pytest.raises(ValueError, match="option 'CMA_diagonal'.*sep-cmaes"):
        make("cmaes", DIM, CMA_diagonal=True)
    with pytest.raises(ValueError, match="even popsize"):
        make("openai-es", DIM, popsize=7)
    with pytest.raises(ValueError, match="x0 must be 10 finite numbers"):
        make("ga", DIM, x0=np.zeros(3))
    s = make("cmaes", DIM, CMA_active=False)  # pycma options pass through
    assert s.es.opts["CMA_active"] is False
    assert make("ga", DIM, popsize=10, truncation=3).truncation == 3


@pytest.mark.parametrize("name", NAMES)
def test_bad_input(name):
    s = make(name, DIM, seed=0)
    X = s.ask()
    with pytest.raises(ValueError, match=rf"fitness must have shape \({s.popsize},\)"):
        s.tell(np.zeros(s.popsize + 1))
    with pytest.raises(ValueError, match=r"migrants must have shape \(k, 10\)"):
        s.inject(np.zeros((2, DIM + 1)), [0.0, 0.0])
    with pytest.raises(ValueError, match="migrants must have shape"):
        s.inject(np.zeros((2, DIM)), [0.0])  # one fitness for two migrants
    s.tell(sphere(X))  # the strategy is still usable after refusing bad input
    assert s.generation == 1


# ---- convergence ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_sphere_convergence(name):
    s = run(make(name, DIM, seed=0), sphere, 300)  # start x0 = 0, fitness -10
    best, center = s.best[1], sphere(s.center)
    if name in ("cmaes", "sep-cmaes"):
        # step-size adaptation converges linearly: measured -1e-8 after ~110-150 generations
        assert best > -1e-8 and center > -1e-8
    else:
        # Fixed sigma = 0.02 puts a floor under the *samples*: ||x - center||^2 averages
        # sigma^2 * n = 4e-3, so even a perfect center gives sample fitness ~ -4e-3 and the
        # best-so-far over 300 generations sits near the lower tail of sigma^2 chi^2_10.
        # Measured over seeds 0-19: best >= -8e-4 for both, the openai-es center (a mean of
        # mirrored steps) >= -1e-5, the GA elite == best. Bounds keep a 5-10x margin.
        assert best > -4e-3
        assert center > (-1e-4 if name == "openai-es" else -4e-3)


def test_cmaes_rastrigin_exploits_global_structure():
    # Rastrigin has a local optimum near every integer point; x0 = 3 starts three basins away
    # from the global one in every coordinate (fitness -90). Measured with popsize 50 and
    # sigma0 = 2 over seeds 0-19 (ours and raw pycma alike): CMA-ES stops after 130-200
    # generations in a local optimum with 1-6 coordinates at +-1 and the rest at 0 (fitness
    # -1 to -6), and lands in the global basin (all |x_i| < 0.5) in only 0-1 of 20 runs;
    # success needs larger populations (about half of the runs at popsize 200). So this
    # asserts what holds for every seed: every coordinate ends in the global basin or its
    # neighbour, at least half of them in the global basin.
    for seed in (0, 5):
        s = make("cmaes", DIM, popsize=50, sigma=2.0, seed=seed, x0=np.full(DIM, 3.0))
        for _ in range(400):
            s.tell(rastrigin(s.ask()))
            if s.sigma < 1e-2:
                break
        assert np.all(np.abs(s.center) < 1.5), (seed, s.center)
        assert np.sum(np.abs(s.center) < 0.5) >= DIM // 2, (seed, s.center)
        assert rastrigin(s.center) > -10
    # the start is a genuine trap: a small-step search stays in the basin of x0
    s = run(make("cmaes", DIM, sigma=0.1, seed=0, x0=np.full(DIM, 3.0)), rastrigin, 100)
    assert np.all(np.abs(s.center - 3.0) < 0.5)


# ---- state ---------------------------------------------------------------------------------
def _migrants(k, shift):
    return np.full((k, DIM), 1.0) + shift * np.arange(k)[:, None], -(shift ** 2) * np.arange(k)


@pytest.mark.parametrize("name", NAMES)
def test_state_round_trip_bit_identical(name, tmp_path):
    a = run(make(name, DIM, seed=5), sphere, 4)
    a.inject(*_migrants(2, 0.3))  # state taken after inject, before the migrants are used
    sd = a.state_dict()
    path = tmp_path / "state.npz"
    plainstate.save(path, sd)
    b = make(name, DIM, seed=123, sigma=0.7)  # different seed and sigma: the state decides
    b.load_state_dict(sd)
    c = make(name, DIM, seed=77)
    c.load_state_dict(plainstate.load(path))
    for g in range(8):
        Xs = [s.ask() for s in (a, b, c)]
        assert np.array_equal(Xs[0], Xs[1]) and np.array_equal(Xs[0], Xs[2]), g
        f = sphere(Xs[0])
        for s in (a, b, c):
            s.tell(f)
            if g == 3:
                s.inject(*_migrants(3, 0.1))
    for s in (b, c):
        assert np.array_equal(s.center, a.center) and s.best[1] == a.best[1]
        assert s.popsize == a.popsize and s.generation == a.generation


@pytest.mark.parametrize("name", ["cmaes", "sep-cmaes"])
def test_pycma_bounds_keep_samples_and_center_in_the_box_across_a_state_round_trip(name):
    # sphere's optimum (1) lies outside the box, so the bounds bind
    a = run(make(name, DIM, seed=3, sigma=0.5, bounds=[-0.3, 0.3]), sphere, 6)
    b = make(name, DIM, seed=4, sigma=0.5, bounds=[-0.3, 0.3])
    b.load_state_dict(plainstate.from_bytes(plainstate.to_bytes(a.state_dict())))
    for _ in range(4):
        Xa, Xb = a.ask(), b.ask()
        assert np.array_equal(Xa, Xb) and np.abs(Xa).max() <= 0.3
        a.tell(sphere(Xa))
        b.tell(sphere(Xb))
    assert np.abs(a.center).max() <= 0.3 and a.center.max() > 0.25  # pressed to the bound
    assert np.array_equal(a.center, b.center)
    unbounded = make(name, DIM, bounds=None)  # how --strategy-options turns a table's off
    assert unbounded.ask().shape == (unbounded.popsize, DIM)


@pytest.mark.parametrize("name", ["cmaes", "sep-cmaes"])
def test_pycma_selective_mirrors_survive_a_state_round_trip(name):
    # pycma keeps the mirrored samples' indices as a range: a state capture that refused it
    # killed every island of a run with --strategy-options '{"CMA_mirrors": true}'
    a = run(make(name, DIM, seed=5, popsize=12, CMA_mirrors=True), sphere, 4)
    assert isinstance(a.es._indices_of_selective_mirrors, range)
    b = make(name, DIM, seed=6, popsize=12, CMA_mirrors=True)
    b.load_state_dict(plainstate.from_bytes(plainstate.to_bytes(a.state_dict())))
    assert b.es._indices_of_selective_mirrors == a.es._indices_of_selective_mirrors
    for _ in range(3):
        Xa, Xb = a.ask(), b.ask()
        assert np.array_equal(Xa, Xb)
        a.tell(sphere(Xa))
        b.tell(sphere(Xb))


@pytest.mark.parametrize("name", NAMES)
def test_state_round_trip_mid_generation(name):
    # saved between ask and tell, with a migrant arriving while the generation is outstanding
    a = run(make(name, DIM, seed=9), sphere, 3)
    X = a.ask()
    a.inject(np.ones(DIM), [0.0])
    b = make(name, DIM, seed=1)
    b.load_state_dict(plainstate.from_bytes(plainstate.to_bytes(a.state_dict())))
    for s in (a, b):
        s.tell(sphere(X))
    for _ in range(3):
        Xa, Xb = a.ask(), b.ask()
        assert np.array_equal(Xa, Xb)
        a.tell(sphere(Xa))
        b.tell(sphere(Xb))


def test_cmaes_state_refuses_other_pycma_versions():
    sd = make("cmaes", DIM).state_dict()
    sd["impl"]["pycma"] = "0.0.1"
    with pytest.raises(ValueError, match="saved with pycma 0.0.1"):
        make("cmaes", DIM).load_state_dict(sd)
    with pytest.raises(ValueError, match="state is for cmaes with dim 10"):
        make("sep-cmaes", DIM).load_state_dict(make("cmaes", DIM).state_dict())


def test_cmaes_state_loads_in_another_process(tmp_path):
    # pycma keys its solution archives by hash(bytes), which differs between processes
    # (PYTHONHASHSEED); the state re-keys them on load. Save mid-generation so they are full.
    a = run(make("cmaes", DIM, seed=4), sphere, 3)
    a.inject(np.ones(DIM), [0.0])
    X = a.ask()
    plainstate.save(tmp_path / "s.npz", a.state_dict())
    np.save(tmp_path / "X.npy", X)
    a.tell(sphere(X))
    expected = [a.ask()]
    for _ in range(3):
        a.tell(sphere(expected[-1]))
        expected.append(a.ask())
    child = textwrap.dedent(f"""
        import numpy as np
        from islands.persistence import plainstate
        from islands.strategies import make
        s = make("cmaes", {DIM})
        s.load_state_dict(plainstate.load({str(tmp_path / "s.npz")!r}))
        f = lambda X: -np.sum((X - 1.0) ** 2, axis=-1)
        s.tell(f(np.load({str(tmp_path / "X.npy")!r})))
        out = [s.ask()]
        for _ in range(3):
            s.tell(f(out[-1]))
            out.append(s.ask())
        np.save({str(tmp_path / "out.npy")!r}, np.array(out))
    """)
    seed = os.environ.get("PYTHONHASHSEED", "")
    env = dict(os.environ, PYTHONPATH=ROOT,
               PYTHONHASHSEED=str(int(seed) + 1) if seed.isdigit() else "12345")
    subprocess.run([sys.executable, "-c", child], check=True, env=env, timeout=120)
    assert np.array_equal(np.load(tmp_path / "out.npy"), np.array(expected))


CMA_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    if sys.argv[1] == "loaded":
        import matplotlib.pyplot, scipy.stats  # noqa: F401
    from islands.strategies import make
    centers = []
    for name in ("cmaes", "sep-cmaes"):
        s = make(name, 10, popsize=12, sigma=0.3, seed=3)
        for _ in range(20):
            s.tell(-np.sum((s.ask() - 1.0) ** 2, axis=1))
        centers.append(np.asarray(s.center).tobytes().hex())
    skipped = [m for m in ("matplotlib.pyplot", "scipy.stats") if m not in sys.modules]
    import matplotlib.pyplot, scipy.stats  # noqa: F401,E401  (importable afterwards)
    print(json.dumps([centers, skipped]))
""")


def test_pycma_loads_without_its_plots_and_stats_and_runs_the_same():
    """An island process that runs CMA-ES skips pycma's optional matplotlib and scipy.stats
    imports (strategies/cmaes.py, ``_Optional``: about 1 s of CPU per process); a process
    that had loaded them first computes the same centers, bit for bit."""
    out = {}
    for mode in ("loaded", "skipped"):
        out[mode] = subprocess.run([sys.executable, "-c", CMA_CHILD, mode], check=True,
                                   env=dict(os.environ, PYTHONPATH=ROOT), timeout=120,
                                   capture_output=True, text=True).stdout.strip()
    centers_loaded, none = json.loads(out["loaded"])
    centers_skipped, skipped = json.loads(out["skipped"])
    assert none == [] and skipped == ["matplotlib.pyplot", "scipy.stats"], out
    assert centers_skipped == centers_loaded


# ---- migrants ------------------------------------------------------------------------------
def test_cmaes_inject_helps():
    def next_generation(inject):
        s = run(make("cmaes", DIM, seed=3), sphere, 5)
        if inject:
            s.inject(np.ones(DIM), [0.0])  # the optimum
        X = s.ask()
        f = sphere(X)
        s.tell(f)
        return X, f, s.center

    X0, f0, c0 = next_generation(False)
    X1, f1, c1 = next_generation(True)
    # The optimum is far (in sigmas) from the mean: pycma samples in its direction at a
    # typical step length, as the first sample of the next ask.
    s = run(make("cmaes", DIM, seed=3), sphere, 5)
    d, y = np.ones(DIM) - s.center, X1[0] - s.center
    np.testing.assert_allclose(y / np.linalg.norm(y), d / np.linalg.norm(d), atol=1e-12)
    assert f1.max() > f0.max()
    # ... and it takes part in the update: the new mean moved closer to the optimum
    assert sphere(c1) > sphere(c0)


@pytest.mark.parametrize("name", ["cmaes", "sep-cmaes"])
def test_cmaes_keeps_at_most_half_a_population_of_migrants(name):
    s = run(make(name, DIM, seed=0), sphere, 3)  # popsize 10
    # migrants near the mean (well within sqrt(n) in Mahalanobis distance) are used verbatim
    S = s.center + 0.01 * s.sigma * np.arange(8)[:, None] * np.ones(DIM)
    f = -np.arange(8.0)
    s.inject(S[4:], f[4:])
    s.inject(S[:4], f[:4])
    X = s.ask()
    assert X.shape == (10, DIM)
    np.testing.assert_allclose(X[:5], S[:5], rtol=1e-13)  # the 5 fittest, fittest first
    assert not any(np.array_equal(x, m) for x in X[5:] for m in S)
    s.tell(sphere(X))


def test_openai_es_migrant_rule():
    s = run(make("openai-es", DIM, seed=0), sphere, 20)
    best = s.best[1]
    theta, t = s.center, s.t
    assert t == 20 and np.abs(s.m).sum() > 0
    # not better than the island's best-so-far: ignored (no re-centering, Adam kept)
    s.inject(np.full(DIM, 0.9), [best - 1e-3])
    assert np.array_equal(s.center, theta) and s.t == t
    # better: theta moves there and Adam restarts
    m = np.full(DIM, 0.95)
    s.inject(m, [best + 1e-3])
    assert np.array_equal(s.center, m) and s.t == 0
    assert not s.m.any() and not s.v.any()
    X = s.ask()
    h = s.popsize // 2
    np.testing.assert_allclose((X[:h] + X[h:]) / 2, np.broadcast_to(m, (h, DIM)), atol=1e-12)
    # arriving while a generation is outstanding: re-centers, and that generation's gradient
    # (estimated around the old theta) is dropped
    s.tell(sphere(X))
    X = s.ask()
    s.inject(np.ones(DIM), [0.0])
    s.tell(sphere(X))
    assert np.array_equal(s.center, np.ones(DIM)) and s.t == 0
    s.tell(sphere(s.ask()))  # and the next generation updates again
    assert s.t == 1 and not np.array_equal(s.center, np.ones(DIM))


def test_ars_steps_along_its_top_directions_scaled_by_their_spread():
    """ARS V2-t's update by hand (Mania et al. 2018, Algorithm 1): the ``top`` directions by
    max(r+, r-), weighted by r+ - r-, over ``top`` times the std of their 2 x top returns; a
    pair with a broken side is not a direction."""
    s = make("ars", 3, popsize=8, sigma=0.5, seed=0, lr=0.1, top=2)
    X = s.ask()
    delta = (X[:4] - 0) / 0.5
    f = np.array([1.0, 5.0, 2.0, 0.0, 3.0, 4.0, 1.0, 7.0])  # pairs k: (f[k], f[k + 4])
    # max per pair: 3, 5, 2, 7 -> top 2 are pairs 3 and 1
    s.tell(f)
    kept = np.array([f[3], f[1], f[7], f[5]])
    step = 0.1 / (2 * kept.std()) * ((f[3] - f[7]) * delta[3] + (f[1] - f[5]) * delta[1])
    assert np.allclose(s.center, step)
    X = s.ask()  # pair 3 broken: the top 2 are now pairs 1 and 0
    delta, c = (X[:4] - s.center) / 0.5, s.center
    f[7] = np.nan
    s.tell(f)
    kept = np.array([f[1], f[0], f[5], f[4]])
    step = 0.1 / (2 * kept.std()) * ((f[1] - f[5]) * delta[1] + (f[0] - f[4]) * delta[0])
    assert np.allclose(s.center, c + step)
    with pytest.raises(ValueError, match="1 <= top <= popsize / 2 = 4, got 5"):
        make("ars", 3, popsize=8, top=5)


def test_ga_immigrants_replace_the_worst():
    s = run(make("ga", DIM, popsize=10, seed=0), sphere, 3)
    pool_X, pool_f = s.pool_X.copy(), s.pool_f.copy()
    elite = s.center
    worst = int(np.argmin(pool_f))
    median = float(np.median(pool_f))
    # a middling immigrant takes the worst member's place; the elite is unchanged
    s.inject(np.full(DIM, 0.5), [median])
    assert len(s.pool_f) == 10 and median in s.pool_f
    assert not any(np.array_equal(x, pool_X[worst]) for x in s.pool_X)
    assert np.array_equal(s.center, elite)
    # an immigrant better than the elite becomes the elite: row 0 of the next population
    s.inject(np.ones(DIM), [0.0])
    assert np.array_equal(s.center, np.ones(DIM))
    X = s.ask()
    assert np.array_equal(X[0], np.ones(DIM))
    # while a generation is outstanding, immigrants join the pool after its tell
    s.tell(sphere(X))
    X = s.ask()
    s.inject(np.full(DIM, 1.0 + 1e-9), [1.0])  # claims a fitness better than anything
    s.tell(sphere(X))
    assert s.pool_f.max() == 1.0 and len(s.pool_f) == 10
    assert np.array_equal(s.ask()[0], np.full(DIM, 1.0 + 1e-9))


# ---- broken fitness ------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_nan_and_inf_fitness(name):
    s = make(name, DIM, seed=2)
    rng = np.random.default_rng(0)
    for g in range(200):
        X = s.ask()
        assert np.isfinite(X).all()
        f = sphere(X)
        f[rng.choice(s.popsize, 3, replace=False)] = [np.nan, np.inf, -np.inf]
        if g == 5:
            f[:] = np.nan  # a whole generation lost (e.g. a crashed evaluator)
        s.tell(f)
        assert np.isfinite(s.center).all() and np.isfinite(s.best[1])
    # still converges (start: -10); with 3 broken samples per generation, measured center
    # fitness after 200 generations: cmaes -2e-8, sep-cmaes -1e-9, openai-es -4e-5, ga -7e-4,
    # ars -3e-4 (its pairs with a broken side are left out of the step)
    assert sphere(s.center) > -1e-2 and s.best[1] > -1e-2
    s.inject(np.ones((2, DIM)), [np.nan, np.inf])  # broken migrants are dropped
    assert s.best[1] < 0


# ---- shared extension points ---------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_ask_native_is_ask_before_the_host(name):
    # ask() is ask_native() brought to the host as float64: the same genomes, the same updates
    kw = {"table_size": 5000} if name == "openai-es-nt" else {}
    a, b = make(name, DIM, seed=4, **kw), make(name, DIM, seed=4, **kw)
    for _ in range(3):
        X, N = a.ask(), b.ask_native()
        assert np.array_equal(X, np.asarray(b._to_host(N), dtype=np.float64))
        a.tell(sphere(X))
        b.tell(sphere(X))
    assert np.array_equal(a.center, b.center) and np.array_equal(a.best[0], b.best[0])


@pytest.mark.parametrize("name", ["openai-es", "openai-es-nt"])
def test_both_openai_es_variants_follow_one_migrant_rule(name):
    kw = {"table_size": 5000} if name == "openai-es-nt" else {}
    s = run(make(name, DIM, seed=0, **kw), sphere, 20)
    best, theta = s.best[1], s.center
    assert s.t == 20 and np.abs(s.adam.state_dict()["m"]).sum() > 0
    s.inject(np.full(DIM, 0.9), [best - 1e-3])  # not better than the best-so-far: ignored
    assert np.array_equal(s.center, theta) and s.t == 20 and s.best[1] == best
    s.inject(np.full(DIM, 0.95), [best + 1e-3])  # better: re-centers, Adam restarts
    adam = s.adam.state_dict()
    assert np.array_equal(s.center, np.full(DIM, 0.95)) and s.t == 0
    assert not adam["m"].any() and not adam["v"].any() and s.best[1] == best + 1e-3
    X = s.ask()
    s.inject(np.ones(DIM), [0.0])  # mid-generation: that generation's gradient is dropped
    s.tell(sphere(X))
    assert np.array_equal(s.center, np.ones(DIM)) and s.t == 0 and s.generation == 21


def test_adam_one_helper_for_numpy_and_torch():
    import torch

    from islands.strategies.adam import Adam

    rng = np.random.default_rng(0)
    theta, gs = rng.standard_normal(DIM), rng.standard_normal((5, DIM))
    a, b = Adam(theta, 0.01, 0.9, 0.999, 1e-8), Adam(torch.tensor(theta), 0.01, 0.9, 0.999, 1e-8)
    x, y = theta, torch.tensor(theta)
    for g in gs:
        x, y = a.ascend(x, g, 0.005), b.ascend(y, torch.tensor(g), 0.005)
    assert isinstance(y, torch.Tensor) and a.t == b.t == 5
    np.testing.assert_allclose(y.numpy(), x, rtol=1e-13)  # the same maths, other rounding
    c = Adam(torch.zeros(DIM, dtype=torch.float64), 1.0, 0.0, 0.0, 1.0)
    c.load_state_dict(plainstate.from_bytes(plainstate.to_bytes(b.state_dict())))
    assert torch.equal(c.m, b.m) and torch.equal(c.v, b.v) and c.t == 5


def test_ars_and_openai_es_share_one_mirrored_sampler():
    """Same seed, sigma and center: the same mirrored population; ARS keeps no Adam."""
    from islands.strategies.mirrored import MirroredES

    x0 = np.linspace(-1, 1, 7)
    ars = make("ars", 7, popsize=8, sigma=0.1, seed=3, x0=x0)
    es = make("openai-es", 7, popsize=8, sigma=0.1, seed=3, x0=x0)
    X = ars.ask()
    assert isinstance(ars, MirroredES) and isinstance(es, MirroredES)
    np.testing.assert_array_equal(X, es.ask())
    np.testing.assert_allclose(X[:4] + X[4:], 2 * np.tile(x0, (4, 1)))
    assert not hasattr(ars, "adam") and hasattr(es, "adam")
    with pytest.raises(ValueError, match="ars needs an even popsize"):
        make("ars", 7, popsize=7)
