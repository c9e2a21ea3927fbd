"""What crosses process boundaries in a run: plain dataclasses of numpy arrays and numbers.

One generation's trip (see docs/DEVELOPING.md): the loop calls an island's ``evolve(k,
immigrants, obs_stats)``, which returns an :class:`EvolveResult`; the loop forwards that
result to the coordinator, whose answer is a :class:`CoordinatorReply`; the reply's
immigrants (:class:`Emigrants` batches from other islands) and merged observation
statistics travel with the island's next ``evolve`` call. The evaluator an island builds
is described by an ``envs.EvalSpec``; the island itself by a ``planning.IslandSpec``.

Observation statistics travel as ``RunningMeanStd.state_dict()`` (``{"count", "mean",
"var"...}`` as policies.obsnorm defines it); an island's new observations since its last
report travel as a moment delta ``{"count", "mean", "m2"}`` (Chan et al., mergeable).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Emigrants:
    """Genomes leaving island ``source`` after its generation ``generation``: its best, with
    the fitness measured there, best first."""

    params: np.ndarray  # (m, D)
    fitness: np.ndarray  # (m,)
    source: int
    generation: int = 0
    sent_at: float = 0.0  # wall clock (time.time) when the source's call ended; 0: unknown
    # the source's fixed strategy settings then (Strategy.hyperparameters): what an island
    # that adopts one of these genomes takes with it under --hp-spread (island/spread.py)
    hyperparameters: dict[str, float] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(np.size(self.fitness))


@dataclass
class IslandReport:
    """One island's state after an ``evolve`` call: one row of ``metrics.parquet``."""

    island: int
    strategy: str
    generation: int
    evals: int = 0
    env_steps: int = 0
    frames: int = 0
    # training episodes, cumulative: evals x episodes per evaluation, plus the candidates'
    # re-evaluations (``reevaluations`` genomes x ``RunSettings.reeval_episodes``)
    episodes: int = 0
    fitness_max: float = math.nan  # of the last generation's population (NaN: none finite)
    fitness_mean: float = math.nan
    best_so_far: float = -math.inf  # the strategy's best fitness ever measured
    immigrants: int = 0  # migrant genomes accepted, cumulative
    immigrants_new: int = 0  # accepted in this call
    rejected: int = 0  # migrant genomes refused (wrong dimension), cumulative
    screened_out: int = 0  # migrants that lost to the center on fresh episodes, cumulative
    adopted: int = 0  # immigrants that became the center (--migrant-rule adopt), cumulative
    call_s: float = 0.0
    evals_per_s: float = 0.0
    steps_per_s: float = 0.0
    island_wall_s: float = 0.0
    obs_count: float = 0.0  # observations behind the island's normalization (0: none)
    restarts: int = 0  # strategy restarts against stagnation (island.restarts), cumulative
    reevaluations: int = 0  # candidate genomes re-evaluated before an offer, cumulative
    episodes_per_eval: int = 1  # now (grows where --episodes-cap lets it: island.resampling)
    # Spearman's rho of the latest ranking probe at the current episodes (None: none yet)
    rank_agreement: float | None = None
    peak_rss_mb: float = 0.0  # the island process's peak resident memory so far
    # the strategy's step size now and the length of its search center: a center that
    # grows while sigma does not makes every step relatively smaller (tanh saturates, an
    # argmax or tanh head is scale-free), which is how a run slows down unseen
    sigma: float = math.nan
    center_norm: float = math.nan
    lr: float = math.nan  # the strategy's step size lr now (ARS, OpenAI-ES; --hp-spread)

    def row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class CandidateOffer:
    """A genome an island offers for a test against the target (``islands.candidates``).

    ``kind`` "sample": the best genome evaluated in the call; "center": the search center
    (distribution mean; GA elite) at that moment. ``fitness``: the sample's training
    fitness. ``reeval`` / ``reeval_se``: the genome's mean return over ``reeval_episodes``
    fresh training episodes and its standard error (the island's re-evaluation,
    ``RunSettings.reeval_episodes``: ``--confirm-episodes``); None when not re-evaluated."""

    kind: str
    params: np.ndarray
    fitness: float
    reeval: float | None = None
    reeval_episodes: int = 0
    reeval_se: float = 0.0

    @property
    def score(self) -> float:
        """What the candidate queue ranks by: the re-evaluation where there is one."""
        return self.fitness if self.reeval is None else self.reeval

    def plausible(self, target: float) -> bool:
        """Whether a test could pass: the re-evaluation is not more than two standard
        errors below ``target`` (the tester's sequential test applies the same rule to its own
        episodes). A genome whose true mean is just above the target re-evaluates below
        it about half the time; a noise winner lands far below."""
        if self.reeval is None:
            return self.fitness >= target
        return self.reeval + 2.0 * self.reeval_se >= target


@dataclass
class IslandCall:
    """One island's next ``evolve`` call, loop -> its host's ``evolve_batch``: ``k``
    generations after accepting ``immigrants`` and adopting ``obs_stats`` (merged
    statistics); ``want_offers`` False: the tester's queue is full, no candidate offers."""

    island: int
    k: int = 1
    immigrants: list[Emigrants] | None = None
    obs_stats: dict[str, Any] | None = None
    want_offers: bool = True


@dataclass
class EvolveResult:
    """What ``IslandCore.evolve`` returns."""

    report: IslandReport
    emigrants: Emigrants  # the best genomes evaluated during the call
    # Only once the best sample of the call reached the island's candidate threshold (a
    # large network's center is megabytes): its best sample and its center.
    offers: list[CandidateOffer] = field(default_factory=list)
    obs_delta: dict[str, Any] | None = None  # new observation moments since the last call
    obs_stats: dict[str, Any] | None = None  # the statistics this call normalized with
    # seconds from each immigrant batch's emigration (its sent_at) to this call taking it
    migration_latency_s: list[float] = field(default_factory=list)
    node: str = ""  # Ray node id of the process that ran the call (set by the actor)


@dataclass
class IslandFailure:
    """In place of an :class:`EvolveResult`: island ``island``'s call raised (its process is
    fine; the island is dropped from the run). ``message``: the error, one line."""

    island: int
    message: str


@dataclass
class HofSummary:
    """Who holds the hall of fame: the best fitness any island measured."""

    fitness: float = -math.inf
    island: int | None = None
    generation: int | None = None


@dataclass
class HallOfFame(HofSummary):
    """The hall of fame with its genome and the statistics it was evaluated under."""

    params: np.ndarray | None = None
    obs_stats: dict[str, Any] | None = None

    def summary(self) -> HofSummary:
        return HofSummary(self.fitness, self.island, self.generation)


@dataclass
class CoordinatorReply:
    """The coordinator's answer to one island report, for that island's next call."""

    immigrants: list[Emigrants]
    obs_stats: dict[str, Any] | None  # merged statistics, when this island is due for them
    hof: HofSummary
    # a stop asked from outside the driver (``islands.status --stop``): its reason; the
    # driver ends the run as on a budget
    stop: str | None = None


@dataclass
class RunStatus:
    """The run as the loop sees it after each island report, for what watches it (the live
    table, TensorBoard, a Tune trial): the hall of fame's summary, every report row and
    test so far, an elastic run's events, seconds since the run began."""

    hof: dict[str, Any] = field(default_factory=lambda: {"fitness": -math.inf})
    target: float | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    tests: list[dict[str, Any]] = field(default_factory=list)
    elastic: list[dict[str, Any]] = field(default_factory=list)
    elapsed: float = 0.0
    resumed_at: float = 0.0  # a resumed run's seconds before this session (its clock's start)
    # the run's totals when this session began ({"total_episodes": ...}; empty: all zero)
    start_totals: dict[str, int] = field(default_factory=dict)


@dataclass
class IslandInfo:
    """What an island tells about itself once built."""

    island: int
    strategy: str
    dim: int
    popsize: int
    device: str
    num_threads: int
    backend: str
    policy_spec: dict[str, Any]
    generation: int
    restored_generation: int | None
    node: str | None = None  # Ray node id (set by the actor)
    # cumulative counters at start (a resumed island's, from its checkpoint)
    counters: dict[str, int] = dataclasses.field(default_factory=dict)
    gpu_ids: list[str] = dataclasses.field(default_factory=list)
