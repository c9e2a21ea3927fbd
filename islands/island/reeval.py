"""Candidate re-evaluation: an island re-evaluates its would-be candidates before it offers them.

Once the best sample of a call reaches the island's candidate threshold, the island offers
that sample and its search center (:class:`~islands.messages.CandidateOffer`), each
re-evaluated on ``spec.run.reeval_episodes`` fresh training episodes where that is set
(``--confirm-episodes``; :class:`Reevaluation`, an after-call hook:
:mod:`islands.island.hooks`). A best sample won among ``popsize`` evaluations on the same
few episodes, so its training fitness is biased upwards -- the winner's curse of selection
under noise; most such winners fail a test. The island re-evaluates them itself (two
genomes, a few episodes), so the tester -- whose sequential test takes at least 20 episodes,
on CPU the islands share -- only sees genomes that held up (the candidate queue drops offers
whose re-evaluation is below the target). "Confirmed" is the tester's word, not this
module's: a genome whose test passed and then its retest on other fresh test episodes
(:mod:`islands.candidates`).

Re-evaluations (these and the ranking probes of :mod:`islands.island.resampling`) run on a
:class:`Reevaluator`: an evaluator per episode count, of its own, so the training episode
streams -- and a resumed run's bit-identity -- are untouched.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..messages import CandidateOffer
from ..seeds import reeval_seed
from .hooks import Call, Elite, Hook


class Reevaluator:
    """Evaluations on fresh episodes beside the training ones: an evaluator per episode
    count, built from ``eval_spec`` at its first use."""

    def __init__(self, eval_spec, num_threads: int, device: str) -> None:
        self.eval_spec, self.num_threads, self.device = eval_spec, int(num_threads), device
        self.evaluators: dict[int, Any] = {}

    def __call__(self, X: np.ndarray, n: int, seed: int, obs_stats) -> tuple[np.ndarray, Any]:
        """``(R, result)``: ``R[row, episode]`` of the rows of ``X`` over ``n`` episodes from
        ``seed`` (-inf rows for broken genomes) under ``obs_stats`` (the island's statistics,
        frozen: these observations do not enter them), and the evaluation's result."""
        if n not in self.evaluators:
            self.evaluators[n] = self.eval_spec.replace(episodes=n).build(
                num_threads=self.num_threads, device=self.device)
        ev = self.evaluators[n]
        if obs_stats is not None:
            ev.set_obs_stats(obs_stats.state_dict())
        ev.restart_episodes()  # episodes from this call's seed alone
        res = ev.evaluate(X, seed=seed)
        R = np.asarray(res.returns, dtype=np.float64).reshape(len(X), -1)
        fit = np.asarray(res.fitness, dtype=np.float64).reshape(-1)
        return np.where(np.isfinite(fit)[:, None], R, -np.inf), res

    def close(self) -> None:
        for ev in self.evaluators.values():
            ev.close()
        self.evaluators = {}


class Reevaluation(Hook):
    """After a call that wants offers: the offers of its best sample and the search center
    once the sample's own returns (not a reward-shifted fitness) reached the island's
    ``candidate_threshold`` (None: never),
    re-evaluated on ``episodes`` fresh episodes (0, or an island without a reevaluator: as
    measured in training)."""

    def __init__(self, episodes: int, kinds: tuple[str, ...] = ("center", "sample")) -> None:
        self.episodes, self.kinds = int(episodes), tuple(kinds)

    def after_call(self, island, call: Call) -> None:
        if call.want_offers:
            call.offers = self.offers(island, call.elite)

    def offers(self, island, elite: Elite) -> list[CandidateOffer]:
        t = island.candidate_threshold  # on the task's own returns, not a shifted fitness
        if t is None or not elite.r.size or elite.r[0] < t:
            return []
        center = island.strategy.center
        if island.strategy.generation == 0 and island.runs.last_center is not None:
            center = island.runs.last_center  # the run that just ended made the sample
        f = float(elite.r[0])
        offers = [o for o in (CandidateOffer("sample", np.array(elite.x[0]), f),
                              CandidateOffer("center", np.array(center, dtype=np.float64), f))
                  if o.kind in self.kinds]  # a kind the run does not test costs nothing
        n = self.episodes
        if n <= 0 or island.reevaluator is None:
            return offers
        means, ses = self.measure(island, np.stack([o.params for o in offers]), n)
        return [dataclasses.replace(o, reeval=float(m), reeval_se=float(e),
                                    reeval_episodes=n)
                for o, m, e in zip(offers, means, ses, strict=True)]

    @staticmethod
    def measure(island, X: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Mean returns of the rows of ``X`` over ``n`` fresh training episodes and their
        standard errors (infinite for a single episode: nothing known)."""
        R = island.reevaluate(X, n, reeval_seed(island.run_seed, island.index,
                                                island.generation), shifted=False)
        island.counters.reevaluations += len(X)
        mean = R.mean(axis=1)
        se = (R.std(axis=1, ddof=1) / np.sqrt(R.shape[1]) if R.shape[1] > 1
              else np.full(len(X), np.inf))
        return mean, np.where(np.isfinite(mean), se, 0.0)
