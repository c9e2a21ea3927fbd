"""The ``generic`` report: an experiment without a research question of its own gets the
header every report has (:mod:`.common`: settings, provenance, the per-configuration
table) and the learning curves, best fitness against evaluations per configuration.
"""

from __future__ import annotations

from ..figures import fitness_vs_evals
from .common import Context


def generic_report(ctx: Context) -> list[str]:
    fig = fitness_vs_evals(ctx.results, ctx.curves)
    return ["## Learning curves", "",
            ctx.figure("fitness_vs_evals", fig, "best fitness vs evaluations"), ""]
