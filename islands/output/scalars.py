"""Scalars where RL users look: TensorBoard event files in ``DIR/tb`` and, with ``--wandb
PROJECT``, a Weights & Biases run (the convention of CleanRL, Stable-Baselines3, RLlib).

One TensorBoard writer per island (``tb/island-NN``) and one for the archipelago
(``tb/archipelago``), so ``tensorboard --logdir runs/`` overlays the islands in each chart.
Every scalar's step is the archipelago's total environment steps at that report (CleanRL's
``global_step``): islands that share a machine share one x axis, and TensorBoard's
"relative" view gives wall time. tensorboardX comes with ``ray[tune]``; reading the files
needs ``pip install tensorboard``.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import Any

from envs.objective import FITNESS, Scale

from ..messages import RunStatus
from . import progress as prog

TB_DIR = "tb"
FLUSH_SECS = 10  # a live ``tensorboard`` sees a run within seconds, not tensorboardX's 120
# metrics.parquet columns logged per island, under these tags
ISLAND_TAGS = {"fitness_max": "fitness/max", "fitness_mean": "fitness/mean",
               "best_so_far": "fitness/best_so_far", "sigma": "search/sigma",
               "lr": "search/lr", "center_norm": "search/center_norm",
               "episodes_per_eval": "search/episodes_per_eval",
               "restarts": "search/restarts", "immigrants": "migration/immigrants",
               "evals_per_s": "speed/evals_per_s", "steps_per_s": "speed/env_steps_per_s"}


class ScalarLog:
    """Writes each island report as scalars; ``close()`` flushes everything."""

    def __init__(self, run_dir: str | Path, islands: int, tensorboard: bool = True,
                 wandb_project: str | None = None, config: dict[str, Any] | None = None,
                 scale: Scale = FITNESS, budgets: dict[str, float] | None = None) -> None:
        self.writers: dict[str, Any] = {}
        self.budgets = dict(budgets or {})  # budget/eta_s (output/progress.py)
        self.scale = scale  # a user's function: its own values under its own word
        self.root = Path(run_dir) / TB_DIR if tensorboard else None
        if tensorboard:
            names = [f"island-{i:02d}" for i in range(islands)] + ["archipelago"]
            self.writers = {n: self._writer(n) for n in names}
        self.wandb = None
        if wandb_project is not None:
            import wandb

            self.wandb = wandb.init(project=wandb_project, name=Path(run_dir).name,
                                    dir=str(run_dir), config=config or {}, resume="allow")
            self.wandb.define_metric("env_steps")
            self.wandb.define_metric("*", step_metric="env_steps")
        self.tests_seen = 0
        self.step = 0

    def _writer(self, name: str):
        from tensorboardX import SummaryWriter

        return SummaryWriter(str(self.root / name), flush_secs=FLUSH_SECS)

    def log(self, row: dict[str, Any], status: RunStatus) -> None:
        """One island report (a metrics.parquet row) and the archipelago's state after it."""
        step = self.step = int(row.get("total_env_steps", 0))
        island = dict(self._user(tag, row[key]) for key, tag in ISLAND_TAGS.items()
                      if _finite(row.get(key)))
        arch = {"fitness/best": status.hof["fitness"],
                "budget/total_evals": row.get("total_evals"),
                "budget/total_episodes": row.get("total_episodes"),
                "budget/wall_s": row.get("wall_s")}
        tests = status.tests
        if len(tests) > self.tests_seen:  # a candidate test finished since the last report
            self.tests_seen = len(tests)
            arch["test/mean"] = tests[-1].get("mean")
        arch.update(prog.scalars(prog.progress(status, self.budgets)))
        arch = dict(self._user(k, v) for k, v in arch.items() if _finite(v))
        name = f"island-{int(row['island']):02d}"
        if self.writers and name not in self.writers:  # joined an elastic run
            self.writers[name] = self._writer(name)
        if self.writers:
            for tag, v in island.items():
                self.writers[name].add_scalar(tag, float(v), step)
            for tag, v in arch.items():
                self.writers["archipelago"].add_scalar(tag, float(v), step)
        if self.wandb is not None:
            self.wandb.log({"env_steps": step, **{f"{name}/{k}": v for k, v in island.items()},
                            **{f"archipelago/{k}": v for k, v in arch.items()}})

    def log_final(self, test: dict[str, Any] | None, solved: bool,
                  retest: dict[str, Any] | None = None) -> None:
        """The solution's selecting test (``test/final_mean``), its confirmation
        (``test/confirmation_mean``) and the outcome, at the last step."""
        final = {"test/final_mean": (test or {}).get("mean"),
                 "test/confirmation_mean": (retest or {}).get("mean"),
                 "test/solved": float(solved)}
        final = dict(self._user(k, v) for k, v in final.items() if _finite(v))
        for tag, v in final.items() if self.writers else ():
            self.writers["archipelago"].add_scalar(tag, float(v), self.step)
        if self.wandb is not None:
            self.wandb.log({"env_steps": self.step,
                            **{f"archipelago/{k}": v for k, v in final.items()}})

    def _user(self, tag: str, v: float) -> tuple[str, float]:
        """``tag`` and ``v`` in the user's scale: for a cost, ``fitness/max`` (of minus the
        cost) becomes ``cost/min``, a test's mean its cost; an env's stay as they are."""
        if self.scale == FITNESS:
            return tag, v
        head, _, tail = tag.partition("/")
        if head == "fitness":
            tail = self.scale.best if tail == "max" else tail
            return f"{self.scale.word}/{tail}", self.scale.user(v)
        if head == "test" and tail.endswith("mean"):
            return tag, self.scale.user(v)
        return tag, v

    def close(self) -> None:
        for w in self.writers.values():
            w.close()
        if self.wandb is not None:
            self.wandb.finish()


def _finite(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)
