"""Paired comparison of two arms that ran on the same seeds: which arm solved first, seed by
seed (sign test), and the signed-rank test on the differences in seconds to solve.

    python benchmarks/paired_seeds.py docs/results/migrant-screening.json [--arms A B] \
        [--past 90]

Reads a study's JSON: ``{"seeds": [...], "rows": {seed: {arm: {"solved", "to_solve",
"wall"}}}}`` (docs/results/migrant-screening.json), or ``time_to_solve.py``'s final JSON line
with ``--variant`` (``{"variants": {arm: {"per_seed": [...]}}}``). Each seed runs both arms,
so the arms are paired: a test for independent groups (log-rank, Mann-Whitney) ignores that.
An unsolved run counts at the seconds it ran (censored there): its seed is decided only where
the other arm solved before that; ``islands.experiment.stats.paired`` says when the
signed-rank test's ranks hold whatever the censored runs' true times. ``--past S``: the
seeds where exactly one arm took more than S seconds (or never solved), with the exact
McNemar test on them (the tail, paired). Plain Python and scipy: no Ray, no runs. Prints a
table, then a JSON line (``islands.output.benchmarking``: a row per seed, baseline arm A, no ratio).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from islands.output import benchmarking as bench


def per_seed(data: dict) -> dict[str, dict[int, tuple[float, bool]]]:
    """{arm: {seed: (seconds, solved)}}: a solved run's seconds to solve (its run's seconds
    where it left no count: an upper bound), an unsolved run's seconds run."""
    out: dict[str, dict[int, tuple[float, bool]]] = {}
    if "variants" in data:  # time_to_solve.py's JSON line
        for arm, v in data["variants"].items():
            out[arm] = {int(r["seed"]): ((r.get("wall_to_solve") if r["solved"] else None)
                                         or r["run_wall_s"], bool(r["solved"]))
                        for r in v["per_seed"]}
        return out
    for seed, arms in data["rows"].items():
        for arm, r in arms.items():
            t = (r.get("to_solve") if r["solved"] else None) or r["wall"]
            out.setdefault(arm, {})[int(seed)] = (float(t), bool(r["solved"]))
    return out


def past(s: float, ta, ea, tb, eb) -> dict:
    """Seeds where only one arm took more than ``s`` seconds or never solved (an unsolved
    run stopped before ``s`` is not decided: left out), and the exact McNemar p on them."""
    from scipy.stats import binomtest

    def slow(t: float, e: bool) -> bool | None:
        return t > s if e else (True if t >= s else None)

    pairs = [(slow(x, sx), slow(y, sy)) for x, sx, y, sy in zip(ta, ea, tb, eb, strict=True)]
    only_a = sum(1 for x, y in pairs if x is True and y is False)
    only_b = sum(1 for x, y in pairs if x is False and y is True)
    both = sum(1 for x, y in pairs if x is True and y is True)
    n = only_a + only_b
    return {"only_a": only_a, "only_b": only_b, "both": both,
            "p": float(binomtest(only_a, n).pvalue) if n else float("nan")}


def main(argv: list[str] | None = None) -> int:
    from islands.experiment.stats import paired

    p = bench.parser(__doc__)
    p.add_argument("file", help="the study's JSON")
    p.add_argument("--arms", nargs=2, metavar=("A", "B"),
                   help="the two arms (default: the file's first two)")
    p.add_argument("--past", type=float, default=None, metavar="S",
                   help="also compare, seed by seed, which arm took more than S seconds")
    args = p.parse_args(argv)
    runs = per_seed(json.loads(Path(args.file).read_text()))
    a, b = args.arms or list(runs)[:2]
    seeds = sorted(set(runs[a]) & set(runs[b]))
    ta, tb, ea, eb = ([runs[x][s][i] for s in seeds] for i, x in
                      ((0, a), (0, b), (1, a), (1, b)))
    res = paired(ta, ea, tb, eb)
    rows = []
    for s, x, y, sx, sy in zip(seeds, ta, tb, ea, eb, strict=True):
        first = a if sx and x < y else b if sy and y < x else "-"
        rows.append({"seed": s, "a_s": x, "a_solved": sx, "b_s": y, "b_solved": sy,
                     "first": None if first == "-" else first})
        print(f"seed {s:>5}  {a} {x:7.1f}{'' if sx else '+'}  {b} {y:7.1f}{'' if sy else '+'}"
              f"  first: {first}")
    print(f"{len(seeds)} seeds (+: unsolved, censored there): {a} first on {res.a_first}, "
          f"{b} first on {res.b_first}, undecided {res.undecided}; sign test p = "
          f"{res.sign_p:.3g}; Wilcoxon signed-rank p = {res.wilcoxon_p:.3g} (ranks "
          f"{'exact' if res.ranks_exact else 'approximate: censored differences'})")
    out = {"analysis": "paired_seeds", "file": args.file, "arms": [a, b], "seeds": len(seeds),
           **{k: getattr(res, k) for k in ("a_first", "b_first", "undecided", "sign_p",
                                           "wilcoxon_p", "ranks_exact")}}
    if args.past is not None:
        out["past"] = past(args.past, ta, ea, tb, eb)
        print(f"past {args.past:g} s: only {a} on {out['past']['only_a']} seeds, only {b} on "
              f"{out['past']['only_b']}, both on {out['past']['both']}; exact McNemar p = "
              f"{out['past']['p']:.3g}")
    bench.emit("paired_seeds", rows=rows, baseline=a, ratio=None, **out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
