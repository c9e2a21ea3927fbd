"""Ray itself: joining or starting a cluster, its nodes, errors on one line, the live status.

``connect`` starts an embedded local Ray (``address="local"``: never attaches to another
one by accident) unless ``--address`` / ``RAY_ADDRESS`` names a cluster to join.
``fetch_status`` is what ``python -m islands.status`` asks the running coordinator.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

import ray

from ..config import Config, ConfigError
from ..config.resolve import cluster_address
from .actors import COORDINATOR_NAME


class StatusError(RuntimeError):
    """No cluster or no coordinator; one-line message."""


def connect(cfg: Config) -> bool:
    """Connect to (or start) Ray; True when this call did it (so we shut it down after)."""
    if ray.is_initialized():
        return False
    address = cluster_address(cfg)
    kw: dict[str, Any] = dict(namespace=cfg.namespace, log_to_driver=not cfg.quiet,
                              logging_level=logging.WARNING)
    if cfg.working_dir:  # the user's modules, uploaded once and unpacked on every node
        kw["runtime_env"] = {"working_dir": os.path.abspath(cfg.working_dir)}
    if address:
        if not _gcs_reachable(address):  # ray.init waits ~13 minutes there (measured)
            raise ConfigError(f"cannot join the Ray cluster at {address!r}: nothing listens "
                              "there")
        try:
            ray.init(address=address, **kw)
        except (ConnectionError, ValueError, RuntimeError) as e:
            msg = str(e).strip().splitlines()
            raise ConfigError(f"cannot join the Ray cluster at {address!r}: "
                              f"{msg[0] if msg else type(e).__name__}") from None
    else:
        # "local" always starts a fresh Ray, even if /tmp/ray/ray_current_cluster names a
        # running one (ray-notes); CPUs and memory default to the machine's. The dashboard
        # listens on loopback only: a laptop's run is not published to its network.
        # Ray warns on every start that token authentication is on, its default; the run's
        # first lines are the dashboard and the plan instead.
        logging.getLogger("ray._private.authentication.authentication_token_setup"
                          ).setLevel(logging.ERROR)
        ray.init(address="local", include_dashboard=cfg.dashboard,
                 dashboard_host="127.0.0.1", **kw)
    return True


def dashboard_line(cfg: Config) -> str:
    """Where to watch the connected Ray's dashboard, in one line (the run's first)."""
    url = dashboard_url()
    embedded = cluster_address(cfg) is None
    if url is None:
        return ("Ray dashboard: off (--dashboard on starts it with the embedded Ray)"
                if embedded else "Ray dashboard: none on this cluster")
    if embedded:
        return f"Ray dashboard: {url} (this machine only; --dashboard off to skip it)"
    return (f"Ray dashboard: {url} on the cluster's head; from a laptop: "
            f"`ray dashboard cluster/gpu.yaml`, then http://localhost:8265")


def dashboard_url() -> str | None:
    """``http://host:port`` of the connected cluster's dashboard, or None without one."""
    from ray._private.worker import global_worker  # where ray.init's own context reads it

    node = getattr(global_worker, "node", None)
    url = (node.address_info.get("webui_url") if node is not None else None) or None
    return None if url is None else (url if "://" in url else f"http://{url}")


def joined_node_cpus(cfg: Config) -> list[float]:
    """The CPUs of each live node of the cluster ``cfg`` joins, for ``--islands fill``
    (:func:`islands.config.resolve.resolve`'s ``node_cpus``): read from the connected Ray
    as it is, or through a connection made and closed here (the run connects again: a
    second or so). Nodes an autoscaler would add later are not counted."""
    started = connect(cfg)
    try:
        return [float(n.get("CPU", 0.0)) for n in cluster_nodes()]
    finally:
        if started:
            ray.shutdown()


def cluster_nodes() -> list[dict[str, float]]:
    """Total resources of each live node of the connected Ray cluster."""
    return [dict(n["Resources"]) for n in ray.nodes() if n.get("Alive")]


def root_message(e: BaseException) -> str:
    """The innermost exception's ``Type: message`` from a Ray error, on one line."""
    def inner(x):
        return getattr(x, "cause", None) or x.__cause__

    cause = inner(e)
    while cause is not None and inner(cause) is not None:
        cause = inner(cause)
    src = cause if cause is not None else e
    lines = [ln for ln in str(src).strip().splitlines() if ln.strip()]
    msg = lines[-1] if lines else ""
    return f"{type(cause).__name__}: {msg}" if cause is not None else msg


def _gcs_reachable(address: str, timeout: float = 3.0) -> bool:
    """False when ``host:port`` refuses a TCP connection: ray.init would wait minutes for
    a GCS there. Other address forms (auto, ray://, http://) are left to ray.init."""
    if address == "auto" or "://" in address or ":" not in address:
        return True
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def fetch_status(address: str | None, namespace: str, timeout: float = 30,
                 stop: str | None = None) -> dict[str, Any]:
    """Connect (if not connected) and return ``coordinator.status()``; StatusError if there
    is no cluster or no run. With ``stop``, first ask the run to end with that reason."""
    if not ray.is_initialized():
        if address and not _gcs_reachable(address):
            raise StatusError(f"no Ray cluster at {address!r}: nothing listens there")
        try:
            # address None: RAY_ADDRESS, then the running local cluster; never starts one.
            ray.init(address=address or "auto", namespace=namespace, log_to_driver=False,
                     logging_level=logging.ERROR)
        except (ConnectionError, ValueError, RuntimeError) as e:
            msg = [ln for ln in str(e).strip().splitlines() if ln.strip()]
            raise StatusError(f"no Ray cluster at {address or 'auto'!r}: "
                              f"{msg[0] if msg else type(e).__name__}") from None
    try:
        coord = ray.get_actor(COORDINATOR_NAME, namespace=namespace)
    except ValueError:
        raise StatusError(f"no running archipelago: no actor {COORDINATOR_NAME!r} in Ray "
                          f"namespace {namespace!r} (wrong --namespace?)") from None
    try:
        if stop:
            ray.get(coord.request_stop.remote(stop), timeout=timeout)
        return ray.get(coord.status.remote(), timeout=timeout)
    except ray.exceptions.RayError as e:
        line = str(e).strip().splitlines()
        raise StatusError(f"the coordinator did not answer: "
                          f"{line[-1] if line else type(e).__name__}") from None


def autoscaler_running(wait_s: float = 30.0) -> bool:
    """True when an autoscaler with node types watches the connected cluster (``ray up``,
    the fake multi-node provider). Every Ray head runs a monitor that publishes a status in
    the GCS; a plain local Ray's read-only provider names each node's type after the node
    itself (``node_<id>``), an autoscaler after its config's node types
    (``ray.head.default``, ``cpu_worker``, ...). A head that has just started may not have
    published one yet: wait up to ``wait_s`` for it (only runs that do not fit ask)."""
    import json

    from ray._private.ray_constants import DEBUG_AUTOSCALING_STATUS
    from ray.experimental.internal_kv import _internal_kv_get

    def mapping() -> dict:
        raw = _internal_kv_get(DEBUG_AUTOSCALING_STATUS)
        try:
            return json.loads(raw)["autoscaler_report"]["node_type_mapping"] or {}
        except (ValueError, KeyError, TypeError):  # none yet, or a report without nodes
            return {}

    # Under load the monitor's first reports may list no node yet (the provider has not
    # tagged the head): wait for one that names a node, not just for any report.
    deadline = time.monotonic() + wait_s
    nodes = mapping()
    while not nodes and time.monotonic() < deadline:
        time.sleep(0.5)
        nodes = mapping()
    return any(kind not in (node, f"node_{node}") for node, kind in nodes.items())


def wait_for_nodes(bundles: list[dict[str, float]], fits: Callable[[list], bool],
                   timeout: float, say: Callable[[str], None]) -> list[dict[str, float]]:
    """Ask the autoscaler for ``bundles`` (one per island) and wait until ``fits`` accepts
    the cluster's nodes; the nodes then, or ResourceError after ``timeout`` seconds. Call
    :func:`withdraw_request` once the islands run (their actors keep the nodes busy)."""
    from ray.autoscaler.sdk import request_resources

    from ..planning import ResourceError

    need = ", ".join(sorted({k for b in bundles for k in b}))
    say(f"waiting up to {timeout:g} s for the autoscaler to add nodes with {need} "
        f"for {len(bundles)} islands")
    request_resources(bundles=bundles)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        nodes = cluster_nodes()
        if fits(nodes):
            return nodes
        time.sleep(2.0)
    withdraw_request()
    raise ResourceError(f"the autoscaler added no nodes that fit the {len(bundles)} islands "
                        f"({need}) within {timeout:g} s")


def withdraw_request() -> None:
    """Withdraw :func:`wait_for_nodes`' request: idle nodes may go again."""
    from ray.autoscaler.sdk import request_resources

    request_resources(bundles=[])
