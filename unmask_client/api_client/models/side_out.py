from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SideOut")


@_attrs_define
class SideOut:
    """
    Attributes:
        job_id (int): The job that stands for it (its leaderboard job).
        submission_id (int):
        submission_name (str):
        team_slug (str):
    """

    job_id: int
    submission_id: int
    submission_name: str
    team_slug: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        submission_id = self.submission_id

        submission_name = self.submission_name

        team_slug = self.team_slug

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "submission_id": submission_id,
                "submission_name": submission_name,
                "team_slug": team_slug,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        job_id = d.pop("job_id")

        submission_id = d.pop("submission_id")

        submission_name = d.pop("submission_name")

        team_slug = d.pop("team_slug")

        side_out = cls(
            job_id=job_id,
            submission_id=submission_id,
            submission_name=submission_name,
            team_slug=team_slug,
        )

        side_out.additional_properties = d
        return side_out

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
