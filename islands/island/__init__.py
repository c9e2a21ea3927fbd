"""One island: its core (ask, evaluate, tell) and the hooks that run after a generation
(restarts, the episode schedule, candidate confirmation)."""
