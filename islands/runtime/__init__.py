"""The process layer: the only package that imports Ray.

- :mod:`.actors`: the island, coordinator and tester actors (thin wrappers of the plain
  cores in :mod:`islands.island.core`, :mod:`islands.coordinator`, :mod:`islands.evaluate`);
- :mod:`.archipelago`: starts the named actors of a plan, waits until they are ready,
  writes final checkpoints and shuts them down;
- :mod:`.loop`: the event loop that drives a run (one handler per event kind);
- :mod:`.cluster`: joining or starting Ray, the cluster's nodes, the live status;
- :mod:`.launch`: a whole run from a resolved config (what ``python -m islands.launch``
  runs);
- :mod:`.metrics`: Ray metrics recorded inside the actors.
"""
