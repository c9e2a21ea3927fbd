"""SIGINT / SIGTERM during a run: the first stops the run loop (final checkpoint and
summary follow), a second one aborts at once."""

from __future__ import annotations

from typing import Any


class _Signals:
    """The process's handlers; ``arch`` is the runtime to stop (its ``on_signal``)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.arch = None
        self._old: dict[int, Any] = {}

    def _handle(self, signum, frame) -> None:
        first = self.received is None
        self.received = signum
        if first and self.arch is not None:
            self.arch.on_signal(signum)
            return
        raise KeyboardInterrupt

    def __enter__(self) -> _Signals:
        self.active, self.received = True, None
        self.install()
        return self

    def install(self) -> None:
        """(Re)install the handlers: ray.init installs its own, so run() calls this again
        once Ray is up."""
        import signal
        import threading

        if getattr(self, "active", False) and (threading.current_thread()
                                                is threading.main_thread()):
            for sig in (signal.SIGINT, signal.SIGTERM):
                old = signal.signal(sig, self._handle)
                self._old.setdefault(sig, old)

    def __exit__(self, *exc) -> None:
        import signal

        for sig, h in self._old.items():
            signal.signal(sig, h)
        self._old, self.active = {}, False


SIGNALS = _Signals()
