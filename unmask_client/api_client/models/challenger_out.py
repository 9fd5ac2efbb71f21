from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.challenger_attacker_out import ChallengerAttackerOut
    from ..models.challenger_out_scenarios import ChallengerOutScenarios


T = TypeVar("T", bound="ChallengerOut")


@_attrs_define
class ChallengerOut:
    """A pretrained verifier scored on the verdict's trials (services/pipeline/challenger.py):
    when it beats the verdict's attacker beyond the paired interval, the verdict is not
    trustworthy.

        Attributes:
            attacker (str): The challenger (`ge2e`).
            scenario (str): The headline scenario it was scored on.
            backend (None | str | Unset):
            compute_seconds (float | None | Unset): Wall seconds its stages took when they were computed.
            confidence (float | None | Unset):
            cpu_seconds (float | None | Unset): CPU seconds it cost this run.
            difference_points (float | None | Unset):
            eer_percent (float | None | Unset): Its EER (%) on the headline's trials.
            family (None | str | Unset):
            headline (ChallengerAttackerOut | None | Unset):
            interval_points (list[float] | None | Unset):
            n_speakers (int | None | Unset): Evaluation speakers the interval draws.
            scenarios (ChallengerOutScenarios | Unset): The same challenge per attack scenario scored.
            stronger (bool | None | Unset):
    """

    attacker: str
    scenario: str
    backend: str | Unset | None = UNSET
    compute_seconds: float | Unset | None = UNSET
    confidence: float | Unset | None = UNSET
    cpu_seconds: float | Unset | None = UNSET
    difference_points: float | Unset | None = UNSET
    eer_percent: float | Unset | None = UNSET
    family: str | Unset | None = UNSET
    headline: ChallengerAttackerOut | Unset | None = UNSET
    interval_points: list[float] | Unset | None = UNSET
    n_speakers: int | Unset | None = UNSET
    scenarios: ChallengerOutScenarios | Unset = UNSET
    stronger: bool | Unset | None = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.challenger_attacker_out import ChallengerAttackerOut

        attacker = self.attacker

        scenario = self.scenario

        backend: str | Unset | None
        if isinstance(self.backend, Unset):
            backend = UNSET
        else:
            backend = self.backend

        compute_seconds: float | Unset | None
        if isinstance(self.compute_seconds, Unset):
            compute_seconds = UNSET
        else:
            compute_seconds = self.compute_seconds

        confidence: float | Unset | None
        if isinstance(self.confidence, Unset):
            confidence = UNSET
        else:
            confidence = self.confidence

        cpu_seconds: float | Unset | None
        if isinstance(self.cpu_seconds, Unset):
            cpu_seconds = UNSET
        else:
            cpu_seconds = self.cpu_seconds

        difference_points: float | Unset | None
        if isinstance(self.difference_points, Unset):
            difference_points = UNSET
        else:
            difference_points = self.difference_points

        eer_percent: float | Unset | None
        if isinstance(self.eer_percent, Unset):
            eer_percent = UNSET
        else:
            eer_percent = self.eer_percent

        family: str | Unset | None
        if isinstance(self.family, Unset):
            family = UNSET
        else:
            family = self.family

        headline: dict[str, Any] | Unset | None
        if isinstance(self.headline, Unset):
            headline = UNSET
        elif isinstance(self.headline, ChallengerAttackerOut):
            headline = self.headline.to_dict()
        else:
            headline = self.headline

        interval_points: list[float] | Unset | None
        if isinstance(self.interval_points, Unset):
            interval_points = UNSET
        elif isinstance(self.interval_points, list):
            interval_points = self.interval_points

        else:
            interval_points = self.interval_points

        n_speakers: int | Unset | None
        if isinstance(self.n_speakers, Unset):
            n_speakers = UNSET
        else:
            n_speakers = self.n_speakers

        scenarios: dict[str, Any] | Unset = UNSET
        if not isinstance(self.scenarios, Unset):
            scenarios = self.scenarios.to_dict()

        stronger: bool | Unset | None
        if isinstance(self.stronger, Unset):
            stronger = UNSET
        else:
            stronger = self.stronger

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attacker": attacker,
                "scenario": scenario,
            }
        )
        if backend is not UNSET:
            field_dict["backend"] = backend
        if compute_seconds is not UNSET:
            field_dict["compute_seconds"] = compute_seconds
        if confidence is not UNSET:
            field_dict["confidence"] = confidence
        if cpu_seconds is not UNSET:
            field_dict["cpu_seconds"] = cpu_seconds
        if difference_points is not UNSET:
            field_dict["difference_points"] = difference_points
        if eer_percent is not UNSET:
            field_dict["eer_percent"] = eer_percent
        if family is not UNSET:
            field_dict["family"] = family
        if headline is not UNSET:
            field_dict["headline"] = headline
        if interval_points is not UNSET:
            field_dict["interval_points"] = interval_points
        if n_speakers is not UNSET:
            field_dict["n_speakers"] = n_speakers
        if scenarios is not UNSET:
            field_dict["scenarios"] = scenarios
        if stronger is not UNSET:
            field_dict["stronger"] = stronger

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.challenger_attacker_out import ChallengerAttackerOut
        from ..models.challenger_out_scenarios import ChallengerOutScenarios

        d = dict(src_dict)
        attacker = d.pop("attacker")

        scenario = d.pop("scenario")

        def _parse_backend(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        backend = _parse_backend(d.pop("backend", UNSET))

        def _parse_compute_seconds(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        compute_seconds = _parse_compute_seconds(d.pop("compute_seconds", UNSET))

        def _parse_confidence(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        confidence = _parse_confidence(d.pop("confidence", UNSET))

        def _parse_cpu_seconds(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cpu_seconds = _parse_cpu_seconds(d.pop("cpu_seconds", UNSET))

        def _parse_difference_points(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        difference_points = _parse_difference_points(d.pop("difference_points", UNSET))

        def _parse_eer_percent(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        eer_percent = _parse_eer_percent(d.pop("eer_percent", UNSET))

        def _parse_family(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        family = _parse_family(d.pop("family", UNSET))

        def _parse_headline(data: object) -> ChallengerAttackerOut | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                headline_type_0 = ChallengerAttackerOut.from_dict(data)

                return headline_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ChallengerAttackerOut | None | Unset, data)

        headline = _parse_headline(d.pop("headline", UNSET))

        def _parse_interval_points(data: object) -> list[float] | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                interval_points_type_0 = cast(list[float], data)

                return interval_points_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        interval_points = _parse_interval_points(d.pop("interval_points", UNSET))

        def _parse_n_speakers(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        n_speakers = _parse_n_speakers(d.pop("n_speakers", UNSET))

        _scenarios = d.pop("scenarios", UNSET)
        scenarios: ChallengerOutScenarios | Unset
        if isinstance(_scenarios, Unset):
            scenarios = UNSET
        else:
            scenarios = ChallengerOutScenarios.from_dict(_scenarios)

        def _parse_stronger(data: object) -> bool | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        stronger = _parse_stronger(d.pop("stronger", UNSET))

        challenger_out = cls(
            attacker=attacker,
            scenario=scenario,
            backend=backend,
            compute_seconds=compute_seconds,
            confidence=confidence,
            cpu_seconds=cpu_seconds,
            difference_points=difference_points,
            eer_percent=eer_percent,
            family=family,
            headline=headline,
            interval_points=interval_points,
            n_speakers=n_speakers,
            scenarios=scenarios,
            stronger=stronger,
        )

        challenger_out.additional_properties = d
        return challenger_out

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
