from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.cost_limits import CostLimits
    from ..models.leaderboard_spec import LeaderboardSpec
    from ..models.protocol_create_config import ProtocolCreateConfig


T = TypeVar("T", bound="ProtocolCreate")


@_attrs_define
class ProtocolCreate:
    """A protocol: the evaluation config every job on its leaderboard shares.

    ``config`` is an `EvaluationConfig` without `anonymizer` (that comes from each submission):
    either `synthetic` (the built-in synthetic corpus spec) or `protocol` (the path of a protocol
    JSON on the worker hosts, made by `unmask corpus protocol`; its corpus must be readable at
    the paths the JSON names on every worker), plus scenarios, back-ends, training, seeds,
    metrics.

        Attributes:
            name (str): Lowercase letters, digits, '.', '_', '-'. Registering a new body under an existing name makes the
                next version.
            config (ProtocolCreateConfig | Unset): EvaluationConfig fields (see docs/evaluation.md), no `anonymizer`.
            description (str | Unset): What the protocol evaluates: one line of plain text. Default: ''.
            leaderboard (LeaderboardSpec | Unset): What a protocol's leaderboard ranks by (defaults of the leaderboard
                route).
            limits (CostLimits | Unset): Per-protocol upper bounds of a job's cost knobs (null = the server's default).
    """

    name: str
    config: ProtocolCreateConfig | Unset = UNSET
    description: str | Unset = ""
    leaderboard: LeaderboardSpec | Unset = UNSET
    limits: CostLimits | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        config: dict[str, Any] | Unset = UNSET
        if not isinstance(self.config, Unset):
            config = self.config.to_dict()

        description = self.description

        leaderboard: dict[str, Any] | Unset = UNSET
        if not isinstance(self.leaderboard, Unset):
            leaderboard = self.leaderboard.to_dict()

        limits: dict[str, Any] | Unset = UNSET
        if not isinstance(self.limits, Unset):
            limits = self.limits.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if config is not UNSET:
            field_dict["config"] = config
        if description is not UNSET:
            field_dict["description"] = description
        if leaderboard is not UNSET:
            field_dict["leaderboard"] = leaderboard
        if limits is not UNSET:
            field_dict["limits"] = limits

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.cost_limits import CostLimits
        from ..models.leaderboard_spec import LeaderboardSpec
        from ..models.protocol_create_config import ProtocolCreateConfig

        d = dict(src_dict)
        name = d.pop("name")

        _config = d.pop("config", UNSET)
        config: ProtocolCreateConfig | Unset
        if isinstance(_config, Unset):
            config = UNSET
        else:
            config = ProtocolCreateConfig.from_dict(_config)

        description = d.pop("description", UNSET)

        _leaderboard = d.pop("leaderboard", UNSET)
        leaderboard: LeaderboardSpec | Unset
        if isinstance(_leaderboard, Unset):
            leaderboard = UNSET
        else:
            leaderboard = LeaderboardSpec.from_dict(_leaderboard)

        _limits = d.pop("limits", UNSET)
        limits: CostLimits | Unset
        if isinstance(_limits, Unset):
            limits = UNSET
        else:
            limits = CostLimits.from_dict(_limits)

        protocol_create = cls(
            name=name,
            config=config,
            description=description,
            leaderboard=leaderboard,
            limits=limits,
        )

        return protocol_create
