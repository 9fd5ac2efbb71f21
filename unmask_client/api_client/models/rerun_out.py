from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.rerun_out_current_evaluator import RerunOutCurrentEvaluator
    from ..models.rerun_out_queued import RerunOutQueued


T = TypeVar("T", bound="RerunOut")


@_attrs_define
class RerunOut:
    """The re-runs queued (uncharged): old job id -> new job id.

    Attributes:
        already_running (list[int]): Submissions skipped: a re-run of theirs is still queued or running.
        current_evaluator (RerunOutCurrentEvaluator):
        current_scorer (str):
        queued (RerunOutQueued):
    """

    already_running: list[int]
    current_evaluator: RerunOutCurrentEvaluator
    current_scorer: str
    queued: RerunOutQueued
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        already_running = self.already_running

        current_evaluator = self.current_evaluator.to_dict()

        current_scorer = self.current_scorer

        queued = self.queued.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "already_running": already_running,
                "current_evaluator": current_evaluator,
                "current_scorer": current_scorer,
                "queued": queued,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.rerun_out_current_evaluator import RerunOutCurrentEvaluator
        from ..models.rerun_out_queued import RerunOutQueued

        d = dict(src_dict)
        already_running = cast(list[int], d.pop("already_running"))

        current_evaluator = RerunOutCurrentEvaluator.from_dict(d.pop("current_evaluator"))

        current_scorer = d.pop("current_scorer")

        queued = RerunOutQueued.from_dict(d.pop("queued"))

        rerun_out = cls(
            already_running=already_running,
            current_evaluator=current_evaluator,
            current_scorer=current_scorer,
            queued=queued,
        )

        rerun_out.additional_properties = d
        return rerun_out

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
