"""A cluster as a cost model, for the virtual-time runtime (``--runtime virtual``).

The cluster is described by a Ray cluster-launcher YAML as it is (``cluster/*.yaml`` or a
user's): its ``available_node_types`` give each node type's resources and worker count (a
type's ``max_workers``, else ``min_workers``: the cluster at full size, capped by the
file's own ``max_workers``), plus one head node. What Ray does not know goes in the
file's ``metadata`` (which Ray keeps and never interprets, so ``ray up`` still takes the
file), under ``islands_virtual``::

    metadata:
      islands_virtual:
        speed: {slow_worker: 0.5}        # per node type; 1 where not named
        straggler: {p: 0.05, factor: 5}  # a call 5x slower with probability 0.05
        jitter: 0.3                      # every call's seconds times lognormal noise
        latency_s: 0.0005                # one way, per message between processes
        coordinator_s: 0.0005            # the coordinator's work per island report
        failures_per_hour: 0.5           # per worker node: its processes die
        restart_s: 10                    # a dead process back, from its checkpoint
        head_reserved_cpus: 0.08         # the head's CPU the islands there do not get

Seconds per environment step and per evaluator round on one core of speed 1 are a
:class:`StepCost`, from a calibration on this machine (``runtime/calibration.py``).

A file with none of it describes homogeneous nodes of speed 1 with no stragglers, whose
head keeps ``DEFAULT_HEAD_RESERVED_CPUS`` for the processes every head runs beside any
islands placed there: the driver's loop, the coordinator, the candidate tester, Ray's GCS
and raylet (islands on the head run at ``(CPU - reserved) / CPU`` of its speed). Seconds
per environment step on one core of speed 1 come from a calibration on this machine
(``runtime/calibration.py``), not from this file, so every virtual second traces to a
measurement.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError

SECTION = "islands_virtual"
DEFAULT_LATENCY_S = 5e-4  # one way, a message between processes on a LAN
DEFAULT_COORDINATOR_S = 5e-4  # the coordinator's work per report (a few array copies)
DEFAULT_RESTART_S = 10.0  # a process Ray restarts: a new worker, imports, its checkpoint
# The head's CPU that islands placed there do not get: measured on this 2-core machine, the
# real runs' env steps per second against the model's with its per-round term, chosen on
# LunarLander-v3 seeds 6000-6009 (docs/results/virtual-time.md, stage 4).
DEFAULT_HEAD_RESERVED_CPUS = 0.08


@dataclass(frozen=True)
class Node:
    """One node of the virtual cluster: its type's name, CPUs, GPUs and speed (1: this
    machine's core; 0.5: each core does half the work in the same time)."""

    node_type: str
    cpus: float
    gpus: float = 0.0
    speed: float = 1.0


@dataclass(frozen=True)
class ClusterModel:
    nodes: tuple[Node, ...]
    latency_s: float = DEFAULT_LATENCY_S
    coordinator_s: float = DEFAULT_COORDINATOR_S
    straggler_p: float = 0.0
    straggler_factor: float = 1.0
    jitter: float = 0.0  # log-sd of an island call's noise (mean 1); 0: none, no draws
    # (an island's own calls; a synchronous population's workers have the stragglers)
    failures_per_hour: float = 0.0  # per worker node (the head, the coordinator's, never)
    restart_s: float = DEFAULT_RESTART_S
    head_reserved_cpus: float = DEFAULT_HEAD_RESERVED_CPUS  # (in the head's speed already)
    digest: str = ""  # sha256 of the file, first 16 hex digits
    source: str = ""  # the file's path
    node_types: dict[str, int] = field(default_factory=dict)  # type -> nodes
    head_type: str | None = None

    @property
    def cpus(self) -> float:
        return sum(n.cpus for n in self.nodes)

    def describe(self) -> str:
        """``4 x cpu_worker (16 CPU) + head (0 CPU): 64 CPUs``."""
        seen: dict[str, Node] = {}
        for n in self.nodes:
            seen.setdefault(n.node_type, n)
        parts = [f"{self.node_types[t]} x {t} ({n.cpus:g} CPU"
                 + (f", speed {n.speed:g}" if n.speed != 1 else "") + ")"
                 for t, n in seen.items()]
        return " + ".join(parts) + f": {self.cpus:g} CPUs"

    def fails(self, node: Node, seconds: float, rng: np.random.Generator) -> float | None:
        """When within a call of ``seconds`` on ``node`` the node fails (seconds into the
        call), or None: failures of a worker node come as a Poisson process."""
        if self.failures_per_hour <= 0 or node.node_type == self.head_type:
            return None
        t = float(rng.exponential(3600.0 / self.failures_per_hour))
        return t if t < seconds else None

    def straggle(self, rng: np.random.Generator) -> float:
        """A call's slowdown factor: ``straggler_factor`` with probability ``straggler_p``."""
        if self.straggler_p <= 0:
            return 1.0
        return self.straggler_factor if rng.random() < self.straggler_p else 1.0

    def jitter_factor(self, rng: np.random.Generator) -> float:
        """A call's noise: lognormal with log-sd ``jitter`` and mean 1, so the calls'
        mean seconds stay the calibration's. Real calls wander around the cost model's
        seconds (the OS, the tester and the coordinator beside them); how the islands'
        calls then interleave decides which migrants and statistics each call carries, so
        a run's episodes depend on it (docs/results/virtual-time.md, stage 13). No draw
        where ``jitter`` is 0: replays from before it stay bit for bit."""
        if self.jitter <= 0:
            return 1.0
        return float(math.exp(self.jitter * rng.standard_normal() - self.jitter ** 2 / 2))


@dataclass(frozen=True)
class StepCost:
    """Seconds of an evaluator's work on one core of speed 1, in three terms: per env step
    (the env's physics and the policy's share of a batched forward pass), per *round* (one
    batched step of all the evaluator's live envs: its send, recv and the fixed cost of a
    forward pass, which short episodes pay for few steps) and per *episode* (its reset and
    its end: a MuJoCo body that falls ends its episode in contact-rich steps that a hopping
    one never takes, so short episodes cost more per step; measured on a late population
    beside the early one: ``runtime/calibration.py``). Each term has its own serial
    fraction: the part that more evaluator threads do not speed up (Amdahl; above 1, a
    cost that grows with threads, as a round's hand-off between them). A calibration
    without a term (``s_per_round`` or ``s_per_episode`` 0) is the model of the
    calibrations before it, so their replays keep their clocks."""

    s_per_step: float
    serial_fraction: float = 0.0
    s_per_round: float = 0.0
    round_serial_fraction: float = 1.0
    s_per_episode: float = 0.0
    episode_serial_fraction: float = 1.0

    @classmethod
    def of(cls, cal: dict[str, Any]) -> StepCost:
        """The cost of a calibration record (``calibration.json``)."""
        return cls(float(cal["s_per_step"]), float(cal.get("serial_fraction", 0.0)),
                   float(cal.get("s_per_round", 0.0)),
                   float(cal.get("round_serial_fraction", 1.0)),
                   float(cal.get("s_per_episode", 0.0)),
                   float(cal.get("episode_serial_fraction", 1.0)))

    def seconds(self, steps: float, rounds: float = 0.0, par: float = 1.0,
                episodes: float = 0.0) -> float:
        """``steps`` env steps of ``episodes`` episodes in ``rounds`` rounds on ``par``
        cores' worth of threads (below 1: a share of one core, every part slower by
        1 / par)."""
        terms = ((steps * self.s_per_step, self.serial_fraction),
                 (rounds * self.s_per_round, self.round_serial_fraction),
                 (episodes * self.s_per_episode, self.episode_serial_fraction))
        if par < 1:
            return sum(t for t, _ in terms) / par
        return sum(t * (f + (1.0 - f) / par) for t, f in terms)

    def describe(self) -> str:
        """``64.40 us per env step (serial 0.38) + 120.0 us per round (serial 0.90) + 1.2 ms
        per episode (serial 0.50)``."""
        out = f"{self.s_per_step * 1e6:.2f} us per env step (serial {self.serial_fraction:.2f})"
        if self.s_per_round:
            out += (f" + {self.s_per_round * 1e6:.1f} us per round (serial "
                    f"{self.round_serial_fraction:.2f})")
        if self.s_per_episode:
            out += (f" + {self.s_per_episode * 1e3:.2f} ms per episode (serial "
                    f"{self.episode_serial_fraction:.2f})")
        return out + " on one core"


def _number(x: Any, what: str, low: float | None = None, strict: bool = False) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ConfigError(f"--cluster: {what} must be a number, got {x!r}") from None
    if not math.isfinite(v) or (low is not None and (v <= low if strict else v < low)):
        bound = f"> {low:g}" if strict else f">= {low:g}"
        raise ConfigError(f"--cluster: {what} must be {bound}, got {x!r}")
    return v


def load_cluster(path: str | Path) -> ClusterModel:
    """The cost model of the Ray cluster-launcher YAML at ``path`` (module docstring);
    ConfigError with one line on a file that is missing, does not parse, or holds a
    negative worker count, a speed <= 0 or a probability outside [0, 1]."""
    import yaml

    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"--cluster: cannot read {path}: {e.strerror or e}") from None
    try:
        doc = yaml.safe_load(raw)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"--cluster: {path} is not valid YAML{where}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("available_node_types"), dict):
        raise ConfigError(f"--cluster: {path} is not a Ray cluster file (no "
                          f"available_node_types)")
    extra = (doc.get("metadata") or {}).get(SECTION) or {}
    if not isinstance(extra, dict):
        raise ConfigError(f"--cluster: metadata.{SECTION} must be a mapping")
    speeds = extra.get("speed") or {}
    types = doc["available_node_types"]
    for name in speeds:
        if name not in types:
            raise ConfigError(f"--cluster: metadata.{SECTION}.speed names node type "
                              f"{name!r}, which the file does not have")
    reserved = _number(extra.get("head_reserved_cpus", DEFAULT_HEAD_RESERVED_CPUS),
                       f"{SECTION}.head_reserved_cpus", 0.0)
    nodes, counts = _nodes(doc, types, speeds, reserved)
    strag = extra.get("straggler") or {}
    p = _number(strag.get("p", 0.0), f"{SECTION}.straggler.p", 0.0)
    if p > 1:
        raise ConfigError(f"--cluster: {SECTION}.straggler.p must be <= 1, got {p:g}")
    return ClusterModel(
        nodes=tuple(nodes), node_types=counts,
        latency_s=_number(extra.get("latency_s", DEFAULT_LATENCY_S), f"{SECTION}.latency_s", 0),
        coordinator_s=_number(extra.get("coordinator_s", DEFAULT_COORDINATOR_S),
                              f"{SECTION}.coordinator_s", 0),
        straggler_p=p, jitter=_number(extra.get("jitter", 0.0), f"{SECTION}.jitter", 0.0),
        straggler_factor=_number(strag.get("factor", 1.0), f"{SECTION}.straggler.factor",
                                 0.0, strict=True),
        failures_per_hour=_number(extra.get("failures_per_hour", 0.0),
                                  f"{SECTION}.failures_per_hour", 0.0),
        restart_s=_number(extra.get("restart_s", DEFAULT_RESTART_S), f"{SECTION}.restart_s",
                          0.0),
        head_type=doc.get("head_node_type"), head_reserved_cpus=reserved,
        digest=hashlib.sha256(raw).hexdigest()[:16], source=str(path))


def _nodes(doc: dict[str, Any], types: dict[str, Any], speeds: dict[str, Any],
           reserved: float) -> tuple[list[Node], dict[str, int]]:
    """The head node and each worker type's nodes (its max_workers, else min_workers),
    within the file's own max_workers; the head's speed less its ``reserved`` CPUs."""
    head = doc.get("head_node_type")
    cap = doc.get("max_workers")
    left = math.inf if cap is None else _count(cap, "max_workers")
    nodes, counts = [], {}
    for name, t in types.items():
        if not isinstance(t, dict):
            raise ConfigError(f"--cluster: node type {name!r} must be a mapping")
        res = t.get("resources") or {}
        cpus = _number(res.get("CPU", 0), f"node type {name!r}'s CPU", 0)
        gpus = _number(res.get("GPU", 0), f"node type {name!r}'s GPU", 0)
        speed = _number(speeds.get(name, 1.0), f"{SECTION}.speed of {name!r}", 0.0,
                        strict=True)
        if name == head:
            n = 1
            if cpus > 0:
                if reserved >= cpus:
                    raise ConfigError(f"--cluster: {SECTION}.head_reserved_cpus "
                                      f"({reserved:g}) must be below the head's CPUs "
                                      f"({cpus:g}); give the head CPU: 0 for no islands there")
                speed *= (cpus - reserved) / cpus
        else:
            want = t.get("max_workers", t.get("min_workers", 0))
            n = int(min(_count(want, f"node type {name!r}'s worker count"), left))
            left -= n
        counts[name] = n
        nodes += [Node(name, cpus, gpus, speed)] * n
    if not any(n.cpus > 0 for n in nodes):
        raise ConfigError("--cluster: the file's nodes have no CPUs for islands")
    return nodes, counts


def _count(x: Any, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise ConfigError(f"--cluster: {what} must be a whole number, got {x!r}")
    if x < 0:
        raise ConfigError(f"--cluster: {what} must be >= 0, got {x}")
    return x
