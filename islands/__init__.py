"""Island-model neuroevolution on Ray.

``islands.run(...)`` runs an archipelago from Python and returns an ``islands.Result``,
``islands.trainable(...)`` is a Ray Tune trainable of the same (:mod:`islands.api`);
``python -m islands.launch`` and the ``islands`` command do the same from a shell. They
are imported on first use, so importing a subpackage stays light.
"""

from __future__ import annotations

from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Result, run, trainable

try:
    __version__ = metadata.version("islands")
except metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["Result", "__version__", "run", "trainable"]


def __getattr__(name: str) -> Any:
    if name in ("run", "Result", "trainable"):  # PEP 562: islands.api on first use
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'islands' has no attribute {name!r}")
