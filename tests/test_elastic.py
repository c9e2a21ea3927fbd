"""The elastic archipelago (--elastic MIN:MAX): the rule, the coordinator's membership, the
flag's checks, a launcher run that fills the machine, and a cluster that grows and shrinks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cluster_script, run_module

from islands.config import ConfigError, from_dict, resolve
from islands.coordinator import CoordinatorCore, CoordinatorSpec
from islands.elastic import Host, Node, decide
from islands.messages import Emigrants, EvolveResult, IslandReport
from islands.persistence.checkpointing import CheckpointSpec

CPU = {"CPU": 1.0}


def nodes(*cpus: float, dead: tuple[int, ...] = ()) -> list[Node]:
    return [Node(f"n{k}", k not in dead, {"CPU": c}) for k, c in enumerate(cpus)]


def test_the_rule_grows_to_the_cluster_within_its_range():
    hosts = [Host(0, (0,), "n0"), Host(1, (1,), "n0")]
    assert decide(nodes(2, 2, 2), hosts, CPU, 1, 8).grow == 4  # 6 CPUs hold 6 islands
    assert decide(nodes(2, 2, 2), hosts, CPU, 1, 5).grow == 3  # ... but MAX is 5
    assert decide(nodes(2), hosts, CPU, 1, 8).grow == 0
    # a half-CPU island share, a GPU per island: the scarcest resource decides
    assert decide(nodes(2), hosts, {"CPU": 0.5}, 1, 8).target == 4
    gpu = [Node("g", True, {"CPU": 8, "GPU": 2})]
    assert decide(gpu, [], {"CPU": 1, "GPU": 1}, 1, 8).grow == 2


def test_the_rule_moves_lost_hosts_while_there_is_room_and_retires_the_rest():
    hosts = [Host(0, (0, 1), "n0"), Host(1, (2,), "n1"), Host(2, (3,), "n1"),
             Host(3, (4,), None)]  # host 3 is still starting: never lost
    # n1 gone, n0 and n2 hold 5: the lost hosts (2 islands) fit beside the 3 others
    d = decide(nodes(2, 2, 3, dead=(1,)), hosts, CPU, 1, 8)
    assert d.retire == () and d.grow == 0
    # n1 gone and only n0 left (2 CPUs): both lost hosts retire; none grows
    d = decide(nodes(2, 2, dead=(1,)), hosts, CPU, 1, 8)
    assert d.retire == (1, 2) and d.grow == 0
    # MIN keeps the oldest lost host to restart when capacity returns
    d = decide(nodes(2, 2, dead=(1,)), hosts, CPU, 4, 8)
    assert d.retire == (2,)


def report(i: int, g: int, fitness: float) -> EvolveResult:
    rep = IslandReport(island=i, strategy="cmaes", generation=g, best_so_far=fitness)
    return EvolveResult(rep, Emigrants(np.full((1, 3), float(i)), np.array([fitness]), i, g))


def test_the_coordinator_links_joined_islands_and_closes_over_retired_ones(tmp_path):
    spec = CoordinatorSpec(n_islands=3, migrants=1, migration_interval=1, elastic=True)
    c = CoordinatorCore(spec, CheckpointSpec(str(tmp_path), 0, 0.0, False))
    c.join([4])  # island 4 finished starting before island 3
    c.join([3])
    assert c.n == 5 and c.live == [0, 1, 2, 3, 4]
    assert [c.targets(i) for i in range(5)] == [[1], [2], [3], [4], [0]]
    c.report(3, report(3, 1, 5.0))
    assert [int(b.source) for b in c.mailbox[4].values()] == [3]
    c.retire([1, 4])
    assert c.live == [0, 2, 3] and c.mailbox[4] == {}
    assert [c.targets(i) for i in range(5)] == [[2], [], [3], [0], []]
    c.report(4, report(4, 2, 9.0))  # a late report of a retired island: the hof takes it
    assert c.hof.fitness == 9.0 and c.mailbox[0] == {}  # ... but it emigrates nowhere
    assert 4 not in c.live
    c.report(5, report(5, 1, 1.0))  # a report of an island whose join was lost: it joins
    assert c.live == [0, 2, 3, 5] and c.targets(3) == [5]
    # the membership was checkpointed with each change: a restarted coordinator has it
    again = CoordinatorCore(spec, CheckpointSpec(str(tmp_path), 0, 0.0, True))
    assert again.n == 6 and again.live == [0, 2, 3, 5] and again.retired == {1, 4}
    assert [again.targets(i) for i in range(6)] == [[2], [], [3], [5], [], [0]]


@pytest.mark.parametrize("extra, message", [
    ({"elastic": "4:2"}, "--elastic: needs MIN:MAX with 1 <= MIN <= MAX"),
    ({"elastic": "two"}, "--elastic: expected MIN:MAX island counts"),
    ({"elastic": "2:4", "islands": 6}, "--islands 6 is outside --elastic 2:4"),
    ({"elastic": "1:4", "island_specs": [{"strategy": "ga"}]},
     "--elastic does not go with island_specs"),
    ({"elastic": "2:4", "topology": "edges", "edges": "0>1"},
     "--elastic does not go with --topology edges"),
])
def test_bad_elastic_settings_are_refused_in_one_line(extra, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        resolve(from_dict({"env": "rastrigin:4", **extra}))


def test_an_elastic_run_starts_at_min_with_one_cpu_per_island():
    c = resolve(from_dict({"env": "rastrigin:4", "elastic": "2:6"}))
    assert (c.islands, c.cpus_per_island) == (2, 1.0)


@pytest.mark.own_ray
def test_the_launcher_grows_an_elastic_run_to_fill_the_machine(tmp_path):
    out = tmp_path / "run"
    proc = run_module(
        "islands.launch", "--env", "rastrigin:6", "--env-kwargs", '{"wait_ms": 50}',
        "--elastic", "1:4", "--cpus-per-island", "0.5", "--strategy", "cmaes",
        "--popsize", "8", "--migration-interval", "1", "--time-budget", "8",
        "--target", "none", "--dashboard", "off", "--tensorboard", "off", "--out", str(out),
        timeout=300)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:])
    s = json.loads((out / "summary.json").read_text())
    el = s["elastic"]
    # one island to start; 2 CPUs hold 4 of half a CPU: 3 join, seeded from the hall of fame
    assert s["islands"] == 1 and (el["min"], el["max"], el["live"]) == (1, 4, 4)
    assert el["joined"] == 3 and el["retired"] == 0
    assert {e["why"] for e in el["events"]} == {"seeded from the hall of fame"}
    assert sorted(int(k) for k in s["generations"]) == [0, 1, 2, 3]
    assert s["migration"]["live"] == 4 and all(x > 0 for x in s["migration"]["delivered"])
    assert "elastic: island" in proc.stdout and "joined" in proc.stdout
    assert "; elastic 1:4: islands follow the cluster's nodes" in proc.stdout


@pytest.mark.own_ray
@pytest.mark.slow
def test_an_elastic_archipelago_follows_nodes_that_join_and_leave():
    out = run_cluster_script("elastic_cluster_run.py")
    assert out["stop_reason"] == "time budget" and not out["errors"]
    el, marks = out["elastic"], out["marks"]
    joined = [e for e in el["events"] if e["kind"] == "joined"]
    retired = [e for e in el["events"] if e["kind"] == "retired"]
    # 4 -> 8 within 30 s of the nodes joining, every newcomer on a new node, seeded from
    # the hall of fame and linked into the topology (it received migrants)
    assert [e["live"] for e in joined][-1] == 8
    assert max(e["t"] for e in joined) - marks["joined"] <= 30
    assert {e["node"] for e in joined} == set(out["added_nodes"])
    assert out["x0_set"] == [False] * 4 + [True] * 4
    assert all(out["immigrants"][str(i)] > 0 for i in range(8)), out["immigrants"]
    # one of the first nodes lost, a spare beside it: its islands move there (Ray restarts
    # them from their checkpoints) and run on; none retires, none is added (MAX is 8)
    moved = [e for e in el["events"] if e["kind"] == "moved"]
    on_lost = [i for i, n in enumerate(out["start_nodes"]) if n == out["lost_node"]]
    assert on_lost and sorted(i for e in moved for i in e["islands"]) == on_lost
    assert {e["node"] for e in moved} == {out["spare_node"]}
    assert all(e["t"] > out["marks"]["swap"] for e in moved), moved  # (after the leave too,
    # on a loaded machine: the lost hosts are kept while the capacity has room for them)
    # 8 -> 4 once the joined nodes leave: the islands there retire, the others run on
    assert sorted(i for e in retired for i in e["islands"]) == [4, 5, 6, 7]
    assert el["live"] == 4 and min(e["t"] for e in retired) >= marks["leave"]
    last = out["last_report_s"]
    assert all(last[str(i)] > marks["leave"] + 6 for i in range(4)), (last, marks)
    assert all(last[str(i)] < marks["leave"] + 5 for i in range(4, 8)), (last, marks)
    # nothing lost: the hall of fame is the best genome any island reported, and it is that
    assert out["hof_fitness"] == out["best_reported"] == out["best_fitness"]
    assert out["best_refit"] == out["best_fitness"]
