"""How often "solved" holds on a re-test, and what each rule for calling a run solved costs.

    python benchmarks/confirmation_rules.py RESULT.json [--target 200]

``RESULT.json``: the final JSON line of ``benchmarks/time_to_solve.py`` run with the
confirmation on (the default) and ``--audit-episodes 100``. Every run tested its candidates in
order and re-tested (confirmed) each one whose test reached the target, until one confirmed,
so one set of runs shows several rules side by side:

* ``first pass`` (the old rule): solved at the first test to reach the target; its
  confirmation, 100 episodes nobody chose on, is the independent re-test.
* ``first pass + margin m``: solved at the first test at or above target + m; its
  re-test is its confirmation (where the run got that far; else it is left out, counted).
* ``confirmed`` (the new default): solved when a passing test's confirmation also reaches
  the target; the re-test is the audit (``islands.evaluate`` on a range no run uses).
* ``confirmed, center only`` / ``sample only``: the same, split by the genome's kind.

Cost: training episodes when the solution was found (``found_at``) and the tester's episodes
up to and including the deciding test, per solved run (medians). Table, then a JSON line
(``islands.output.benchmarking``): a row per rule, baseline the old rule, no single ratio.
"""

from __future__ import annotations

import json
import statistics
import sys

from islands.candidates import stopped_early  # also the older files' "screened_out"
from islands.output import benchmarking as bench


def _cost(tests: list[dict], upto: int) -> tuple[float, int]:
    """Training episodes when test ``upto``'s genome was found, tester episodes to then."""
    return (tests[upto]["found_at"].get("episodes", float("nan")),
            sum(int(t["episodes"]) for t in tests[:upto + 1]))


def _retest_of(tests: list[dict], k: int) -> dict | None:
    """The confirmation that followed selecting test ``k`` (the next test, if it is one)."""
    if k + 1 < len(tests) and tests[k + 1]["role"] == "confirmation":
        return tests[k + 1]
    return None


def first_pass(run: dict, target: float, margin: float = 0.0) -> dict | None:
    """The old rule, with a margin: the first selecting test at or above target + margin,
    its re-test (its confirmation) and cost; None when no test got there."""
    tests = run["tests"]
    for k, t in enumerate(tests):
        if t["role"] == "selecting" and not stopped_early(t) and \
                t["mean"] >= target + margin:
            re = _retest_of(tests, k)
            ep, tester = _cost(tests, k + (re is not None))
            return {"retest": None if re is None else re["mean"], "episodes": ep,
                    "tester_episodes": tester, "kind": t["kind"]}
    return None


def confirmed(run: dict, target: float) -> dict | None:
    """The new rule: the first confirmation at or above the target; the audit re-tests it."""
    tests = run["tests"]
    for k, t in enumerate(tests):
        if t["role"] == "confirmation" and not stopped_early(t) and t["mean"] >= target:
            ep, tester = _cost(tests, k)
            return {"retest": run.get("audit_mean"), "episodes": ep,
                    "tester_episodes": tester, "kind": t["kind"]}
    return None


def rule_row(name: str, outcomes: list[dict | None], target: float) -> dict:
    solved = [o for o in outcomes if o is not None]
    known = [o for o in solved if o["retest"] is not None]
    held = sum(o["retest"] >= target for o in known)

    def med(key: str) -> float | None:
        return statistics.median(o[key] for o in solved) if solved else None

    return {"rule": name, "runs": len(outcomes), "solved": len(solved),
            "retested": len(known), "held": held,
            "held_share": held / len(known) if known else None,
            "median_training_episodes": med("episodes"),
            "median_tester_episodes": med("tester_episodes")}


def analyse(runs: list[dict], target: float) -> list[dict]:
    rows = [rule_row("first pass (old rule)", [first_pass(r, target) for r in runs], target)]
    for m in (5.0, 10.0, 20.0):
        rows.append(rule_row(f"first pass at target + {m:g}",
                             [first_pass(r, target, m) for r in runs], target))
    conf = [confirmed(r, target) for r in runs]
    rows.append(rule_row("confirmed (default)", conf, target))
    for kind in ("center", "sample"):
        rows.append(rule_row(f"confirmed, {kind} only",
                             [o if o is not None and o["kind"] == kind else None
                              for o in conf], target))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = bench.parser(__doc__)
    p.add_argument("result", help="time_to_solve.py's final JSON line, in a file")
    p.add_argument("--target", type=float, default=None,
                   help="the target (default: each run's own)")
    args = p.parse_args(argv)
    lines = [ln for ln in open(args.result).read().splitlines() if ln.startswith("{")]
    res = json.loads(lines[-1])
    runs = res["per_seed"]
    target = args.target if args.target is not None else float(runs[0]["target"])
    rows = analyse(runs, target)
    print(f"{'rule':32} {'solved':>7} {'re-test held':>13} {'train ep.':>10} {'tester ep.':>10}")
    for r in rows:
        held = f"{r['held']}/{r['retested']}" if r["retested"] else "-"
        train, tester = r["median_training_episodes"], r["median_tester_episodes"]
        print(f"{r['rule']:32} {r['solved']:>3}/{r['runs']:<3} {held:>13} "
              f"{train or 0:>10,.0f} {tester or 0:>10,.0f}")
    bench.emit("confirmation_rules", rows=rows, baseline=rows[0]["rule"], ratio=None,
               env=res.get("env"), target=target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
