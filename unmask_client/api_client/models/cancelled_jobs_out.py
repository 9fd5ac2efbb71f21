from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="CancelledJobsOut")


@_attrs_define
class CancelledJobsOut:
    """The jobs a bulk cancel stopped.

    Attributes:
        cancelled_job_ids (list[int]): The submission's jobs that were queued or running, now cancelled (oldest first);
            empty when none was.
        submission_id (int):
    """

    cancelled_job_ids: list[int]
    submission_id: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cancelled_job_ids = self.cancelled_job_ids

        submission_id = self.submission_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cancelled_job_ids": cancelled_job_ids,
                "submission_id": submission_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cancelled_job_ids = cast(list[int], d.pop("cancelled_job_ids"))

        submission_id = d.pop("submission_id")

        cancelled_jobs_out = cls(
            cancelled_job_ids=cancelled_job_ids,
            submission_id=submission_id,
        )

        cancelled_jobs_out.additional_properties = d
        return cancelled_jobs_out

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
