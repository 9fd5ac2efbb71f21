from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.results_out_state import ResultsOutState
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.result_out import ResultOut
    from ..models.results_out_worst_case_type_0 import ResultsOutWorstCaseType0
    from ..models.trust_out import TrustOut


T = TypeVar("T", bound="ResultsOut")


@_attrs_define
class ResultsOut:
    """A job's metric rows (long format) and its report's trust check.

    Attributes:
        job_id (int):
        results (list[ResultOut]):
        state (ResultsOutState):
        trust (TrustOut): The report's trust check: can its verdict be trusted?
        worst_case (None | ResultsOutWorstCaseType0 | Unset): Per scenario, the worst case for the maker over the job's
            attacker zoo; null = the job ran one attacker (or has no report yet).
    """

    job_id: int
    results: list[ResultOut]
    state: ResultsOutState
    trust: TrustOut
    worst_case: ResultsOutWorstCaseType0 | Unset | None = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.results_out_worst_case_type_0 import ResultsOutWorstCaseType0

        job_id = self.job_id

        results = []
        for results_item_data in self.results:
            results_item = results_item_data.to_dict()
            results.append(results_item)

        state = self.state.value

        trust = self.trust.to_dict()

        worst_case: dict[str, Any] | Unset | None
        if isinstance(self.worst_case, Unset):
            worst_case = UNSET
        elif isinstance(self.worst_case, ResultsOutWorstCaseType0):
            worst_case = self.worst_case.to_dict()
        else:
            worst_case = self.worst_case

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "results": results,
                "state": state,
                "trust": trust,
            }
        )
        if worst_case is not UNSET:
            field_dict["worst_case"] = worst_case

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.result_out import ResultOut
        from ..models.results_out_worst_case_type_0 import ResultsOutWorstCaseType0
        from ..models.trust_out import TrustOut

        d = dict(src_dict)
        job_id = d.pop("job_id")

        results = []
        _results = d.pop("results")
        for results_item_data in _results:
            results_item = ResultOut.from_dict(results_item_data)

            results.append(results_item)

        state = ResultsOutState(d.pop("state"))

        trust = TrustOut.from_dict(d.pop("trust"))

        def _parse_worst_case(data: object) -> ResultsOutWorstCaseType0 | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                worst_case_type_0 = ResultsOutWorstCaseType0.from_dict(data)

                return worst_case_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ResultsOutWorstCaseType0 | Unset, data)

        worst_case = _parse_worst_case(d.pop("worst_case", UNSET))

        results_out = cls(
            job_id=job_id,
            results=results,
            state=state,
            trust=trust,
            worst_case=worst_case,
        )

        results_out.additional_properties = d
        return results_out

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
