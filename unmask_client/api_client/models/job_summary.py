from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.job_summary_state import JobSummaryState

T = TypeVar("T", bound="JobSummary")


@_attrs_define
class JobSummary:
    """A job in a list (no config, no logs).

    Attributes:
        created_at (datetime.datetime):
        finished_at (datetime.datetime | None):
        id (int):
        protocol_id (int | None):
        state (JobSummaryState):
        submission_id (int):
    """

    created_at: datetime.datetime
    finished_at: datetime.datetime | None
    id: int
    protocol_id: int | None
    state: JobSummaryState
    submission_id: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        finished_at: str | None
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        id = self.id

        protocol_id: int | None
        protocol_id = self.protocol_id

        state = self.state.value

        submission_id = self.submission_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "finished_at": finished_at,
                "id": id,
                "protocol_id": protocol_id,
                "state": state,
                "submission_id": submission_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_finished_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        finished_at = _parse_finished_at(d.pop("finished_at"))

        id = d.pop("id")

        def _parse_protocol_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        protocol_id = _parse_protocol_id(d.pop("protocol_id"))

        state = JobSummaryState(d.pop("state"))

        submission_id = d.pop("submission_id")

        job_summary = cls(
            created_at=created_at,
            finished_at=finished_at,
            id=id,
            protocol_id=protocol_id,
            state=state,
            submission_id=submission_id,
        )

        job_summary.additional_properties = d
        return job_summary

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
