"""The ``Config`` dataclass: every field of a run, its default and its one-line help.

This is the single place for defaults. Each field's metadata says how its value is read
(``kind``, see :mod:`islands.config.fieldtypes`), which names it accepts (``choices``, taken from
the registries) and how ``--help`` shows it (``metavar``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from envs.objective import FITNESS, Objective, Scale
from envs.spaces import BACKENDS
from envs.spec import EvalSpec
from envs.synthetic import parse_synthetic
from policies import POLICIES

from .. import topology as topo
from ..candidates import CANDIDATE_SETS
from ..envdefaults import GENERIC
from ..errors import ConfigError  # noqa: F401  (defined below config: costmodel raises it)
from ..island.restarts import DEFAULT_PATIENCE, RESTART_POLICIES
from ..persistence.checkpointing import CheckpointSpec
from ..seeds import candidate_test_seed, retest_seed
from ..strategies import STRATEGIES

DEVICES = ("auto", "cpu", "cuda")
# How candidates are tested when the user leaves it unset (config/resolve.py): an env or a
# noisy function as issue 42 chose (docs/results/confirmation.md); a deterministic function
# (a user's, or a noiseless synthetic id) by one evaluation of its best sample, whose value
# a second evaluation would only repeat.
NOISY_TESTS = {"confirm_episodes": 10, "test_episodes": 100, "candidates": "center"}
DETERMINISTIC_TESTS = {"confirm_episodes": 0, "test_episodes": 1, "candidates": "sample",
                       "retest_episodes": 0}
# Keys an entry of ``island_specs`` may set (all optional).
ISLAND_SPEC_KEYS = (
    "strategy", "popsize", "sigma", "options", "episodes", "num_cpus", "num_gpus",
    "resources", "slowdown_s", "restart", "backend",
)


FILL = "fill"  # --islands / --eval-workers: as many as the cluster's CPUs hold (resolve)
RUNTIMES = ("ray", "virtual")  # what runs the islands (runtime/archipelago, runtime/virtual)


def flag(name: str) -> str:
    """The command-line flag of field ``name``: ``--migration-interval``."""
    return "--" + name.replace("_", "-")


def _opt(default: Any, help: str, kind: str = "str", choices: tuple[str, ...] | None = None,
         metavar: str | None = None) -> Any:
    meta = {"help": help, "kind": kind, "choices": choices, "metavar": metavar}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def _names(registry) -> str:
    return ", ".join(registry)


@dataclass
class Config:
    # ---- what to solve ----------------------------------------------------------------
    config: str | None = _opt(
        None, "YAML file setting any of these fields by name; command-line flags override it",
        metavar="FILE.yaml")
    env: str = _opt("CartPole-v1", "environment id (Gymnasium or EnvPool name)", metavar="ID")
    env_module: str | None = _opt(
        None, "module to import in every process first (registers custom Gymnasium envs); "
        "islands.run keeps a notebook's functions and env classes here (byvalue:...)",
        metavar="MODULE")
    env_kwargs: dict = _opt({}, "keyword arguments for the environment, as JSON", "json",
                            metavar="JSON")
    problem: str | None = _opt(
        None, "your own objective instead of an env: package.module:function of a (P, D) "
        "population or of one (D,) genome; needs --dim. Its values are maximized, or with "
        "--minimize minimized (a cost); --target, the summary, the live table and "
        "TensorBoard then speak the function's own values: the cost, not minus the cost",
        metavar="MODULE:FUNCTION")
    dim: int | None = _opt(None, "the dimension of --problem's genomes", "optint",
                           metavar="D")
    minimize: bool = _opt(False, "--problem's function is a cost to minimize (--target: the "
                          "cost to get down to)", "bool")
    noisy: bool = _opt(
        False, "--problem's function is random: a candidate's test and confirmation average "
        "--test-episodes and --retest-episodes calls, as an env's episodes (default: "
        "deterministic, a candidate reaching the target is tested by one call)", "bool")
    bounds: list | None = _opt(
        None, "--problem's box LOW,HIGH: genomes are clipped into it before the function "
        "sees them, and start uniformly inside it", "bounds", metavar="LOW,HIGH")
    backend: str = _opt(
        "auto", f"evaluator: {_names(b for b in BACKENDS if b != 'auto')}, or auto (EnvPool "
        "if it has the env)", choices=tuple(BACKENDS))
    target: Any = _opt(
        "auto", "stop when the best genome's test mean reaches this (with --minimize: a "
        "cost at or below it); auto: the env table's solved score, none: never", "target",
        metavar="F|auto|none")
    confirm_episodes: int | None = _opt(
        None, "fresh training episodes on which an island re-evaluates a genome whose "
        "training fitness reached the target, before it offers it for a test (the island's "
        "re-evaluation, not the confirmation: that is --retest-episodes; 0: offer it on "
        f"its training fitness); default: {DETERMINISTIC_TESTS['confirm_episodes']} for a "
        f"deterministic function, else {NOISY_TESTS['confirm_episodes']}", "optint",
        metavar="N")
    test_episodes: int | None = _opt(
        None, "episodes of the test that validates a candidate (and the final test), on seeds "
        f"disjoint from training; default: {DETERMINISTIC_TESTS['test_episodes']} for a "
        f"deterministic function, else {NOISY_TESTS['test_episodes']}", "optint",
        metavar="N")
    candidates: str | None = _opt(
        None, "which genomes an island offers for a test once a sample reaches the "
        "target: its search center (distribution mean, GA elite), its best sample, or both in "
        f"turn: {' / '.join(CANDIDATE_SETS)}; default: {DETERMINISTIC_TESTS['candidates']} "
        f"for a deterministic function (its value is exact), else {NOISY_TESTS['candidates']}",
        choices=tuple(CANDIDATE_SETS), metavar="KINDS")
    retest_episodes: int | None = _opt(
        None, "episodes of the confirmation: a genome whose test reached the target is tested "
        "once more on fresh episodes, and the run is solved only when that reaches the target "
        "too; an unsolved run's chosen genome gets one at the end (0: none, the selecting "
        "test decides; default: 0 for a deterministic function, else as many as "
        "--test-episodes)", "optint", metavar="N")
    test_max_episode_steps: int | None = _opt(
        None, "episode limit of the test; default: the environment's own limit (the standard "
        "task)", "optint", metavar="N")
    # ---- the islands --------------------------------------------------------------------
    islands: int | str | None = _opt(
        None, "number of islands (default: len(island_specs), else the env table's where its "
        "row names one, else one per CPU of this machine), or fill: as many islands of "
        "--cpus-per-island (default 1) as the cluster's nodes hold (--runtime virtual: the "
        "--cluster file's; --address: the joined cluster's nodes up at the start; the "
        "embedded Ray: this machine's CPUs)", "fillint", metavar="N")
    strategy: str | None = _opt(
        None, f"strategy per island, comma list assigned round-robin ({_names(STRATEGIES)}); "
        "default: env table", metavar="NAMES")
    strategy_options: dict = _opt({}, "extra keyword arguments for every island's strategy, as "
                                  "JSON", "json", metavar="JSON")
    island_specs: list | None = _opt(
        None, f"per-island list of {{{', '.join(ISLAND_SPEC_KEYS)}}} (YAML list, or JSON)",
        "specs", metavar="JSON")
    policy: str | None = _opt(
        None, f"policy network: {_names(POLICIES)}; default: env table",
        choices=tuple(POLICIES))
    hidden: list | None = _opt(
        None, "hidden layer sizes, e.g. 64,64, or linear for none (neuromod: one size); "
        "default: env table",
        "hidden", metavar="H1,H2")
    policy_options: dict = _opt({}, "extra keyword arguments for the policy, as JSON", "json",
                                metavar="JSON")
    popsize: int | None = _opt(None, "population size per island; default: env table",
                               "optint", metavar="N")
    popsize_scale: int | str = _opt(
        1, "multiply every island's population (the env table's, --popsize or an island "
        "spec's) by K, and the table's ARS top-b with it: one island as large as K islands "
        "together (experiments/islands-vs-one.yaml); fill (with --eval-workers): the "
        "smallest K that gives each worker an episode a generation", "fillint", metavar="K")
    sigma: float | None = _opt(
        None, "initial step size / mutation strength for every island; default: env table "
        "for its strategy, else the strategy's own", "optfloat", metavar="S")
    episodes: int | None = _opt(None, "episodes per fitness evaluation; default: env table",
                                "optint", metavar="N")
    episodes_cap: int | None = _opt(
        None, "let an island double its episodes per evaluation, up to N, when it stagnates "
        "for --restart-patience generations (or its ranking probes say so, see "
        "--probe-interval), before it restarts; default: env table, else none (fixed "
        "--episodes; set N to --episodes to fix them where the table has a cap); see "
        "islands/island/resampling.py", "optint", metavar="N")
    probe_interval: int = _opt(
        0, "with --episodes-cap: evaluate every G-th generation twice, on independent "
        "episodes, and double the episodes when the two rankings agree less than 0.5 "
        "(Spearman, over 3 probes) while the population mean stays flat (0: no probes; "
        "experimental, see islands/island/resampling.py)", "int", metavar="G")
    reward_shift: float | None = _opt(
        None, "subtract S from every training step's reward: a survival bonus removed from "
        "the fitness, as ARS trains Hopper, Walker2d, Ant (S = 1) and Humanoid (S = 5); tests "
        "and candidates (offered and confirmed) use the task's own returns; default: env "
        "table, else 0", "optfloat", metavar="S")
    migrant_episodes: int | None = _opt(
        None, "re-evaluate every immigrant and the receiving island's search center on N "
        "fresh episodes and inject only the immigrants that beat the center there (0: inject "
        "on the sender's fitness); default: env table, else 0; see islands/island/screen.py",
        "optint", metavar="N")
    migrant_rule: str = _opt(
        "inject", "what an island does with immigrants: inject (each enters the strategy as "
        "one sample: pycma's inject, OpenAI-ES/ARS re-center on one that beats their best "
        "so far) or adopt (when the best immigrant beats the island's latest generation's "
        "best, the island moves its search center there: selection among islands; see "
        "islands/island/adopt.py)", choices=("inject", "adopt"))
    hp_spread: float = _opt(
        1.0, "spread the strategy's fixed settings (ARS/OpenAI-ES sigma and lr, GA sigma) "
        "over the islands, log-evenly from 1/F to F times their value; with --migrant-rule "
        "adopt an island that adopts a genome takes its sender's settings too, perturbed by "
        "1/1.2 or 1.2 and kept within that range (population-based training across "
        "islands; islands/island/spread.py). "
        "1: every island the same", "float", metavar="F")
    max_episode_steps: int | None = _opt(
        None, "episode step limit during training; default: env table", "optint",
        metavar="N")
    obs_norm: bool | None = _opt(
        None, "observation normalization with statistics merged across islands (on/off); "
        "default: env table", "optbool", metavar="on|off")
    restart: str = _opt(
        "none", "restart an island's strategy when it stagnates: none, ipop (fresh start, "
        "popsize doubled each time), bipop (alternating large and small populations), hof "
        "(around the best genome the island knows); see islands/island/restarts.py",
        choices=RESTART_POLICIES)
    restart_patience: int | None = _opt(
        None, "G, the stagnation window: --restart restarts an island when, over its last G "
        "generations, neither the median of their medians nor of their best values beats "
        "the G generations before; --episodes-cap resamples after G generations without a "
        f"new best or median record; default: env table, else {DEFAULT_PATIENCE}", "optint",
        metavar="G")
    # ---- migration ----------------------------------------------------------------------
    topology: str = _opt("ring", "migration graph: ring, full, random (new random targets each "
                         "round), edges (see --edges)", choices=topo.KINDS)
    topology_degree: int = _opt(1, "targets per island per round for --topology random", "int",
                                metavar="K")
    edges: str | None = _opt(None, "explicit migration edges for --topology edges, e.g. "
                             "0>1,1>2,2>0 (YAML: list of [src, dst])", "edges", metavar="EDGES")
    migration_interval: int | None = _opt(
        None, "generations of an island between its emigrations; default: env table, else "
        f"{GENERIC['migration_interval']}", "optint", metavar="G")
    migrants: int = _opt(2, "genomes an island sends per migration (its best), 0: isolated",
                         "int", metavar="K")
    obs_sync_interval: int = _opt(5, "generations between pushes of merged observation "
                                  "statistics to an island", "int", metavar="G")
    gens_per_call: int = _opt(1, "generations an island runs per call (one report each)",
                              "int", metavar="K")
    # ---- when to stop -------------------------------------------------------------------
    generations: int | None = _opt(None, "generations per island at most; default: env table",
                                   "optint", metavar="N")
    time_budget: float | None = _opt(None, "wall-clock seconds of evolution at most",
                                     "optfloat", metavar="SECONDS")
    max_evals: int | None = _opt(
        None, "fitness evaluations at most, summed over all islands (the evals column)",
        "optint", metavar="N")
    max_episodes: int | None = _opt(
        None, "training episodes at most, summed over all islands", "optint", metavar="N")
    max_env_steps: int | None = _opt(
        None, "training environment steps at most, summed over all islands", "optint",
        metavar="N")
    # ---- where it runs ------------------------------------------------------------------
    seed: int = _opt(0, "random seed of the run (islands derive theirs from it)", "int",
                     metavar="N")
    cpus_per_island: float | None = _opt(
        None, "CPUs per island; default: the cluster's CPUs shared equally", "optfloat",
        metavar="C")
    wait_for_nodes: float = _opt(
        600.0, "on a cluster with an autoscaler: seconds to wait for the nodes the islands "
        "need (elsewhere a run that does not fit fails at once)", "float", metavar="SECONDS")
    elastic: str | None = _opt(
        None, "grow and shrink with the cluster between MIN and MAX islands: nodes that join "
        "get new islands (seeded from the hall of fame), islands of lost nodes move to free "
        "CPUs or retire; --islands is then the start (default MIN), --cpus-per-island the "
        "share each new island takes (default 1); see islands/elastic.py", "elastic",
        metavar="MIN:MAX")
    islands_per_process: int | None = _opt(
        None, "islands hosted by one Ray worker process; default: islands with less than one "
        "CPU each share a process per CPU (16 islands on 2 CPUs: 2 processes), others get "
        "their own", "optint", metavar="N")
    gpus_per_island: float = _opt(0.0, "GPUs per island (fractions share a GPU); on a "
                                  "cluster with gpu_node/cpu_node resources, GPU islands go "
                                  "to gpu_node nodes, CPU islands to cpu_node nodes", "float",
                                  metavar="G")
    resources_per_island: dict = _opt(
        {}, "custom Ray resources per island, e.g. gpu_node=1 or JSON", "resources",
        metavar="NAME=AMOUNT")
    device: str = _opt("auto", "policy device: auto (CUDA when the island got a GPU), cpu, "
                       "cuda", choices=DEVICES)
    address: str | None = _opt(
        None, "Ray cluster to join (auto: the running one); default: RAY_ADDRESS, else start "
        "a local Ray", metavar="ADDR")
    working_dir: str | None = _opt(
        None, "directory Ray ships to every node and puts on the islands' path (Ray's "
        "runtime_env working_dir): the modules of --problem / --env-module on a cluster",
        metavar="DIR")
    namespace: str = _opt("islands", "Ray namespace of the named actors (island-00, ..., "
                          "coordinator)", metavar="NS")
    dashboard: bool = _opt(True, "start the Ray dashboard (http://127.0.0.1:8265, this "
                           "machine only) with the embedded Ray (on/off)", "bool",
                           metavar="on|off")
    # ---- runtime ------------------------------------------------------------------------
    runtime: str = _opt("ray", "ray: islands as Ray actors on real cores; virtual: in this "
                        "process on a virtual clock modelling --cluster's nodes (real "
                        "episodes, modelled seconds; reproducible from the seed)",
                        choices=RUNTIMES)
    cluster: str | None = _opt(
        None, "the cluster a --runtime virtual run models: a Ray cluster-launcher YAML "
        "(cluster/cpu.yaml; node speeds, stragglers, latency under metadata.islands_virtual)",
        metavar="FILE")
    calibration: str | None = _opt(
        None, "--runtime virtual: seconds per env step from this calibration.json (an "
        "earlier run's, for a replay), or from DIR/calibration-<env>.json (one directory "
        "for a study's tasks); default: measured on this machine at the start",
        metavar="FILE|DIR")
    eval_workers: int | str | None = _opt(
        None, "--runtime virtual: a synchronous population (OpenAI ES's and EvoTorch's "
        "Ray-actor shape): each island's population evaluated by N one-CPU workers across "
        "the cluster's nodes, every generation waiting for its slowest worker; fill: as "
        "many as the cluster's whole CPUs hold", "fillint", metavar="N")
    # ---- output -------------------------------------------------------------------------
    out: str | None = _opt(None, "run directory; default: runs/<env>-<timestamp>", metavar="DIR")
    quiet: bool = _opt(False, "no live table or progress lines (on/off)", "bool",
                       metavar="on|off")
    log_interval: float = _opt(5.0, "seconds between progress lines when stdout is not a "
                               "terminal", "float", metavar="SECONDS")
    tensorboard: bool = _opt(True, "TensorBoard scalars per island and for the archipelago "
                             "in DIR/tb (tensorboard --logdir runs/) (on/off)", "bool",
                             metavar="on|off")
    wandb: str | None = _opt(None, "also log the scalars to this Weights & Biases project "
                             "(needs pip install wandb; WANDB_MODE=offline works without "
                             "network)", metavar="PROJECT")
    # ---- fault tolerance ----------------------------------------------------------------
    checkpoint_interval: int = _opt(
        10, "generations of an island between its checkpoints (0: by time only)", "int",
        metavar="G")
    checkpoint_seconds: float = _opt(
        60.0, "seconds between checkpoints of an island or the coordinator at most (0: by "
        "generations only); a final one is written at the end of the run", "float",
        metavar="SECONDS")
    checkpoint_uri: str | None = _opt(
        None, "where checkpoints go: a directory (on a shared filesystem for clusters) or a "
        "pyarrow.fs URI such as s3://bucket/run; default: DIR/checkpoints", metavar="URI")
    resume: str | None = _opt(
        None, "continue the run in DIR from its checkpoints (config from DIR/config.yaml; "
        "flags given override it, e.g. --time-budget)", metavar="DIR")
    max_restarts: int = _opt(
        -1, "restarts of a dead island or coordinator actor (-1: unlimited, 0: none); a "
        "restarted actor reloads its last checkpoint", "int", metavar="N")
    debug_exit_island: int | None = _opt(
        None, "debug (fault tests): this island exits its process once, at "
        "--debug-exit-after-gen", "optint", metavar="I")
    debug_exit_after_gen: int | None = _opt(
        None, "debug (fault tests): generation at which --debug-exit-island exits",
        "optint", metavar="G")
    # ---- not a flag ---------------------------------------------------------------------
    # The ``checkpoint_uri`` that ``resolve`` derived from ``out`` (None: the field holds a
    # user's choice or nothing). Remembering it lets a config whose ``out`` moved be
    # resolved to the new default, and keeps the default out of ``config.yaml`` so that a
    # moved run directory resumes from its own checkpoints.
    _checkpoint_default: str | None = field(default=None, repr=False)

    # ------------------------------------------------------------------------------------
    def to_yaml_dict(self) -> dict[str, Any]:
        """Plain values for ``config.yaml``: everything but ``config``, ``out`` and ``resume``
        (the run directory is where the file lives; a rerun gets a new one), with
        ``checkpoint_uri`` unset when it is the default for the run directory."""
        d = dataclasses.asdict(self)
        for name in ("config", "out", "resume", "_checkpoint_default"):
            d.pop(name)
        if self.checkpoint_uri == self._checkpoint_default:
            d["checkpoint_uri"] = None
        return d

    def eval_spec(self) -> EvalSpec:
        """What every island evaluates on: ``episodes`` per evaluation, the training step
        limit."""
        return EvalSpec(
            env_id=self.env, backend=self.backend, policy=self.policy,
            policy_options=policy_options(self), episodes=self.episodes,
            max_episode_steps=self.max_episode_steps, obs_norm=bool(self.obs_norm),
            env_kwargs=dict(self.env_kwargs) or None, env_module=self.env_module,
            objective=self.objective(),
        )

    def objective(self) -> Objective | None:
        """The user's objective ``--problem`` and its settings make (None for an env); one
        line ObjectiveError for settings that do not fit."""
        if self.problem is None:
            return None
        return Objective(self.problem, self.dim or 0, bool(self.minimize),
                         None if self.bounds is None else tuple(self.bounds),
                         bool(self.noisy),
                         self.target if isinstance(self.target, (int, float)) else None)

    @property
    def scale(self) -> Scale:
        """How the run shows its values: a user's function in its own scale (the cost, not
        minus the cost), an env's fitness as it is."""
        obj = self.objective()
        return FITNESS if obj is None else obj.scale

    @property
    def fitness_target(self) -> float | None:
        """The target on the fitness the strategies maximize, with which candidates and
        tests are compared: ``-target`` for a cost (``--minimize``), else ``target``."""
        if not isinstance(self.target, (int, float)):
            return None
        obj = self.objective()
        return float(self.target) if obj is None else obj.fitness_target

    def test_spec(self) -> EvalSpec:
        """What a test evaluates on: ``test_episodes`` episodes, the test step limit."""
        return self.eval_spec().replace(episodes=self.test_episodes,
                                        max_episode_steps=self.test_max_episode_steps)

    @property
    def elastic_span(self) -> tuple[int, int] | None:
        """``--elastic MIN:MAX`` as (MIN, MAX), None for a fixed archipelago: the one reader
        of the string (coerced and checked to ``MIN:MAX`` when the config was built)."""
        if not self.elastic:
            return None
        lo, _, hi = self.elastic.partition(":")
        return int(lo), int(hi)

    def retest_spec(self) -> EvalSpec:
        """What a confirmation test evaluates on: as a test, ``retest_episodes`` episodes."""
        n = self.test_episodes if self.retest_episodes is None else self.retest_episodes
        return self.test_spec().replace(episodes=max(1, n))

    def test_call(self, kind: str, n: int) -> tuple[EvalSpec, int]:
        """The spec and episode seed of the run's ``n``-th test (``kind`` "test") or
        confirmation ("retest"): seeds no training episode or other test meets
        (``islands.seeds``). One place for both runtimes, so a virtual run tests on the
        episodes a real run of its seed would."""
        if kind == "retest":
            return self.retest_spec(), retest_seed(self.seed, n)
        return self.test_spec(), candidate_test_seed(self.seed, n)

    def checkpoint_spec(self, load: bool, by_seconds: bool = True) -> CheckpointSpec | None:
        """Checkpoint settings for the run's actors (None: no checkpoints); ``load``: start
        from the checkpoints there. Without ``by_seconds`` (a virtual run) checkpoints are
        by generations only: by the real clock, the state a failed node's islands come
        back to would depend on this machine's speed."""
        if self.checkpoint_uri is None:
            return None
        return CheckpointSpec(self.checkpoint_uri, self.checkpoint_interval,
                              self.checkpoint_seconds if by_seconds else 0.0, load)

    @property
    def uses_policy(self) -> bool:
        """A policy network (torch) evaluates the genomes; False where the genome is
        evaluated itself (a user's ``--problem``, a synthetic load ``rastrigin:D``), whose
        processes then need no torch threads or import."""
        return self.problem is None and parse_synthetic(self.env) is None


# The user-settable fields: flags and YAML keys.
FIELDS = {f.name: f for f in dataclasses.fields(Config) if not f.name.startswith("_")}


def policy_options(cfg: Config) -> dict[str, Any]:
    """``hidden`` in the form each policy kind takes, plus ``policy_options``."""
    opts = dict(cfg.policy_options)
    if cfg.hidden is not None and "hidden" not in opts:
        if cfg.policy == "neuromod":
            opts["hidden"] = int(cfg.hidden[0])
        else:
            opts["hidden"] = list(cfg.hidden)
    return opts


def strategies_of(cfg: Config) -> list[str]:
    """The strategy names of ``--strategy`` in order (assigned to islands round-robin)."""
    return [s.strip() for s in (cfg.strategy or "").split(",") if s.strip()]
