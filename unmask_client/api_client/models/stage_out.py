from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.stage_out_state import StageOutState

T = TypeVar("T", bound="StageOut")


@_attrs_define
class StageOut:
    """One stage of a job: state, progress (0..1), attempts, log tail.

    Attributes:
        attempts (int):
        error (None | str):
        finished_at (datetime.datetime | None):
        heartbeat_at (datetime.datetime | None):
        log_tail (str): The last characters of the stage log (see `log_chars`).
        name (str):
        position (int):
        progress (float):
        started_at (datetime.datetime | None):
        state (StageOutState):
        worker_host (None | str):
    """

    attempts: int
    error: str | None
    finished_at: datetime.datetime | None
    heartbeat_at: datetime.datetime | None
    log_tail: str
    name: str
    position: int
    progress: float
    started_at: datetime.datetime | None
    state: StageOutState
    worker_host: str | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        error: str | None
        error = self.error

        finished_at: str | None
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        heartbeat_at: str | None
        if isinstance(self.heartbeat_at, datetime.datetime):
            heartbeat_at = self.heartbeat_at.isoformat()
        else:
            heartbeat_at = self.heartbeat_at

        log_tail = self.log_tail

        name = self.name

        position = self.position

        progress = self.progress

        started_at: str | None
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        state = self.state.value

        worker_host: str | None
        worker_host = self.worker_host

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempts": attempts,
                "error": error,
                "finished_at": finished_at,
                "heartbeat_at": heartbeat_at,
                "log_tail": log_tail,
                "name": name,
                "position": position,
                "progress": progress,
                "started_at": started_at,
                "state": state,
                "worker_host": worker_host,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        attempts = d.pop("attempts")

        def _parse_error(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

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

        def _parse_heartbeat_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                heartbeat_at_type_0 = datetime.datetime.fromisoformat(data)

                return heartbeat_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        heartbeat_at = _parse_heartbeat_at(d.pop("heartbeat_at"))

        log_tail = d.pop("log_tail")

        name = d.pop("name")

        position = d.pop("position")

        progress = d.pop("progress")

        def _parse_started_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        started_at = _parse_started_at(d.pop("started_at"))

        state = StageOutState(d.pop("state"))

        def _parse_worker_host(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        worker_host = _parse_worker_host(d.pop("worker_host"))

        stage_out = cls(
            attempts=attempts,
            error=error,
            finished_at=finished_at,
            heartbeat_at=heartbeat_at,
            log_tail=log_tail,
            name=name,
            position=position,
            progress=progress,
            started_at=started_at,
            state=state,
            worker_host=worker_host,
        )

        stage_out.additional_properties = d
        return stage_out

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
