"""Where a case runs, as one field of the case (`placement = {gpus = 2}` in a suite): the GPUs it holds.
The harness reads it (slots under --parallel, the rank count of a multi-process case, the replicas of a
case run once per GPU slice); an engine's tensor-parallel degree is checked against it. Not part of a
case's id beyond its GPU count and, where they are more than one, its nodes and replicas."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Placement(BaseModel):
    """The GPUs a case needs; `exclusive`: nothing else runs beside it under --parallel (it waits until
    every slot is free and holds the run's GPUs to itself while it runs); None: as its scenario declares
    (`Scenario.host_exclusive`: a case that loads the host or PCIe, or whose figure is the host's speed)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpus: int = Field(1, ge=1, description="GPUs the case holds (slots under --parallel), on all its nodes together")
    exclusive: bool | None = Field(None, description="no other case runs beside it (None: as its scenario says)")
    nodes: int = Field(1, ge=1, description="nodes a rank case's ranks span (gpus / nodes on each), joined by "
                       "torchrun's c10d rendezvous")
    replicas: int = Field(1, ge=1, description="independent copies of the case run at once, each on gpus / replicas "
                          "of the GPUs; rates summed, latencies pooled (harness/launchers/replicas.py)")

    @model_validator(mode="after")
    def _whole_nodes(self) -> Placement:
        if self.gpus % self.nodes:
            raise ValueError(f"placement: gpus = {self.gpus} does not split evenly over nodes = {self.nodes}")
        if self.gpus % self.replicas:
            raise ValueError(f"placement: gpus = {self.gpus} does not split evenly over replicas = {self.replicas}")
        if self.replicas > 1 and self.nodes > 1:
            raise ValueError("placement: replicas and nodes together are not supported; give one of them")
        return self

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes

    @property
    def gpus_per_replica(self) -> int:
        return self.gpus // self.replicas
