from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="RerunRequest")


@_attrs_define
class RerunRequest:
    """Which leaderboard jobs to re-run with the current evaluator.

    Attributes:
        include_current (bool | Unset): Also re-run jobs already evaluated by the current scorer. Default: False.
    """

    include_current: bool | Unset = False

    def to_dict(self) -> dict[str, Any]:
        include_current = self.include_current

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if include_current is not UNSET:
            field_dict["include_current"] = include_current

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        include_current = d.pop("include_current", UNSET)

        rerun_request = cls(
            include_current=include_current,
        )

        return rerun_request
