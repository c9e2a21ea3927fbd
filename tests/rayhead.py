"""A Ray head of a test's own: ``ray start --head --block`` on free ports and a temp dir,
stopped by ending that process (never ``ray stop``: it kills every Ray on the machine).
Used by the ``own_ray`` tests of Ray Jobs and of the autoscaler (conftest runs them before
the session's Ray starts)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conftest import ROOT, subprocess_env

RAY = str(Path(sys.executable).parent / "ray")


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def ray_env(**extra: str) -> dict[str, str]:
    env = subprocess_env()
    env["RAY_AUTH_MODE"] = "token"  # `ray job` / status calls from a shell (ray-notes)
    # `python` in a job's entrypoint is this environment's interpreter
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra)
    return env


def ray_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([RAY, *args], cwd=ROOT, env=ray_env(), capture_output=True,
                          text=True, timeout=timeout)


@contextlib.contextmanager
def ray_head(*extra_args: str, num_cpus: int = 2, env: dict[str, str] | None = None,
             gcs_port: int | None = None):
    """Yields ``{"gcs": host:port, "dashboard": url}`` once the head's job server answers."""
    gcs = gcs_port or free_ports(1)[0]
    dash, client, agent, metrics = free_ports(4)
    temp = tempfile.mkdtemp(prefix="rh-")  # short: Ray's socket paths must stay < 108 chars
    proc = subprocess.Popen(
        [RAY, "start", "--head", "--block", f"--port={gcs}", f"--dashboard-port={dash}",
         "--dashboard-host=127.0.0.1", f"--ray-client-server-port={client}",
         f"--dashboard-agent-listen-port={agent}", f"--metrics-export-port={metrics}",
         f"--num-cpus={num_cpus}", f"--temp-dir={temp}", "--include-dashboard=true",
         *extra_args],
        cwd=ROOT, env=ray_env(**(env or {})), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)
    url = f"http://127.0.0.1:{dash}"
    try:
        deadline = time.monotonic() + 180
        while ray_cli("job", "list", "--address", url, timeout=60).returncode != 0:
            assert proc.poll() is None, proc.stdout.read()[-3000:]
            assert time.monotonic() < deadline, "the head's job server never answered"
            time.sleep(2)
        yield {"gcs": f"127.0.0.1:{gcs}", "dashboard": url}
    finally:
        proc.send_signal(signal.SIGTERM)  # `ray start --block` stops what it started
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # anything of this head still left
