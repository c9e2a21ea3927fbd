"""Islands that compute on their own device: an openai-es-nt island hands its population to a
torch-native evaluator as a tensor where both live (no host round trip), beside islands on
other backends in the same run. On CPU here; the CUDA versions run where there is one."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import HANG_S, MET, last_row, stop_when

from envs import BACKENDS
from islands.config import ConfigError, from_dict, parse_args, resolve
from islands.island.core import IslandCore
from islands.planning import plan_islands
from islands.runtime.archipelago import Archipelago

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
NT = {"strategy": "openai-es-nt", "backend": "torch", "options": {"table_size": 100_000}}
SMALL = dict(env="CartPole-v1", episodes=1, max_episode_steps=200, target=None,
             test_episodes=5)


def _nt_island(device: str = "cpu", **cfg) -> IslandCore:
    c = resolve(from_dict({**SMALL, "islands": 1, "island_specs": [NT], **cfg}))
    return IslandCore(plan_islands(c, [2.0])[0], c.eval_spec(), run_seed=3, device=device)


def _record_inputs(core: IslandCore) -> list:
    """Wrap the island's evaluator so each population it is given is recorded (the real
    evaluator still runs)."""
    seen, evaluate = [], core.evaluator.evaluate

    def recording(params, seed):
        seen.append(params)
        return evaluate(params, seed)

    core.evaluator.evaluate = recording
    return seen


def _run(cfg, holds):
    """Start an archipelago on the session's Ray, run it until ``holds(rows)``
    (conftest.stop_when); (infos, result)."""
    arch = Archipelago(cfg, plan_islands(cfg, [2.0]))
    try:
        arch.start()
        infos = arch.wait_ready()
        return infos, arch.run(stop_when(arch, holds))
    finally:
        arch.shutdown()


def test_an_nt_island_on_the_torch_backend_evaluates_its_tensors_as_the_host_path_would():
    native, host = _nt_island(), _nt_island()
    host._ask = host.strategy.ask  # the population through float64 numpy, as before
    seen = _record_inputs(native)
    assert native.evaluator.backend == "torch" and native.strategy.device.type == "cpu"
    for _ in range(12):
        a, b = native.evolve(1), host.evolve(1)
    assert all(isinstance(p, torch.Tensor) and p.dtype == torch.float32 for p in seen)
    assert len(seen) == 12
    # the same genomes (float32 values either way), so the same run
    np.testing.assert_array_equal(native.strategy.center, host.strategy.center)
    np.testing.assert_array_equal(a.emigrants.params, b.emigrants.params)
    assert a.emigrants.params.dtype == np.float64 and a.report.best_so_far > 0
    assert a.report.best_so_far == b.report.best_so_far


def test_a_cmaes_island_on_envpool_keeps_numpy_populations():
    c = resolve(from_dict({**SMALL, "islands": 1, "island_specs": [{"strategy": "cmaes"}]}))
    core = IslandCore(plan_islands(c, [2.0])[0], c.eval_spec(), run_seed=3)
    seen = _record_inputs(core)
    core.evolve(2)
    assert core.evaluator.backend == "envpool"
    assert all(isinstance(p, np.ndarray) for p in seen) and len(seen) == 2


@pytest.mark.parametrize("argv, message", [
    (["--strategy", "openai-es-nt", "--strategy-options", '{"device": "cuda"}'],
     "--strategy-options: 'device' is set per island, not as a strategy option (an island "
     "with a GPU, from --gpus-per-island or its num_gpus, runs openai-es-nt there)"),
    (["--island-specs", '[{"strategy": "openai-es-nt", "options": {"device": "cpu"}}]'],
     "island_specs[0].options: 'device' is set per island, not as a strategy option (an "
     "island with a GPU, from --gpus-per-island or its num_gpus, runs openai-es-nt there)"),
    (["--island-specs", '[{"backend": "jax"}]'], "island_specs[0].backend must be one of "
     f"{', '.join(BACKENDS)}, got 'jax'"),
])
def test_a_global_device_option_or_an_unknown_backend_is_refused(argv, message):
    with pytest.raises(ConfigError) as e:
        resolve(parse_args(argv), check_env=False)
    assert str(e.value) == message


def test_a_gpu_nt_island_plans_the_torch_native_env_unless_told_otherwise():
    def plan(*argv):
        cfg = resolve(parse_args(["--islands", "2", *argv]), check_env=False)
        return [(s.strategy, s.backend) for s in plan_islands(cfg, [2.0])]

    gpu = ["--strategy", "openai-es-nt,cmaes", "--gpus-per-island", "0.5"]
    assert plan(*gpu) == [("openai-es-nt", "torch"), ("cmaes", None)]
    assert plan(*gpu, "--backend", "envpool") == [("openai-es-nt", None), ("cmaes", None)]
    assert plan("--strategy", "openai-es-nt") == [("openai-es-nt", None)] * 2  # no GPU
    assert plan(*gpu, "--env", "LunarLander-v3") == [("openai-es-nt", None), ("cmaes", None)]
    specs = '[{"strategy": "openai-es-nt", "num_gpus": 1, "backend": "gymnasium"}, {}]'
    assert plan("--island-specs", specs)[0] == ("openai-es-nt", "gymnasium")


def test_the_start_line_names_each_islands_backend_and_device():
    from islands.messages import IslandInfo
    from islands.runtime.drive import _backends

    def info(i, backend, device):
        return IslandInfo(i, "cmaes", 4, 8, device, 1, backend, {}, 0, None)

    same = [info(i, "envpool", "cpu") for i in range(3)]
    assert _backends(same) == "backend envpool on cpu"
    mixed = [info(0, "torch", "cuda"), *same[1:], info(3, "envpool", "cpu")]
    assert _backends(mixed) == "backends torch on cuda (island 0), envpool on cpu (islands 1-3)"


def test_a_device_option_is_refused_by_the_launcher_in_one_line(tmp_path):
    from conftest import run_module

    proc = run_module("islands.launch", "--strategy", "openai-es-nt", "--strategy-options",
                      '{"device": "cuda"}', "--out", str(tmp_path / "run"), timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "'device' is set per island" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "run").exists()


def test_a_mixed_run_torch_nt_island_and_envpool_cmaes_island_trade_migrants(ray_session):
    cfg = resolve(from_dict({**SMALL, "islands": 2, "popsize": 8, "topology": "full",
                             "migrants": 1, "migration_interval": 1, "time_budget": HANG_S,
                             "generations": 100_000, "namespace": "t-device-mixed",
                             "island_specs": [NT, {"strategy": "cmaes"}]}))

    def traded(rows):  # migrants both ways, and one island past the start
        lasts = [last_row(rows, i) for i in (0, 1)]
        return all(r is not None and r["generation"] >= 2 and r["immigrants"] > 0
                   for r in lasts) and max(r["best_so_far"] for r in rows) > 20

    infos, res = _run(cfg, traded)
    assert res.stop_reason == MET
    assert [(i.strategy, i.backend, i.device) for i in infos] == [
        ("openai-es-nt", "torch", "cpu"), ("cmaes", "envpool", "cpu")]
    last = {r["island"]: r for r in res.rows}
    for i in (0, 1):  # migrants both ways
        assert last[i]["generation"] >= 2 and last[i]["immigrants"] > 0, last[i]
    assert max(r["best_so_far"] for r in res.rows) > 20


@pytest.mark.gpu
@needs_cuda
def test_an_nt_island_on_cuda_keeps_its_population_on_the_gpu():
    core = _nt_island("cuda")
    seen = _record_inputs(core)
    out = core.evolve(3)
    assert core.strategy.device.type == "cuda" and core.evaluator.device.type == "cuda"
    assert all(isinstance(p, torch.Tensor) and p.is_cuda for p in seen)
    assert out.emigrants.params.dtype == np.float64 and np.isfinite(out.report.best_so_far)


@pytest.mark.gpu
@needs_cuda
def test_a_gpu_island_beside_a_cpu_island_in_one_run(ray_session):
    gpu = {**NT, "num_gpus": 1}
    cfg = resolve(from_dict({**SMALL, "islands": 2, "popsize": 8, "topology": "full",
                             "migration_interval": 1, "time_budget": HANG_S,
                             "generations": 100_000, "namespace": "t-device-gpu",
                             "island_specs": [gpu, {"strategy": "cmaes"}]}))
    infos, res = _run(cfg, lambda rows: {r["island"] for r in rows if r["immigrants"] > 0}
                      == {0, 1})
    assert [(i.backend, i.device) for i in infos] == [("torch", "cuda"), ("envpool", "cpu")]
    assert {r["island"] for r in res.rows if r["immigrants"] > 0} == {0, 1}
