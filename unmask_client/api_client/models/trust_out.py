from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.challenger_out import ChallengerOut
    from ..models.trust_reason_out import TrustReasonOut


T = TypeVar("T", bound="TrustOut")


@_attrs_define
class TrustOut:
    """The report's trust check: can its verdict be trusted?

    Attributes:
        reasons (list[TrustReasonOut]):
        trustworthy (bool | None): false: see reasons; null: unknown (no report yet, or one without the check).
        attacker (None | str | Unset): With an attacker zoo: the worst-case attacker the check is of.
        challenger (ChallengerOut | None | Unset): The challenger block of the report (null: none was scored, e.g.
            `UNMASK_CHALLENGER=false`, or the verdict's attacker is itself a pretrained verifier).
    """

    reasons: list[TrustReasonOut]
    trustworthy: bool | None
    attacker: str | Unset | None = UNSET
    challenger: ChallengerOut | Unset | None = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.challenger_out import ChallengerOut

        reasons = []
        for reasons_item_data in self.reasons:
            reasons_item = reasons_item_data.to_dict()
            reasons.append(reasons_item)

        trustworthy: bool | None
        trustworthy = self.trustworthy

        attacker: str | Unset | None
        if isinstance(self.attacker, Unset):
            attacker = UNSET
        else:
            attacker = self.attacker

        challenger: dict[str, Any] | Unset | None
        if isinstance(self.challenger, Unset):
            challenger = UNSET
        elif isinstance(self.challenger, ChallengerOut):
            challenger = self.challenger.to_dict()
        else:
            challenger = self.challenger

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "reasons": reasons,
                "trustworthy": trustworthy,
            }
        )
        if attacker is not UNSET:
            field_dict["attacker"] = attacker
        if challenger is not UNSET:
            field_dict["challenger"] = challenger

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.challenger_out import ChallengerOut
        from ..models.trust_reason_out import TrustReasonOut

        d = dict(src_dict)
        reasons = []
        _reasons = d.pop("reasons")
        for reasons_item_data in _reasons:
            reasons_item = TrustReasonOut.from_dict(reasons_item_data)

            reasons.append(reasons_item)

        def _parse_trustworthy(data: object) -> bool | None:
            if data is None:
                return data
            return cast(bool | None, data)

        trustworthy = _parse_trustworthy(d.pop("trustworthy"))

        def _parse_attacker(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        attacker = _parse_attacker(d.pop("attacker", UNSET))

        def _parse_challenger(data: object) -> ChallengerOut | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                challenger_type_0 = ChallengerOut.from_dict(data)

                return challenger_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ChallengerOut | None | Unset, data)

        challenger = _parse_challenger(d.pop("challenger", UNSET))

        trust_out = cls(
            reasons=reasons,
            trustworthy=trustworthy,
            attacker=attacker,
            challenger=challenger,
        )

        trust_out.additional_properties = d
        return trust_out

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
