from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.field_problem import FieldProblem


T = TypeVar("T", bound="Problem")


@_attrs_define
class Problem:
    """An error (RFC 9457 problem details), sent as `application/problem+json`.

    Attributes:
        detail (str): What went wrong in this request, naming the field/object.
        instance (str): The request path the problem occurred at.
        status (int): The HTTP status code.
        title (str): Short summary of the kind of problem.
        type_ (str): URI naming the kind of problem, e.g. `urn:unmask:problem:...`.
        errors (list[FieldProblem] | None | Unset): Validation errors only: every invalid field.
    """

    detail: str
    instance: str
    status: int
    title: str
    type_: str
    errors: list[FieldProblem] | Unset | None = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        detail = self.detail

        instance = self.instance

        status = self.status

        title = self.title

        type_ = self.type_

        errors: list[dict[str, Any]] | Unset | None
        if isinstance(self.errors, Unset):
            errors = UNSET
        elif isinstance(self.errors, list):
            errors = []
            for errors_type_0_item_data in self.errors:
                errors_type_0_item = errors_type_0_item_data.to_dict()
                errors.append(errors_type_0_item)

        else:
            errors = self.errors

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "detail": detail,
                "instance": instance,
                "status": status,
                "title": title,
                "type": type_,
            }
        )
        if errors is not UNSET:
            field_dict["errors"] = errors

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.field_problem import FieldProblem

        d = dict(src_dict)
        detail = d.pop("detail")

        instance = d.pop("instance")

        status = d.pop("status")

        title = d.pop("title")

        type_ = d.pop("type")

        def _parse_errors(data: object) -> list[FieldProblem] | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                errors_type_0 = []
                _errors_type_0 = data
                for errors_type_0_item_data in _errors_type_0:
                    errors_type_0_item = FieldProblem.from_dict(errors_type_0_item_data)

                    errors_type_0.append(errors_type_0_item)

                return errors_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[FieldProblem] | None | Unset, data)

        errors = _parse_errors(d.pop("errors", UNSET))

        problem = cls(
            detail=detail,
            instance=instance,
            status=status,
            title=title,
            type_=type_,
            errors=errors,
        )

        problem.additional_properties = d
        return problem

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
