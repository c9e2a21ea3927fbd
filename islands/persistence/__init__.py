"""What survives a process, as file formats: checkpoints (when, where, in which plain-data
format) and the solution file. Whether checkpoints fit a config: ``islands.config.resume``."""
