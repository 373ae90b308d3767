"""Which case launcher a run uses (`llmbench run --launcher`): `local`, the case's own process on this
machine, or `ray`, each case a task of a Ray cluster — one launcher per GPU type of the cluster, each
the launcher of one result set (launchers/ray_cluster.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from llmbench.errors import UserError
from llmbench.harness.launchers.base import CaseLauncher
from llmbench.harness.launchers.process import IsolatedProcess

CASE_LAUNCHERS = ("local", "ray")


def check_launcher(name: str, address: str | None, gpus: str | None, repeat: int = 1, parallel: bool = False) -> None:
    """A launcher name and what goes with it, before anything runs."""
    if name not in CASE_LAUNCHERS:
        raise UserError(f"--launcher {name!r}: choose one of {', '.join(CASE_LAUNCHERS)}")
    if name == "local" and address is not None:
        raise UserError("--address names a Ray cluster: use it with --launcher ray")
    if name == "ray" and gpus is not None:
        raise UserError("--gpus with --launcher ray: Ray gives each case its GPUs; leave --gpus out (a head "
                        "owns the GPUs it was started with: `ray start --head --num-gpus N`, CUDA_VISIBLE_DEVICES)")
    if name == "ray" and parallel:
        raise UserError("--parallel with --launcher ray is not built yet: Ray runs the cases one after another, "
                        "each on the node it picks; leave --parallel out")
    if name == "ray" and repeat > 1:
        raise UserError("--repeat with --launcher ray is not supported; run the command N times, or --repeat "
                        "with the local launcher")


@contextlib.contextmanager
def case_launchers(name: str, address: str | None, cpu: bool,
                   extra_env: dict[str, str]) -> Iterator[list[CaseLauncher]]:
    """The launchers of a run, one per result set it writes: the local process alone, or a Ray launcher
    per GPU type of the cluster (connected for the run; a local cluster it started stops with it)."""
    if name != "ray":
        yield [IsolatedProcess()]
        return
    from llmbench.harness.launchers.ray import RayLauncher
    from llmbench.harness.launchers.ray_cluster import cluster_kinds, ray_session

    with ray_session(address) as ray:
        yield [RayLauncher(kind, extra_env) for kind in cluster_kinds(ray, cpu)]
