"""What a run shows and leaves behind: the run directory, the live table, the final
summary and the scalar logs (TensorBoard, Weights & Biases); the analyses that read a run
directory back (``fitness_noise``, ``late_phase_ab``, ``walker_torque``: ``python -m
islands.output.NAME RUN``); and ``benchmarking``, what the scripts in benchmarks/ share
(their flags, their final JSON line)."""
