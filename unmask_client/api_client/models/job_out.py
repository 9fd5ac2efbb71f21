from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.job_out_state import JobOutState
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.job_out_config import JobOutConfig
    from ..models.job_out_evaluator_type_0 import JobOutEvaluatorType0
    from ..models.stage_out import StageOut


T = TypeVar("T", bound="JobOut")


@_attrs_define
class JobOut:
    """A job: what it evaluates, its state and per-stage progress.

    Attributes:
        config (JobOutConfig):
        config_hash (str):
        created_at (datetime.datetime):
        error_message (None | str):
        finished_at (datetime.datetime | None):
        id (int):
        progress (float): Mean stage progress, 0..1.
        protocol_id (int | None):
        stages (list[StageOut]):
        started_at (datetime.datetime | None):
        state (JobOutState):
        submission_id (int):
        team_slug (str):
        charged (bool | Unset): False: an administrator's uncharged re-run. Default: True.
        evaluator (JobOutEvaluatorType0 | None | Unset): Unmask version, git commit, stage versions, config hash and
            scorer id of the code that evaluated it (at creation, then the worker's that completed it).
        idempotency_key (None | str | Unset): Shown to the owning team only.
        phase_id (int | None | Unset): The challenge phase the job is in.
        rerun_of_job_id (int | None | Unset):
    """

    config: JobOutConfig
    config_hash: str
    created_at: datetime.datetime
    error_message: str | None
    finished_at: datetime.datetime | None
    id: int
    progress: float
    protocol_id: int | None
    stages: list[StageOut]
    started_at: datetime.datetime | None
    state: JobOutState
    submission_id: int
    team_slug: str
    charged: bool | Unset = True
    evaluator: JobOutEvaluatorType0 | Unset | None = UNSET
    idempotency_key: str | Unset | None = UNSET
    phase_id: int | Unset | None = UNSET
    rerun_of_job_id: int | Unset | None = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.job_out_evaluator_type_0 import JobOutEvaluatorType0

        config = self.config.to_dict()

        config_hash = self.config_hash

        created_at = self.created_at.isoformat()

        error_message: str | None
        error_message = self.error_message

        finished_at: str | None
        if isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

        id = self.id

        progress = self.progress

        protocol_id: int | None
        protocol_id = self.protocol_id

        stages = []
        for stages_item_data in self.stages:
            stages_item = stages_item_data.to_dict()
            stages.append(stages_item)

        started_at: str | None
        if isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        state = self.state.value

        submission_id = self.submission_id

        team_slug = self.team_slug

        charged = self.charged

        evaluator: dict[str, Any] | Unset | None
        if isinstance(self.evaluator, Unset):
            evaluator = UNSET
        elif isinstance(self.evaluator, JobOutEvaluatorType0):
            evaluator = self.evaluator.to_dict()
        else:
            evaluator = self.evaluator

        idempotency_key: str | Unset | None
        if isinstance(self.idempotency_key, Unset):
            idempotency_key = UNSET
        else:
            idempotency_key = self.idempotency_key

        phase_id: int | Unset | None
        if isinstance(self.phase_id, Unset):
            phase_id = UNSET
        else:
            phase_id = self.phase_id

        rerun_of_job_id: int | Unset | None
        if isinstance(self.rerun_of_job_id, Unset):
            rerun_of_job_id = UNSET
        else:
            rerun_of_job_id = self.rerun_of_job_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "config": config,
                "config_hash": config_hash,
                "created_at": created_at,
                "error_message": error_message,
                "finished_at": finished_at,
                "id": id,
                "progress": progress,
                "protocol_id": protocol_id,
                "stages": stages,
                "started_at": started_at,
                "state": state,
                "submission_id": submission_id,
                "team_slug": team_slug,
            }
        )
        if charged is not UNSET:
            field_dict["charged"] = charged
        if evaluator is not UNSET:
            field_dict["evaluator"] = evaluator
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if phase_id is not UNSET:
            field_dict["phase_id"] = phase_id
        if rerun_of_job_id is not UNSET:
            field_dict["rerun_of_job_id"] = rerun_of_job_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.job_out_config import JobOutConfig
        from ..models.job_out_evaluator_type_0 import JobOutEvaluatorType0
        from ..models.stage_out import StageOut

        d = dict(src_dict)
        config = JobOutConfig.from_dict(d.pop("config"))

        config_hash = d.pop("config_hash")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_error_message(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        error_message = _parse_error_message(d.pop("error_message"))

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

        progress = d.pop("progress")

        def _parse_protocol_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        protocol_id = _parse_protocol_id(d.pop("protocol_id"))

        stages = []
        _stages = d.pop("stages")
        for stages_item_data in _stages:
            stages_item = StageOut.from_dict(stages_item_data)

            stages.append(stages_item)

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

        state = JobOutState(d.pop("state"))

        submission_id = d.pop("submission_id")

        team_slug = d.pop("team_slug")

        charged = d.pop("charged", UNSET)

        def _parse_evaluator(data: object) -> JobOutEvaluatorType0 | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                evaluator_type_0 = JobOutEvaluatorType0.from_dict(data)

                return evaluator_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(JobOutEvaluatorType0 | None | Unset, data)

        evaluator = _parse_evaluator(d.pop("evaluator", UNSET))

        def _parse_idempotency_key(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        idempotency_key = _parse_idempotency_key(d.pop("idempotency_key", UNSET))

        def _parse_phase_id(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        phase_id = _parse_phase_id(d.pop("phase_id", UNSET))

        def _parse_rerun_of_job_id(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        rerun_of_job_id = _parse_rerun_of_job_id(d.pop("rerun_of_job_id", UNSET))

        job_out = cls(
            config=config,
            config_hash=config_hash,
            created_at=created_at,
            error_message=error_message,
            finished_at=finished_at,
            id=id,
            progress=progress,
            protocol_id=protocol_id,
            stages=stages,
            started_at=started_at,
            state=state,
            submission_id=submission_id,
            team_slug=team_slug,
            charged=charged,
            evaluator=evaluator,
            idempotency_key=idempotency_key,
            phase_id=phase_id,
            rerun_of_job_id=rerun_of_job_id,
        )

        job_out.additional_properties = d
        return job_out

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
