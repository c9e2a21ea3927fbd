"""The elastic archipelago (--elastic MIN:MAX): the rule, the coordinator's membership, the
flag's checks, a launcher run that fills the machine, and a cluster that grows and shrinks."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import ROOT, run_cluster_script, subprocess_env
from fakes import island_result

from islands.config import ConfigError, from_dict, resolve
from islands.coordinator import CoordinatorCore, CoordinatorSpec
from islands.elastic import Host, Node, decide
from islands.messages import EvolveResult
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
    return island_result(i, g, fitness, params=i, best_so_far=fitness)


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
    c = resolve(from_dict({"env": "rastrigin:4", "elastic": " 2 : 6 "}))
    assert (c.islands, c.cpus_per_island) == (2, 1.0)
    assert c.elastic == "2:6" and c.elastic_span == (2, 6)  # normalized once, read as ints
    assert resolve(from_dict({"env": "rastrigin:4"})).elastic_span is None


def launch_until(done, *args: str, hang_s: float = 180) -> tuple[bool, int, str, str]:
    """``python -m islands.launch ARGS``, its stdout read as it comes, stopped with SIGINT
    (as Ctrl-C would) once ``done(lines)`` holds, or when ``hang_s`` passed (a hang: the
    test then fails). Returns whether ``done`` held, the exit status, stdout and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "islands.launch", *args], cwd=ROOT,
                            env=subprocess_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    err: list[str] = []

    def read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line)

    readers = [threading.Thread(target=read, args=a, daemon=True)
               for a in ((proc.stdout, lines), (proc.stderr, err))]
    for t in readers:
        t.start()
    deadline = time.monotonic() + hang_s
    while proc.poll() is None and not done(list(lines)) and time.monotonic() < deadline:
        time.sleep(0.1)
    held = done(list(lines))
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    proc.wait(timeout=180)
    for t in readers:
        t.join(timeout=30)
    return held, proc.returncode, "".join(lines), "".join(err)


def grown_and_linked(n: int):
    """Whether the run's stdout says ``n - 1`` islands joined and, in a progress line since,
    every one of the ``n`` islands had received migrants."""
    def done(lines: list[str]) -> bool:
        joined = [k for k, ln in enumerate(lines) if re.search(r"elastic: island \d+ joined", ln)]
        if len(joined) < n - 1:
            return False
        got = {}
        for ln in lines[joined[-1]:]:
            m = re.search(r"island +(\d+) .* immigrants (\d+) ", ln)
            if m:
                got[int(m[1])] = int(m[2])
        return all(got.get(i, 0) > 0 for i in range(n))
    return done


@pytest.mark.own_ray
def test_the_launcher_grows_an_elastic_run_to_fill_the_machine(tmp_path):
    out = tmp_path / "run"
    # the run goes on until it has grown to 4 islands that all received migrants, then
    # stops on SIGINT (--time-budget: only a backstop)
    held, rc, stdout, stderr = launch_until(
        grown_and_linked(4), "--env", "rastrigin:6", "--env-kwargs", '{"wait_ms": 50}',
        "--elastic", "1:4", "--cpus-per-island", "0.5", "--strategy", "cmaes",
        "--popsize", "8", "--migration-interval", "1", "--time-budget", "300",
        "--log-interval", "0.5", "--target", "none", "--dashboard", "off",
        "--tensorboard", "off", "--out", str(out))
    assert held and rc == 130, (stdout[-2000:], stderr[-3000:])  # grown, then SIGINT
    s = json.loads((out / "summary.json").read_text())
    assert s["stop_reason"] == "interrupted"
    el = s["elastic"]
    # one island to start; 2 CPUs hold 4 of half a CPU: 3 join, seeded from the hall of fame
    assert s["islands"] == 1 and (el["min"], el["max"], el["live"]) == (1, 4, 4)
    assert el["joined"] == 3 and el["retired"] == 0
    assert {e["why"] for e in el["events"]} == {"seeded from the hall of fame"}
    assert sorted(int(k) for k in s["generations"]) == [0, 1, 2, 3]
    assert s["migration"]["live"] == 4 and all(x > 0 for x in s["migration"]["delivered"])
    assert "elastic: island" in stdout and "joined" in stdout
    assert "; elastic 1:4: islands follow the cluster's nodes" in stdout


@pytest.mark.own_ray
@pytest.mark.slow
def test_an_elastic_archipelago_follows_nodes_that_join_and_leave():
    out = run_cluster_script("elastic_cluster_run.py")
    # each change waited for the run's answer to the one before; none of them hung
    assert out["waits"] == dict.fromkeys(["reported", "grown", "moved", "retired"], True), out
    # (the script ends the run as its time budget would, once the last answer came)
    assert out["stop_reason"] == "time budget" and not out["errors"]
    el, marks = out["elastic"], out["marks"]
    at = {kind: [k for k, e in enumerate(el["events"]) if e["kind"] == kind]
          for kind in ("joined", "moved", "retired")}
    joined, moved, retired = ([el["events"][k] for k in at[kind]]
                              for kind in ("joined", "moved", "retired"))
    # 4 -> 8 once the nodes joined, every newcomer on a new node, seeded from the hall of
    # fame and linked into the topology (it received migrants)
    assert [e["live"] for e in joined][-1] == 8
    assert all(marks["join"]["events"] <= k < marks["swap"]["events"] for k in at["joined"])
    assert {e["node"] for e in joined} == set(out["added_nodes"])
    assert out["x0_set"] == [False] * 4 + [True] * 4
    assert all(out["immigrants"][str(i)] > 0 for i in range(8)), out["immigrants"]
    # one of the first nodes lost, a spare beside it: its islands move there (Ray restarts
    # them from their checkpoints) and run on; none retires, none is added (MAX is 8)
    on_lost = [i for i, n in enumerate(out["start_nodes"]) if n == out["lost_node"]]
    assert on_lost and sorted(i for e in moved for i in e["islands"]) == on_lost
    assert {e["node"] for e in moved} == {out["spare_node"]}
    assert all(marks["swap"]["events"] <= k < marks["leave"]["events"] for k in at["moved"])
    # 8 -> 4 once the joined nodes leave: the islands there retire, the others run on
    assert sorted(i for e in retired for i in e["islands"]) == [4, 5, 6, 7]
    assert el["live"] == 4 and min(at["retired"]) >= marks["leave"]["events"]
    after = out["after_retired"]
    assert all(after[str(i)] >= 2 for i in range(4)), after  # (two reports: called since)
    assert all(after[str(i)] == 0 for i in range(4, 8)), after  # none after its retirement
    # nothing lost: the hall of fame is the best genome any island reported, and it is that
    assert out["hof_fitness"] == out["best_reported"] == out["best_fitness"]
    assert out["best_refit"] == out["best_fitness"]
