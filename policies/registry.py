"""A registry of names whose objects are imported on first lookup.

Listing and checking names (config choices, error messages, ``--help``) must not import
what they name: torch costs about 2 s and pycma 1.5 s in every process that loads it, and
the launcher, the coordinator and the CLIs use names only. Entries are the objects
themselves or ``"module:attribute"`` strings, resolved (and kept) on the first
``registry[name]``; iteration and ``in`` never import. The envs and strategies registries
use it as well.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import Any


class LazyRegistry(MutableMapping[str, Any]):
    def __init__(self, entries: dict[str, Any]) -> None:
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> Any:
        value = self._entries[name]
        if isinstance(value, str):
            module, _, attr = value.partition(":")
            value = self._entries[name] = getattr(importlib.import_module(module), attr)
        return value

    def __setitem__(self, name: str, value: Any) -> None:
        self._entries[name] = value

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __contains__(self, name: object) -> bool:  # Mapping's own would look the name up
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"LazyRegistry({list(self._entries)})"
