"""What survives a process: checkpoints (when, where, in which plain-data format) and the
checks before ``--resume``."""
