"""Who sends migrants to whom: the migration graph, as pure Python (no Ray).

A topology is a directed graph over island indices ``0..n-1``. When island ``src`` migrates,
its emigrants go to ``targets(src)``; each target receives them with its next reply from the
coordinator. Kinds:

- ``ring``: ``i -> (i + 1) % n`` (the classic slow-mixing archipelago).
- ``full``: ``i -> every other island``.
- ``random``: ``degree`` distinct random targets, drawn afresh every time ``src`` migrates
  (each migration round of that island), from a seeded generator.
- ``edges``: an explicit edge list, written ``"0>1,1>2,2>0"`` on the command line or as a
  list of ``[src, dst]`` pairs in YAML.

Self-loops are never used: an island's own elite is already in its population.
"""

from __future__ import annotations

from typing import Any

import numpy as np

KINDS = ("ring", "full", "random", "edges")


def parse_edges(spec: Any) -> list[tuple[int, int]]:
    """``"0>1,1>2"`` or ``[[0, 1], [1, 2]]`` -> ``[(0, 1), (1, 2)]``.

    ValueError names the bad part."""
    if spec is None:
        return []
    if isinstance(spec, str):
        parts = [p.strip() for p in spec.replace(";", ",").split(",") if p.strip()]
        pairs = []
        for p in parts:
            a, sep, b = p.partition(">")
            if not sep:
                raise ValueError(f"bad edge {p!r}: write edges as SRC>DST, e.g. 0>1,1>0")
            pairs.append((a.strip(), b.strip()))
    else:
        pairs = []
        for p in spec:
            if not isinstance(p, (list, tuple)) or len(p) != 2:
                raise ValueError(f"bad edge {p!r}: each edge is a [src, dst] pair")
            pairs.append((p[0], p[1]))
    out = []
    for a, b in pairs:
        try:
            out.append((int(a), int(b)))
        except (TypeError, ValueError):
            raise ValueError(f"bad edge {a}>{b}: island indices are integers") from None
    return out


def format_edges(edges: list[tuple[int, int]]) -> str:
    return ",".join(f"{a}>{b}" for a, b in edges)


class Topology:
    """A migration graph over ``n`` islands; ``targets(src)`` is where ``src``'s emigrants go."""

    def __init__(
        self, kind: str, n: int, degree: int = 1, edges: Any = None, seed: int = 0
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown topology {kind!r}; choose one of {', '.join(KINDS)}")
        if int(n) < 1:
            raise ValueError(f"a topology needs at least one island, got {n}")
        self.kind, self.n = kind, int(n)
        self.degree = int(degree)
        if kind == "random" and self.degree < 1:
            raise ValueError(f"topology degree must be positive, got {degree}")
        self._rng = np.random.default_rng(seed)
        self._out: dict[int, list[int]] = {i: [] for i in range(self.n)}
        if kind == "edges":
            for a, b in parse_edges(edges):
                if not (0 <= a < self.n and 0 <= b < self.n):
                    raise ValueError(
                        f"edge {a}>{b} names an island outside 0..{self.n - 1}"
                    )
                if a != b and b not in self._out[a]:
                    self._out[a].append(b)
        elif kind == "ring":
            for i in range(self.n):
                if self.n > 1:
                    self._out[i] = [(i + 1) % self.n]
        elif kind == "full":
            for i in range(self.n):
                self._out[i] = [j for j in range(self.n) if j != i]

    def targets(self, src: int) -> list[int]:
        """Destinations for ``src``'s emigrants this round (random: a fresh draw each call)."""
        if self.kind != "random":
            return list(self._out[src])
        others = [j for j in range(self.n) if j != src]
        k = min(self.degree, len(others))
        if k == 0:
            return []
        return sorted(int(j) for j in self._rng.choice(others, size=k, replace=False))

    def edges(self) -> list[tuple[int, int]]:
        """The fixed edges (empty for ``random``, whose edges change every round)."""
        return [(a, b) for a in range(self.n) for b in self._out[a]]

    def in_degree(self, dst: int) -> int:
        """How many islands feed ``dst`` (expected value for ``random``)."""
        if self.kind == "random":
            return min(self.degree, self.n - 1)
        return sum(dst in self._out[a] for a in range(self.n))

    def state_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "n": self.n, "degree": self.degree,
                "edges": [list(e) for e in self.edges()], "rng": self._rng.bit_generator.state}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        if d["kind"] != self.kind or int(d["n"]) != self.n:
            raise ValueError(f"topology state is {d['kind']}/{d['n']}, "
                             f"this is {self.kind}/{self.n}")
        self._rng.bit_generator.state = d["rng"]
