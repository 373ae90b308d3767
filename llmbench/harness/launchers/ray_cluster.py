"""The Ray cluster a `--launcher ray` run uses: Ray imported lazily (the `ray` extra), the head checked
before anything is written, `ray.init` to it (or a local cluster for the run), and its nodes grouped by GPU
type: one `RayLauncher`, and so one result set, per type. `--address` forms: docs/usage.md; every message
naming the address goes through `redact`."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from llmbench.errors import UserError
from llmbench.redact import redact

INSTALL = "pip install 'llmbench[ray]'"
CONNECT_TIMEOUT_S = 5.0  # the head's port must answer within this
ACCELERATOR = "accelerator_type:"  # Ray's resource naming a node's GPU type
PIN = 0.001  # how much of the accelerator_type resource a task asks for: a pin to the type, not a count
GCS_PORT, CLIENT_PORT = 6379, 10001  # Ray's defaults, where an address names no port
LOCAL = (None, "", "local", "auto")  # addresses that name no remote head
NODES_ENV = "LLMBENCH_RAY_NODES"  # a cluster still starting (a fleet's): wait until this many nodes are in
NODES_WAIT_S = 600.0


@dataclass(frozen=True)
class NodeKind:
    """The nodes of one GPU type in the cluster (or its CPU nodes): one result set's worth."""

    accelerator: str | None  # Ray's accelerator type ("H100"); None: the CPU, or GPUs of no known type
    gpus_per_node: int  # the most GPUs one node of the kind has (0: a CPU run)
    cpus_per_node: float  # the fewest CPUs one node of the kind has (a host-exclusive case asks for them)
    nodes: int

    def resources(self) -> dict[str, float]:
        """The custom resources a task of this kind asks for: a pin to its GPU type."""
        return {ACCELERATOR + self.accelerator: PIN} if self.accelerator and self.gpus_per_node else {}


def node_kinds(nodes: list[dict[str, Any]], cpu: bool) -> list[NodeKind]:
    """The GPU types of the cluster's live nodes (`ray.nodes()`), one kind each; a CPU run (`cpu`, or a
    cluster without GPUs) is one kind over every node."""
    alive = [n.get("Resources", {}) for n in nodes if n.get("Alive")]
    gpu_nodes = [r for r in alive if r.get("GPU", 0) >= 1]
    if cpu or not gpu_nodes:
        return [NodeKind(None, 0, min((r.get("CPU", 1.0) for r in alive), default=1.0), len(alive))]
    by_type: dict[str, list[dict[str, float]]] = {}
    for r in gpu_nodes:
        types = sorted(k.removeprefix(ACCELERATOR) for k in r if k.startswith(ACCELERATOR))
        by_type.setdefault(types[0] if types else "", []).append(r)
    return [NodeKind(t or None, int(max(r["GPU"] for r in rs)), min(r.get("CPU", 1.0) for r in rs), len(rs))
            for t, rs in sorted(by_type.items())]


def import_ray() -> Any:
    """Ray, or one line naming the install command."""
    try:
        import ray
    except ImportError:
        raise UserError(f"--launcher ray needs Ray, which is not installed here: {INSTALL}") from None
    return ray


def head_endpoint(address: str) -> tuple[str, int]:
    """The host and port an --address names (Ray's default port where it names none)."""
    client = address.startswith("ray://")
    parts = urlsplit(address if "://" in address else f"gcs://{address}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname:
        raise UserError(redact(f"--address {address}: give HOST:PORT, ray://HOST:PORT, auto, or leave it out "
                               "to start a local Ray cluster"))
    return parts.hostname, port or (CLIENT_PORT if client else GCS_PORT)


def check_head(address: str | None) -> None:
    """A remote head that does not answer: one line, before the run writes anything."""
    if address in LOCAL:
        return
    assert address is not None
    host, port = head_endpoint(address)
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise UserError(redact(f"--address {address}: no Ray head answers at {host}:{port} "
                               f"({e.strerror or e}); start one there (`ray start --head`), or leave --address "
                               "out to start a local Ray cluster for the run")) from None


INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


def interrupt_handlers() -> dict[int, Any]:
    """The Python handlers of SIGINT and SIGTERM now (llmbench's: an interrupt that saves what finished)."""
    return {sig: signal.getsignal(sig) for sig in INTERRUPTS}


def restore_handlers(handlers: dict[int, Any]) -> None:
    """Put `handlers` back after `ray.init`. A local cluster Ray starts installs a SIGTERM handler of its
    own (it stops the cluster's processes and exits with code 1) and its core worker a C-level one that
    dumps a stack: SIGTERM would end the run there, without the finished cases' line or exit code 130.
    Installed again even where Python still names llmbench's (the C-level one replaced it unseen); the
    cluster is stopped by `ray.shutdown` when the run ends, interrupted or not. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, handler in handlers.items():
        if handler is not None:
            signal.signal(sig, handler)


@contextlib.contextmanager
def ray_session(address: str | None) -> Iterator[Any]:
    """Ray connected to the cluster `address` names for the run (started here where none is named), and
    disconnected after it (a local cluster it started is stopped)."""
    ray = import_ray()
    check_head(address)
    ours = not ray.is_initialized()
    if ours:
        handlers = interrupt_handlers()
        try:
            ray.init(address=address or None, log_to_driver=False,
                     include_dashboard=False, logging_level="warning")
        except (ConnectionError, RuntimeError, ValueError) as e:
            first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)
            raise UserError(redact(f"--launcher ray: cannot join the Ray cluster at {address or 'a new local one'}: "
                                   f"{first}")) from None
        finally:
            restore_handlers(handlers)
    try:
        yield ray
    finally:
        if ours:
            ray.shutdown()


def cluster_kinds(ray: Any, cpu: bool, nodes_wanted: int | None = None, wait_s: float = NODES_WAIT_S) -> list[NodeKind]:
    """The connected cluster's kinds (`node_kinds`), once `nodes_wanted` nodes (else LLMBENCH_RAY_NODES, where
    set) are alive (a cluster whose other nodes are still joining); one line where it has none, or too few in time."""
    want = nodes_wanted or int(os.environ.get(NODES_ENV) or 0)
    deadline = time.monotonic() + wait_s
    nodes = ray.nodes()
    while sum(1 for n in nodes if n.get("Alive")) < want:
        if time.monotonic() > deadline:
            alive = sum(1 for n in nodes if n.get("Alive"))
            raise UserError(f"ray nodes = {want}: {alive} node(s) joined the Ray cluster within {wait_s:g}s")
        time.sleep(1.0)
        nodes = ray.nodes()
    kinds = node_kinds(nodes, cpu)
    if not kinds or not kinds[0].nodes:
        raise UserError("--launcher ray: the Ray cluster has no live node")
    return kinds
