from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.job_create_config_overrides import JobCreateConfigOverrides


T = TypeVar("T", bound="JobCreate")


@_attrs_define
class JobCreate:
    """Evaluate a submission under a protocol, optionally overriding config fields.

    Attributes:
        protocol_id (int):
        submission_id (int):
        config_overrides (JobCreateConfigOverrides | Unset): Merged (recursively) into the protocol's config; validated
            as an EvaluationConfig (docs/evaluation.md). `anonymizer`, `protocol` and `synthetic` cannot be overridden; the
            cost knobs are bounded by the protocol's `limits`.
        phase (None | str | Unset): The protocol's phase to submit to (default: the one open now); 409 after its end or
            over its per-team limit.
    """

    protocol_id: int
    submission_id: int
    config_overrides: JobCreateConfigOverrides | Unset = UNSET
    phase: str | Unset | None = UNSET

    def to_dict(self) -> dict[str, Any]:
        protocol_id = self.protocol_id

        submission_id = self.submission_id

        config_overrides: dict[str, Any] | Unset = UNSET
        if not isinstance(self.config_overrides, Unset):
            config_overrides = self.config_overrides.to_dict()

        phase: str | Unset | None
        if isinstance(self.phase, Unset):
            phase = UNSET
        else:
            phase = self.phase

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "protocol_id": protocol_id,
                "submission_id": submission_id,
            }
        )
        if config_overrides is not UNSET:
            field_dict["config_overrides"] = config_overrides
        if phase is not UNSET:
            field_dict["phase"] = phase

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.job_create_config_overrides import JobCreateConfigOverrides

        d = dict(src_dict)
        protocol_id = d.pop("protocol_id")

        submission_id = d.pop("submission_id")

        _config_overrides = d.pop("config_overrides", UNSET)
        config_overrides: JobCreateConfigOverrides | Unset
        if isinstance(_config_overrides, Unset):
            config_overrides = UNSET
        else:
            config_overrides = JobCreateConfigOverrides.from_dict(_config_overrides)

        def _parse_phase(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        phase = _parse_phase(d.pop("phase", UNSET))

        job_create = cls(
            protocol_id=protocol_id,
            submission_id=submission_id,
            config_overrides=config_overrides,
            phase=phase,
        )

        return job_create
