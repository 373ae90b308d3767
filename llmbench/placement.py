"""Where a case runs, as one field of the case (`placement = {gpus = 2}` in a suite): the GPUs it holds.
The harness reads it (slots under --parallel, the rank count of a multi-process case, the replicas of a
case run once per GPU slice); an engine's tensor-parallel degree is checked against it. Not part of a
case's id beyond its GPU count and, where they are more than one, its nodes and replicas.

Its counts are read strictly: TOML integers only (not `true`, not `"2"`, not `2.0` or `1e9`), within
1..MAX_GPUS, and a key it does not have is an error that names the keys it has. Each error is one line
naming the key, what was given and what is valid."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidatorFunctionWrapHandler, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from llmbench.errors import choices_hint

MAX_GPUS = 1024  # the most GPUs (and so nodes or replicas) one case is placed on
COUNTS = ("gpus", "nodes", "replicas")


class Placement(BaseModel):
    """The GPUs a case needs; `exclusive`: nothing else runs beside it under --parallel (it waits until
    every slot is free and holds the run's GPUs to itself while it runs); None: as its scenario declares
    (`Scenario.host_exclusive`: a case that loads the host or PCIe, or whose figure is the host's speed).
    `nodes` is for a case that runs as ranks (`RankScenario`): another scenario's case refuses it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gpus: int = Field(1, ge=1, le=MAX_GPUS, strict=True,
                      description="GPUs the case holds (slots under --parallel), on all its nodes together")
    exclusive: bool | None = Field(None, strict=True,
                                   description="no other case runs beside it (None: as its scenario says)")
    nodes: int = Field(1, ge=1, le=MAX_GPUS, strict=True, description="nodes a rank case's ranks span (gpus / nodes "
                       "on each), joined by torchrun's c10d rendezvous")
    replicas: int = Field(1, ge=1, le=MAX_GPUS, strict=True, description="independent copies of the case run at "
                          "once, each on gpus / replicas of the GPUs; rates summed, latencies pooled "
                          "(harness/launchers/replicas.py)")

    @model_validator(mode="wrap")
    @classmethod
    def _strict(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Placement:
        if isinstance(data, dict):
            problem = placement_problem(data)
            if problem is not None:
                key, value, message = problem
                raise ValidationError.from_exception_data("Placement", [InitErrorDetails(
                    type=PydanticCustomError("placement", message), loc=("placement", key), input=value)])
        return handler(data)  # type: ignore[no-any-return]

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


def placement_problem(table: dict[str, Any]) -> tuple[str, Any, str] | None:
    """The first thing wrong with a placement table, as (key, value, one-line message), or None: a key
    it does not have (with the closest ones), a count that is not a TOML integer or is out of range, an
    `exclusive` that is not true or false."""
    keys = list(Placement.model_fields)
    for key, value in table.items():
        if key not in Placement.model_fields:
            return key, value, f"placement has no key {key!r}; {choices_hint(key, keys, 'its keys')}"
        if key in COUNTS:
            valid = f"placement {key} is a whole number 1..{MAX_GPUS} ({key} = 2)"
            if isinstance(value, bool):
                return key, value, f"{valid}, not true or false"
            if isinstance(value, str):
                return key, value, f"{valid}, not a string: write it without quotes"
            if isinstance(value, float):
                return key, value, f"{valid}, not a decimal number"
            if not isinstance(value, int):
                return key, value, f"{valid}, not a {type(value).__name__}"
            if not 1 <= value <= MAX_GPUS:
                return key, value, f"placement {key} is out of range: valid 1..{MAX_GPUS}"
        if key == "exclusive" and value is not None and not isinstance(value, bool):
            return key, value, "placement exclusive is true or false"
    return None
