"""The GPU suite's report: each part's table (a note naming its baseline, a header, rows)
and ``gpu.md``, rendered from the suite's record (``gpu.json``)."""

from __future__ import annotations

if __package__:  # python -m benchmarks.gpu_suite
    from ._gpu_parts import one_line
else:  # python benchmarks/gpu_suite.py
    from _gpu_parts import one_line


def _n(x, fmt=",.0f") -> str:
    return "-" if x is None else format(x, fmt)


def _ms(x) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def table_throughput(p: dict) -> tuple[str, list[str], list[list[str]]]:
    modes = "; ".join(f"{m}: {v['status']}" + (f" ({v['reason']})" if v["reason"] else "")
                      for m, v in p["modes"].items())
    note = ("Baseline: the same env with random actions and no policy (the ceiling on this "
            "device); x random = policy steps/s / random steps/s. MLP 64-64, 256 episodes per "
            f"individual. Modes: {modes}.")
    if p["rows"] and p["rows"][0]["bench"] == "cartpole":
        note += (f" Best: {_n(p['best_steps_per_s'])} steps/s ({p['best_row']}); goal >= 200M "
                 "on one H100; gymnax CartPole ~20M with a random policy on an A100.")
    head = ["compile", "N envs", "P x E", "policy steps/s", "random steps/s", "x random",
            "live", "return", "wall s"]
    rows = [[r["compile"], _n(r["N"]), f"{r['P']} x {r['E']}", _n(r["steps_per_s"]),
             _n(r["random_steps_per_s"]), _n(r["ratio"], ".2f"), _n(r["live_fraction"], ".2f"),
             _n(r["mean_return"], ".1f"), _n(r["wall_s"], ".2f")] for r in p["rows"]]
    return note, head, rows


def table_pong(p: dict) -> tuple[str, list[str], list[list[str]]]:
    note = (f"EnvPool Pong-v5, {p['threads']} EnvPool threads, CNN on CUDA. Baseline: random "
            "actions, no policy; x random = policy steps/s / random steps/s.")
    head = ["dtype", "N envs", "P x E", "policy steps/s", "random steps/s", "x random",
            "wall s"]
    rows = [[r["dtype"], _n(r["N"]), f"{r['P']} x {r['E']}", _n(r["steps_per_s"]),
             _n(r["random_steps_per_s"]), _n(r["ratio"], ".2f"), _n(r["wall_s"], ".2f")]
            for r in p["rows"]]
    return note, head, rows


def table_noise_table(p: dict) -> tuple[str, list[str], list[list[str]]]:
    note = (f"One generation's ask / tell, popsize {p['popsize']}, median of {p['repeats']}; "
            f"CPU with {p['cpu_threads']} torch threads. Baseline: openai-es-nt on the CPU; "
            "x CPU = its time / this time (> 1: faster). openai-es = plain numpy float64.")
    head = ["dim", "impl", "device", "method", "ask_tensor ms", "ask ms", "tell ms",
            "tell x CPU", "ask x CPU", "tell MB"]
    rows = [[_n(r["dim"]), r["impl"], r["device"], r["method"], _ms(r["ask_tensor_s"]),
             _ms(r["ask_s"]), _ms(r["tell_s"]), _n(r.get("tell_x_cpu"), ".2f"),
             _n(r.get("ask_x_cpu"), ".2f"), _n(r["tell_mb"], ".1f")] for r in p["rows"]]
    return note, head, rows


def table_nt_island(p: dict) -> tuple[str, list[str], list[list[str]]]:
    note = (f"openai-es-nt on torch-native CartPole-v1, popsize {p['popsize']}, time budget "
            f"{p['time_budget_s']:.0f} s, seed 0. Baseline: the CPU run; x CPU = steps/s over "
            "the CPU's. " + (p.get("cuda") or ""))
    cpu = next((r["steps_per_s"] for r in p["rows"] if r["device"] == "cpu"), None)
    head = ["device", "solved", "wall s", "to solve s", "env steps", "steps/s", "x CPU",
            "test mean", "generations"]
    rows = [[r["device"], str(r["solved"]), _n(r["wall_s"], ".1f"), _n(r["wall_to_solve"], ".1f"),
             _n(r["env_steps"]), _n(r["steps_per_s"]), _n(cpu and r["steps_per_s"] / cpu, ".2f"),
             _n(r["test_mean"], ".1f"), _n(r["generations"])] for r in p["rows"]]
    return note, head, rows


def table_archipelago_scaling(p: dict) -> tuple[str, list[str], list[list[str]]]:
    note = (f"{p['env']}, one CPU per island, {p['seconds']:.0f} s each, Ray with {p['cpus']} "
            "CPUs. Baseline: 1 island; efficiency = steps/s(n) / (n x steps/s(1))."
            + (f" Not run (more islands than cores): {p['not_run']}." if p["not_run"] else ""))
    head = ["islands", "steps/s", "x 1 island", "efficiency", "generations", "gen time s"]
    one = p["rows"][0]["steps_per_s"]
    rows = [[str(r["islands"]), _n(r["steps_per_s"]), _n(r["steps_per_s"] / one, ".2f"),
             _n(r["efficiency"], ".2f"), _n(r["generations"]), _n(r["generation_s"], ".3f")]
            for r in p["rows"]]
    return note, head, rows


def table_mujoco(p: dict) -> tuple[str, list[str], list[list[str]]]:
    note = (f"MuJoCo Warp (envs/mjwarp.py), a random linear policy, {p['seconds']:g} s per "
            f"row. Baseline: EnvPool with {p['envpool_envs']} envs on {p['cpus']} cores "
            "(x EnvPool = steps/s over its). first s: the first step, kernels compiled or "
            "loaded.")
    head = ["task", "worlds", "steps/s", "EnvPool steps/s", "x EnvPool", "first s"]
    rows = [[r["env"], _n(r["N"]), _n(r["steps_per_s"]), _n(r["envpool_steps_per_s"]),
             _n(r["x_envpool"], ".3f"), _n(r["first_step_s"], ".1f")] for r in p["rows"]]
    return note, head, rows


def table_humanoid(p: dict) -> tuple[str, list[str], list[list[str]]]:
    r = p["rows"][0]
    note = (f"Humanoid-v4 to 6,000 with {r['islands']} ars-nt island(s) on {r['backends']}. "
            "Baseline: ARS V2-t, 142,600 episodes (Mania et al. 2018); OpenAI ES, 10 min on "
            f"1,440 cores. Command: `{p['command']}`")
    head = ["solved", "wall s", "to solve s", "episodes", "env steps", "steps/s",
            "test mean", "generations"]
    row = [str(r["solved"]), _n(r["wall_s"], ".1f"), _n(r["wall_to_solve"], ".1f"),
           _n(r["episodes"]), _n(r["env_steps"]), _n(r["steps_per_s"]),
           _n(r["test_mean"], ".1f"), _n(r["generations"])]
    return note, head, [row]


def table_pytest_gpu(p: dict) -> tuple[str, list[str], list[list[str]]]:
    head = ["rc", "passed", "failed", "skipped", "errors"]
    note = "; ".join([p["summary"], *p.get("failures", [])])
    return note, head, [[str(p[k]) for k in ("rc", "passed", "failed", "skipped",
                                                       "errors")]]


TABLES = {"cartpole": table_throughput, "snake": table_throughput, "pong": table_pong,
          "noise_table": table_noise_table, "nt_island": table_nt_island,
          "archipelago_scaling": table_archipelago_scaling, "mujoco": table_mujoco,
          "humanoid": table_humanoid, "pytest_gpu": table_pytest_gpu}


def md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def part_markdown(name: str, p: dict) -> list[str]:
    """A part's section: its status line, then (when it ran) its note and table."""
    lines = [f"## {name}", "", f"{p['status']} ({p['elapsed_s']:.1f} s)"
             + (f": {p['reason']}" if p["reason"] else ""), ""]
    if p.get("rows") or name == "pytest_gpu" and "rc" in p:
        try:
            note, head, rows = TABLES[name](p)
            lines += [note, "", *md_table(head, rows), ""]
        except Exception as e:  # a partial record: its figures are still in gpu.json
            lines += [f"(table not rendered: {one_line(e)})", ""]
    return lines


def markdown(rec: dict) -> str:
    lines = ["# GPU suite", "", f"- date: {rec['date']}", f"- device: {rec['device']}",
             f"- commit: `{rec['commit']}`", f"- command: `{rec['command']}`"]
    if "wall_s" in rec:
        lines.append(f"- suite wall time: {rec['wall_s']:.0f} s")
    lines.append("")
    for name, p in rec["parts"].items():
        lines += part_markdown(name, p)
    return "\n".join(lines)
