"""Planning a run: one :class:`IslandSpec` per island, CPU shares, and the resource check.

Plain Python: the launcher plans with the cluster's node resources (read through Ray by
``runtime.cluster.cluster_nodes``) and checks the plan before creating any actor, so a run
that cannot be placed fails in seconds instead of leaving actors pending forever.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.torch_registry import TORCH_ENVS, installed

from .candidates import CANDIDATE_SETS
from .config import Config, strategies_of
from .envdefaults import env_defaults
from .island.spec import IslandSpec, RunSettings
from .strategies import STRATEGIES


class ResourceError(RuntimeError):
    """The cluster cannot place what the run asks for; one-line message."""


@dataclass(frozen=True)
class HostSpec:
    """One Ray worker process and the islands it hosts. Islands that share a CPU share a
    process too: each process imports torch and EnvPool (seconds of CPU), so 16 processes
    on 2 CPUs would spend most of a run's start-up importing (docs/results/startup.md); one
    process per CPU runs the same islands, one call after another, as the CPU would
    time-slice them anyway, and faster than 16 processes do
    (docs/results/island-hosts.md)."""

    islands: tuple[IslandSpec, ...]

    @property
    def name(self) -> str:
        """Ray actor name: ``island-03`` for one island, ``islands-00-07`` for a group."""
        first, last = self.islands[0].index, self.islands[-1].index
        return f"island-{first:02d}" if first == last else f"islands-{first:02d}-{last:02d}"

    def needs(self) -> dict[str, float]:
        """Ray resources of the process: the sum of its islands' (zero amounts left out)."""
        total: dict[str, float] = {}
        for spec in self.islands:
            for k, v in spec.needs().items():
                total[k] = total.get(k, 0.0) + v
        return {k: round(v, 4) for k, v in total.items()}


def group_islands(plan: list[IslandSpec], per_process: int | None = None) -> list[HostSpec]:
    """Hosts for ``plan``: runs of consecutive CPU-only islands with the same resources
    share a process, ``per_process`` of them, or by default as many as fit in one CPU
    (none when an island has a CPU or more). GPU islands always get their own process."""
    hosts: list[list[IslandSpec]] = []
    for spec in plan:
        size = _group_size(spec, per_process)
        last = hosts[-1] if hosts else None
        if (last is not None and len(last) < size and _groupable(last[0])
                and _same_needs(last[0], spec)):
            last.append(spec)
        else:
            hosts.append([spec])
    return [HostSpec(tuple(h)) for h in hosts]


def _group_size(spec: IslandSpec, per_process: int | None) -> int:
    if not _groupable(spec):
        return 1
    if per_process is not None:
        return per_process
    return max(1, math.floor(1.0 / spec.num_cpus + 1e-6)) if spec.num_cpus > 0 else 1


def _groupable(spec: IslandSpec) -> bool:
    return not spec.num_gpus and spec.debug_exit_after_gen is None


def _same_needs(a: IslandSpec, b: IslandSpec) -> bool:
    return a.num_cpus == b.num_cpus and a.resources == b.resources


def default_cpu_share(n_islands: int, node_cpus: list[float]) -> float:
    """The largest CPU share s such that ``n_islands`` actors of s CPUs fit on the nodes
    (sum over nodes of floor(cpus / s) >= n). Shares >= 1 are whole CPUs; smaller ones are
    rounded down to Ray's 0.0001 granularity."""
    best = 0.0
    for c in node_cpus:
        for k in range(1, n_islands + 1):
            s = c / k
            if s > best and sum(math.floor(x / s + 1e-9) for x in node_cpus) >= n_islands:
                best = s
    if best >= 1:
        return float(math.floor(best + 1e-9))
    return max(math.floor(best * 1e4) / 1e4, 1e-4)


def plan_islands(cfg: Config, node_cpus: list[float] | None = None) -> list[IslandSpec]:
    """One spec per island: strategy (round-robin over --strategy, or the island_specs
    entry), popsize, sigma, options, episodes, resources, slowdown, restart policy; all
    holding one :class:`RunSettings` (:func:`run_settings`)."""
    share = cfg.cpus_per_island
    if share is None:
        share = default_cpu_share(cfg.islands, node_cpus or [1.0])
    entries, run = cfg.island_specs or [{}] * cfg.islands, run_settings(cfg)
    return [_island_spec(cfg, i, dict(entries[i]), share, run) for i in range(cfg.islands)]


def new_island_spec(cfg: Config, i: int, share: float, x0=None) -> IslandSpec:
    """Island ``i`` of an elastic run, joining after the start: planned as the start's
    islands are (round-robin strategy, the run's settings), starting at ``x0``."""
    spec = _island_spec(cfg, i, {}, share, run_settings(cfg))
    return spec if x0 is None else spec.replace(x0=tuple(float(v) for v in x0))


def _island_spec(cfg: Config, i: int, s: dict[str, Any], share: float,
                 run: RunSettings) -> IslandSpec:
    names = strategies_of(cfg)
    strategy = s.get("strategy") or names[i % len(names)]
    table = env_defaults(cfg.env)
    if "sigma" in s:
        sigma = s["sigma"]
    elif cfg.sigma is not None:
        sigma = cfg.sigma
    else:  # the table's sigma was tuned for the table's strategy only
        sigma = table["sigma"] if strategy == table["strategy"] else None
    # so were its strategy options; --strategy-options and an island's own override them
    tuned = table.get("strategy_options", {}) if strategy == table["strategy"] else {}
    popsize, tuned = _scaled(s.get("popsize", cfg.popsize), tuned, cfg.popsize_scale)
    return IslandSpec(
        index=i, strategy=strategy, popsize=popsize, sigma=sigma,
        options={**tuned, **cfg.strategy_options, **(s.get("options") or {})},
        episodes=int(s.get("episodes", cfg.episodes)),
        num_cpus=float(s.get("num_cpus", share)),
        num_gpus=float(s.get("num_gpus", cfg.gpus_per_island)),
        resources=dict(s.get("resources", cfg.resources_per_island) or {}),
        slowdown_s=float(s.get("slowdown_s", 0.0)),
        debug_exit_after_gen=(int(cfg.debug_exit_after_gen)
                              if cfg.debug_exit_island == i else None),
        restart=str(s.get("restart", cfg.restart)),
        backend=_backend(cfg, strategy, s),
        hp_factors=spread_factors(STRATEGIES[strategy].TUNABLE, i, cfg.islands,
                                  cfg.hp_spread, cfg.seed),
        run=run,
    )


def run_settings(cfg: Config) -> RunSettings:
    """What every island of ``cfg``'s run shares (one object for all its specs)."""
    return RunSettings(
        emigrants=max(1, cfg.migrants),
        # candidates are judged on their own returns, so a reward shift never moves it
        candidate_threshold=cfg.fitness_target,
        reeval_episodes=int(cfg.confirm_episodes),
        candidate_kinds=CANDIDATE_SETS[cfg.candidates],
        restart_patience=int(cfg.restart_patience),
        episodes_cap=None if cfg.episodes_cap is None else int(cfg.episodes_cap),
        probe_interval=int(cfg.probe_interval),
        migrant_episodes=int(cfg.migrant_episodes),
        adopt=cfg.migrant_rule == "adopt",
        reward_shift=float(cfg.reward_shift or 0.0),
        hp_spread=float(cfg.hp_spread),
    )


def spread_factors(names: tuple[str, ...], index: int, n: int, spread: float,
                   seed: int) -> dict[str, float]:
    """Island ``index`` of ``n``'s multiplier for each setting in ``names``: ``spread ** u``
    with ``u`` its place among ``n`` evenly spaced points of [-1, 1], the places shuffled
    per setting by ``seed`` (every island draws the same shuffles, so the islands cover the
    points once). One island, or a spread of 1: none."""
    if n < 2 or spread == 1.0:
        return {}
    u = np.linspace(-1.0, 1.0, n)
    rng = np.random.default_rng([int(seed), 0x5EED])  # the run's draw, not an island's
    return {k: float(spread ** u[rng.permutation(n)[index % n]]) for k in names}


def _backend(cfg: Config, strategy: str, s: dict[str, Any]) -> str | None:
    """An island's own evaluator backend (None: the run's): its spec's; else, for an island
    with a GPU whose strategy computes on a device (openai-es-nt) in a run that named no
    backend, the torch-native env when there is one, so that its population, envs and
    policy all stay on the GPU (islands/island/core.py)."""
    if s.get("backend"):
        return str(s["backend"])
    gpu = float(s.get("num_gpus", cfg.gpus_per_island)) > 0
    on_device = "device" in getattr(STRATEGIES[strategy], "OPTIONS", {})
    if gpu and on_device and cfg.backend == "auto" and cfg.env in TORCH_ENVS \
            and installed(cfg.env):
        return "torch"
    return None


def check_resources(plan: list[IslandSpec], nodes: list[dict[str, float]]) -> None:
    """ResourceError naming the missing resource if the islands cannot all be placed on
    ``nodes`` (each a dict of total resources), checked by first-fit packing."""
    totals: dict[str, float] = {}
    for n in nodes:
        for k, v in n.items():
            totals[k] = totals.get(k, 0.0) + v
    for spec in plan:
        _check_some_node_has(spec, spec.needs(), nodes, totals)
    unplaced = _first_fit(plan, nodes)
    if unplaced is not None:
        raise _cannot_pack(plan, unplaced, unplaced.needs(), totals)


def _first_fit(items: list[Any], nodes: list[dict[str, float]]) -> Any | None:
    """The first of ``items`` (anything with ``needs()``) that first-fit packing, largest
    first, cannot place on ``nodes``; None when all fit."""
    free = [dict(n) for n in nodes]
    for item in sorted(items, key=lambda s: -sum(s.needs().values())):
        need = item.needs()
        for n in free:
            if all(n.get(k, 0.0) + 1e-9 >= v for k, v in need.items()):
                for k, v in need.items():
                    n[k] -= v
                break
        else:
            return item
    return None


def plan_hosts(plan: list[IslandSpec], nodes: list[dict[str, float]],
               per_process: int | None = None) -> list[HostSpec]:
    """The processes for a plan that ``check_resources`` accepted: islands grouped
    (``group_islands``) where the groups still pack onto ``nodes``, else one per island."""
    hosts = group_islands(plan, per_process)
    if _first_fit(hosts, nodes) is not None:
        hosts = group_islands(plan, 1)
    return hosts


def _check_some_node_has(spec: IslandSpec, need: dict[str, float], nodes, totals) -> None:
    for k, v in need.items():
        if totals.get(k, 0.0) + 1e-9 < v or not any(n.get(k, 0) + 1e-9 >= v for n in nodes):
            have = max((n.get(k, 0.0) for n in nodes), default=0.0)
            raise ResourceError(
                f"island {spec.index} needs {k}={v:g} but no node in the cluster has "
                f"that much {k} (largest: {have:g}, cluster total: {totals.get(k, 0):g})")


def _cannot_pack(plan: list[IslandSpec], spec: IslandSpec, need: dict[str, float],
                 totals: dict[str, float]) -> ResourceError:
    total_need = {k: sum(s.needs().get(k, 0.0) for s in plan) for k in need}
    short = [k for k in need if total_need[k] > totals.get(k, 0.0) + 1e-9]
    if short:
        return ResourceError(
            f"the cluster cannot place all {len(plan)} islands: they need "
            + ", ".join(f"{k}={total_need[k]:g}" for k in short)
            + " in total, the cluster has "
            + ", ".join(f"{k}={totals.get(k, 0):g}" for k in short))
    return ResourceError(
        f"the cluster cannot place all {len(plan)} islands: no node has room for "
        f"island {spec.index} ({', '.join(f'{k}={v:g}' for k, v in need.items())})")


def _scaled(popsize: int | None, tuned: dict[str, Any], scale: int):
    """(popsize, table options) of one island ``scale`` times as large: ARS's top-b keeps
    its share of the directions (b of N becomes k b of k N), as Mania et al. (2018) scale b
    with N; other strategies' options (pycma's weights, OpenAI-ES's) follow popsize alone."""
    if scale == 1 or popsize is None:
        return popsize, tuned
    if tuned.get("top") is not None:
        tuned = {**tuned, "top": int(tuned["top"]) * scale}
    return int(popsize) * scale, tuned
