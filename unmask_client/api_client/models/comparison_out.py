from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.comparison_out_det_curves import ComparisonOutDetCurves
    from ..models.comparison_out_paired_notes import ComparisonOutPairedNotes
    from ..models.comparison_out_per_speaker_eer import ComparisonOutPerSpeakerEer
    from ..models.metric_comparison_out import MetricComparisonOut
    from ..models.side_out import SideOut


T = TypeVar("T", bound="ComparisonOut")


@_attrs_define
class ComparisonOut:
    """Every catalogued metric of both submissions' leaderboard jobs, side by side.

    Attributes:
        a (SideOut):
        b (SideOut):
        det_curves (ComparisonOutDetCurves): "<scenario>|<backend>" -> {"a": curve, "b": curve} (pfa, pmiss, eer %).
        metrics (list[MetricComparisonOut]):
        paired_notes (ComparisonOutPairedNotes): "<scenario>|<backend>" -> why it has no paired interval.
        per_speaker_eer (ComparisonOutPerSpeakerEer): "<scenario>|<backend>" -> both jobs' per-speaker EERs (mean over
            seeds, of the attacker shown), where both kept their trials.
        protocol_id (int):
        utility (list[MetricComparisonOut]):
    """

    a: SideOut
    b: SideOut
    det_curves: ComparisonOutDetCurves
    metrics: list[MetricComparisonOut]
    paired_notes: ComparisonOutPairedNotes
    per_speaker_eer: ComparisonOutPerSpeakerEer
    protocol_id: int
    utility: list[MetricComparisonOut]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        a = self.a.to_dict()

        b = self.b.to_dict()

        det_curves = self.det_curves.to_dict()

        metrics = []
        for metrics_item_data in self.metrics:
            metrics_item = metrics_item_data.to_dict()
            metrics.append(metrics_item)

        paired_notes = self.paired_notes.to_dict()

        per_speaker_eer = self.per_speaker_eer.to_dict()

        protocol_id = self.protocol_id

        utility = []
        for utility_item_data in self.utility:
            utility_item = utility_item_data.to_dict()
            utility.append(utility_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "a": a,
                "b": b,
                "det_curves": det_curves,
                "metrics": metrics,
                "paired_notes": paired_notes,
                "per_speaker_eer": per_speaker_eer,
                "protocol_id": protocol_id,
                "utility": utility,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.comparison_out_det_curves import ComparisonOutDetCurves
        from ..models.comparison_out_paired_notes import ComparisonOutPairedNotes
        from ..models.comparison_out_per_speaker_eer import ComparisonOutPerSpeakerEer
        from ..models.metric_comparison_out import MetricComparisonOut
        from ..models.side_out import SideOut

        d = dict(src_dict)
        a = SideOut.from_dict(d.pop("a"))

        b = SideOut.from_dict(d.pop("b"))

        det_curves = ComparisonOutDetCurves.from_dict(d.pop("det_curves"))

        metrics = []
        _metrics = d.pop("metrics")
        for metrics_item_data in _metrics:
            metrics_item = MetricComparisonOut.from_dict(metrics_item_data)

            metrics.append(metrics_item)

        paired_notes = ComparisonOutPairedNotes.from_dict(d.pop("paired_notes"))

        per_speaker_eer = ComparisonOutPerSpeakerEer.from_dict(d.pop("per_speaker_eer"))

        protocol_id = d.pop("protocol_id")

        utility = []
        _utility = d.pop("utility")
        for utility_item_data in _utility:
            utility_item = MetricComparisonOut.from_dict(utility_item_data)

            utility.append(utility_item)

        comparison_out = cls(
            a=a,
            b=b,
            det_curves=det_curves,
            metrics=metrics,
            paired_notes=paired_notes,
            per_speaker_eer=per_speaker_eer,
            protocol_id=protocol_id,
            utility=utility,
        )

        comparison_out.additional_properties = d
        return comparison_out

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
