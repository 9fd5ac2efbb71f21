from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.builtin_spec_name import BuiltinSpecName
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.builtin_spec_params import BuiltinSpecParams


T = TypeVar("T", bound="BuiltinSpec")


@_attrs_define
class BuiltinSpec:
    """A built-in anonymizer (docs/anonymizers.md).

    Attributes:
        name (BuiltinSpecName): A built-in anonymizer.
        params (BuiltinSpecParams | Unset):
    """

    name: BuiltinSpecName
    params: BuiltinSpecParams | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        name = self.name.value

        params: dict[str, Any] | Unset = UNSET
        if not isinstance(self.params, Unset):
            params = self.params.to_dict()

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
            }
        )
        if params is not UNSET:
            field_dict["params"] = params

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.builtin_spec_params import BuiltinSpecParams

        d = dict(src_dict)
        name = BuiltinSpecName(d.pop("name"))

        _params = d.pop("params", UNSET)
        params: BuiltinSpecParams | Unset
        if isinstance(_params, Unset):
            params = UNSET
        else:
            params = BuiltinSpecParams.from_dict(_params)

        builtin_spec = cls(
            name=name,
            params=params,
        )

        return builtin_spec
