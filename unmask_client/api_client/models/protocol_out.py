from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.leaderboard_spec import LeaderboardSpec
    from ..models.protocol_asr_out import ProtocolAsrOut
    from ..models.protocol_out_config import ProtocolOutConfig
    from ..models.protocol_out_limits import ProtocolOutLimits


T = TypeVar("T", bound="ProtocolOut")


@_attrs_define
class ProtocolOut:
    """A registered protocol version.

    Attributes:
        config (ProtocolOutConfig):
        content_hash (str):
        created_at (datetime.datetime):
        description (str):
        id (int):
        leaderboard (LeaderboardSpec): What a protocol's leaderboard ranks by (defaults of the leaderboard route).
        name (str):
        version (int):
        asr (None | ProtocolAsrOut | Unset): The utility ASR trained at registration (docs/utility.md); null when the
            protocol trains none (no WER, or an operator's pretrained ASR).
        limits (ProtocolOutLimits | Unset): The protocol's own cost bounds (unset: server's).
    """

    config: ProtocolOutConfig
    content_hash: str
    created_at: datetime.datetime
    description: str
    id: int
    leaderboard: LeaderboardSpec
    name: str
    version: int
    asr: ProtocolAsrOut | Unset | None = UNSET
    limits: ProtocolOutLimits | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.protocol_asr_out import ProtocolAsrOut

        config = self.config.to_dict()

        content_hash = self.content_hash

        created_at = self.created_at.isoformat()

        description = self.description

        id = self.id

        leaderboard = self.leaderboard.to_dict()

        name = self.name

        version = self.version

        asr: dict[str, Any] | Unset | None
        if isinstance(self.asr, Unset):
            asr = UNSET
        elif isinstance(self.asr, ProtocolAsrOut):
            asr = self.asr.to_dict()
        else:
            asr = self.asr

        limits: dict[str, Any] | Unset = UNSET
        if not isinstance(self.limits, Unset):
            limits = self.limits.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "config": config,
                "content_hash": content_hash,
                "created_at": created_at,
                "description": description,
                "id": id,
                "leaderboard": leaderboard,
                "name": name,
                "version": version,
            }
        )
        if asr is not UNSET:
            field_dict["asr"] = asr
        if limits is not UNSET:
            field_dict["limits"] = limits

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.leaderboard_spec import LeaderboardSpec
        from ..models.protocol_asr_out import ProtocolAsrOut
        from ..models.protocol_out_config import ProtocolOutConfig
        from ..models.protocol_out_limits import ProtocolOutLimits

        d = dict(src_dict)
        config = ProtocolOutConfig.from_dict(d.pop("config"))

        content_hash = d.pop("content_hash")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        description = d.pop("description")

        id = d.pop("id")

        leaderboard = LeaderboardSpec.from_dict(d.pop("leaderboard"))

        name = d.pop("name")

        version = d.pop("version")

        def _parse_asr(data: object) -> ProtocolAsrOut | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                asr_type_0 = ProtocolAsrOut.from_dict(data)

                return asr_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ProtocolAsrOut | Unset, data)

        asr = _parse_asr(d.pop("asr", UNSET))

        _limits = d.pop("limits", UNSET)
        limits: ProtocolOutLimits | Unset
        if isinstance(_limits, Unset):
            limits = UNSET
        else:
            limits = ProtocolOutLimits.from_dict(_limits)

        protocol_out = cls(
            config=config,
            content_hash=content_hash,
            created_at=created_at,
            description=description,
            id=id,
            leaderboard=leaderboard,
            name=name,
            version=version,
            asr=asr,
            limits=limits,
        )

        protocol_out.additional_properties = d
        return protocol_out

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
