"""More episodes per evaluation when an island stalls: resampling against fitness noise.

An episode's return is a noisy fitness. Far from an optimum the differences between genomes
dwarf that noise and one episode per evaluation is the cheapest way to rank them; near one
the differences shrink while the noise stays, the ranking becomes mostly luck and the
search stalls (D. V. Arnold and H.-G. Beyer 2006, "A general noise model and its effects on
evolution strategy performance", IEEE TEC 10(4)). Uncertainty-handling CMA-ES answers by
evaluating more often once it measures rank changes under re-evaluation (N. Hansen et al.
2009, "A method for handling uncertainty in evolutionary optimization...", IEEE TEC 13(1);
pycma's ``NoiseHandler``); that measurement needs single-genome re-evaluations, which a
batched EnvPool island cannot afford. An island here reads the symptom instead: when it
stagnates (:class:`islands.restarts.Stagnation`: for ``patience`` generations neither the
best nor the median fitness of a generation beat their records) and ``cap`` is above its
episodes per evaluation, it doubles them (at most ``cap``) and judges stagnation afresh on
the new, less noisy fitness. Only once the cap is reached does a stagnant island restart
(``--restart``): the schedule resets the restarter's stagnation count whenever it grows.

Measured on BipedalWalker-v3 (this machine, 2 islands): an island whose one-episode
population mean had hovered at 180-230 for 70 minutes (its best samples at ~300; the walkers
fell in some episodes) went to a rolling mean of ~255 within 30 minutes once resumed with 4
episodes per evaluation (``islands/envdefaults.py`` has the runs). With ``--episodes-cap 4``
from the start, a seed-1 run never stalled for 50 generations within its first hour; its
islands went to 2 episodes at 5,120 s and 5,370 s, with population means at 278 and 299.
The option is not in the env table: the measurements say neither that nor when it helps.

The schedule's state (current episodes, doublings, the stagnation count) is plain data,
checkpointed with the island, so a resumed island evaluates as the original did.
"""

from __future__ import annotations

from typing import Any

from islands.restarts import Stagnation


class EpisodeSchedule:
    """Episodes per evaluation of one island: ``base`` until it stagnates, then doubled at
    each stagnation up to ``cap`` (``cap`` None or <= ``base``: fixed)."""

    def __init__(self, base: int, cap: int | None, patience: int) -> None:
        self.base = int(base)
        self.cap = self.base if cap is None else max(self.base, int(cap))
        self.episodes = self.base
        self.doublings = 0
        self.stagnation = Stagnation(patience)

    @property
    def enabled(self) -> bool:
        return self.cap > self.base

    def update(self, fitness) -> int | None:
        """After a generation: the new episodes per evaluation when they grow, else None."""
        if self.episodes >= self.cap or not self.stagnation.update(fitness):
            return None
        self.episodes = min(self.cap, 2 * self.episodes)
        self.doublings += 1
        self.stagnation.reset()  # records of the noisier fitness do not carry over
        return self.episodes

    def state_dict(self) -> dict[str, Any]:
        return {"base": self.base, "episodes": self.episodes, "doublings": self.doublings,
                "stagnation": self.stagnation.state_dict()}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        self.episodes = min(max(int(d["episodes"]), self.base), self.cap)
        self.doublings = int(d["doublings"])
        self.stagnation.load_state_dict(d["stagnation"])
