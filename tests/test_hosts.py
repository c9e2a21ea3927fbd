"""Islands that share a CPU share a Ray worker process (planning.HostSpec)."""

from __future__ import annotations

import ray
from test_archipelago import drive

from islands.config import from_dict, resolve
from islands.planning import IslandSpec, check_resources, group_islands, plan_hosts, plan_islands
from islands.runtime.archipelago import Archipelago

SMALL = dict(env="CartPole-v1", popsize=8, episodes=1, max_episode_steps=100, target=None,
             test_episodes=5)


def specs(n: int, cpus: float, **kw) -> list[IslandSpec]:
    return [IslandSpec(index=i, strategy="cmaes", num_cpus=cpus, **kw) for i in range(n)]


def names(hosts) -> list[str]:
    return [h.name for h in hosts]


def test_islands_that_share_a_cpu_share_a_process():
    # 16 islands on 2 CPUs: 1/8 CPU each, 8 per process, 2 processes of one CPU each
    hosts = group_islands(specs(16, 0.125))
    assert names(hosts) == ["islands-00-07", "islands-08-15"]
    assert [h.needs() for h in hosts] == [{"CPU": 1.0}, {"CPU": 1.0}]
    # a whole CPU or more: one process per island, named as always
    assert names(group_islands(specs(2, 1.0))) == ["island-00", "island-01"]
    assert names(group_islands(specs(3, 0.6666))) == ["island-00", "island-01", "island-02"]
    # 5 islands of 0.4 CPU: two per process, the last one alone
    assert names(group_islands(specs(5, 0.4))) == ["islands-00-01", "islands-02-03",
                                                   "island-04"]
    # --islands-per-process sets the group size; 1 is one process per island
    assert names(group_islands(specs(4, 0.5), per_process=4)) == ["islands-00-03"]
    assert len(group_islands(specs(16, 0.125), per_process=1)) == 16


def test_gpu_islands_and_different_resources_never_share():
    plan = specs(2, 0.25, num_gpus=0.5) + [
        IslandSpec(index=2, strategy="ga", num_cpus=0.25),
        IslandSpec(index=3, strategy="ga", num_cpus=0.25, resources={"cpu_node": 0.001}),
        IslandSpec(index=4, strategy="ga", num_cpus=0.25, resources={"cpu_node": 0.001})]
    hosts = group_islands(plan)
    assert names(hosts) == ["island-00", "island-01", "island-02", "islands-03-04"]
    assert hosts[3].needs() == {"CPU": 0.5, "cpu_node": 0.002}
    # an island that exits on purpose (fault tests) dies alone
    dying = [s.replace(debug_exit_after_gen=3) if s.index == 1 else s for s in specs(4, 0.25)]
    assert names(group_islands(dying)) == ["island-00", "island-01", "islands-02-03"]


def test_groups_that_would_not_pack_fall_back_to_one_process_per_island():
    # 4 islands of 0.5 CPU on two 1-CPU nodes pack as 2+2; a group of 4 (2 CPUs) would
    # not fit on either node, so plan_hosts keeps the islands apart
    plan = specs(4, 0.5)
    nodes = [{"CPU": 1.0}, {"CPU": 1.0}]
    check_resources(plan, nodes)
    assert names(plan_hosts(plan, nodes, per_process=4)) == [f"island-0{i}" for i in range(4)]
    assert names(plan_hosts(plan, nodes)) == ["islands-00-01", "islands-02-03"]


def run_independent_islands(per_process: int | None) -> tuple[set[str], dict]:
    cfg = resolve(from_dict({**SMALL, "islands": 4, "generations": 4, "migrants": 0,
                             "obs_norm": False, "islands_per_process": per_process,
                             "namespace": f"t-hosts-{per_process}", "seed": 5}))
    arch = Archipelago(cfg, plan_islands(cfg, [2.0]))
    try:
        arch.start()
        arch.wait_ready()
        actors = {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["namespace"] == cfg.namespace}
        result = arch.run()
    finally:
        arch.shutdown()
    return actors, {(r["island"], r["generation"]): r["fitness_max"] for r in result.rows}


def test_grouping_does_not_change_what_an_island_computes(ray_session):
    # Without migration or shared observation statistics the islands are independent, so
    # each island's generations must be the same whether it has a process of its own or
    # shares one (4 islands of 0.5 CPU on 2 CPUs: two processes of two islands).
    grouped_actors, grouped = run_independent_islands(None)
    alone_actors, alone = run_independent_islands(1)
    assert {"islands-00-01", "islands-02-03", "coordinator"} <= grouped_actors
    assert {f"island-0{i}" for i in range(4)} <= alone_actors
    assert not any(a.startswith("island-") for a in grouped_actors)
    assert len(grouped) == 16 and grouped == alone


def test_a_killed_process_restarts_all_its_islands_from_their_checkpoints(ray_session,
                                                                            tmp_path):
    cfg = resolve(from_dict({**SMALL, "islands": 4, "generations": 10, "cpus_per_island": 0.5,
                             "namespace": "t-hosts-kill", "out": str(tmp_path / "run"),
                             "checkpoint_interval": 2, "checkpoint_seconds": 0}))
    arch = Archipelago(cfg, plan_islands(cfg, [2.0]))
    assert names(arch.hosts) == ["islands-00-01", "islands-02-03"]
    killed: list[int] = []

    def on_report(rep, status):
        if rep["island"] == 3 and rep["generation"] >= 3 and not killed:
            killed.append(rep["generation"])
            ray.kill(arch.islands[3].actor, no_restart=False)

    result = drive(arch, on_report)
    assert killed and result.stop_reason == "generations"
    for i in range(4):
        gens = [r["generation"] for r in result.rows if r["island"] == i]
        assert gens[-1] == 10, (i, gens)
    # both islands of the killed process came back; the other process never died
    assert result.restarts[0] == result.restarts[1] == 0
    assert result.restarts[2] >= 1 and result.restarts[3] >= 1


def test_torch_gets_one_thread_beside_envpool_threads():
    from envs.spec import EvalSpec
    from islands.runtime.actors import _torch_threads

    # EnvPool's threads take the island's 2 CPUs: torch threads beside them only contend
    assert _torch_threads(specs(1, 2.0), EvalSpec("BipedalWalker-v3")) == 1
    # Gymnasium steps in the island's own thread: torch may use the island's CPUs
    assert _torch_threads(specs(1, 2.0), EvalSpec("CartPole-v1", backend="gymnasium")) == 2
    assert _torch_threads(specs(4, 0.25), EvalSpec("CartPole-v1", backend="gymnasium")) == 1
