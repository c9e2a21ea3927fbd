"""Benchmark scripts: each measures one thing against a baseline run beside it, prints a
table and a final JSON line. Run one from the repository root as ``python benchmarks/NAME.py``
or ``python -m benchmarks.NAME``; what they share (flags, the JSON line's shape) is
``islands.output.benchmarking``. Modules whose names start with ``_`` are parts of a script."""
