from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="CostLimits")


@_attrs_define
class CostLimits:
    """Per-protocol upper bounds of a job's cost knobs (null = the server's default).

    Attributes:
        attackers (int | None | Unset): Attackers of the zoo.
        batch_size (int | None | Unset): training.batch_size
        bootstrap_resamples (int | None | Unset): Bootstrap resamples (metrics and SRD analysis).
        crop_seconds (float | None | Unset): training.crop_seconds (s), every attacker.
        epochs (int | None | Unset): training.epochs
        phone_units (int | None | Unset):
        seeds (int | None | Unset): Entries of `seeds`.
        size_study_counts (int | None | Unset):
        size_study_samples (int | None | Unset):
        size_study_target_seeds (int | None | Unset):
        synthetic_speakers (int | None | Unset):
        synthetic_utts_per_speaker (int | None | Unset):
        training_work (float | None | Unset): seeds x trained scenarios x sum of attackers' epochs x crop_seconds.
    """

    attackers: int | Unset | None = UNSET
    batch_size: int | Unset | None = UNSET
    bootstrap_resamples: int | Unset | None = UNSET
    crop_seconds: float | Unset | None = UNSET
    epochs: int | Unset | None = UNSET
    phone_units: int | Unset | None = UNSET
    seeds: int | Unset | None = UNSET
    size_study_counts: int | Unset | None = UNSET
    size_study_samples: int | Unset | None = UNSET
    size_study_target_seeds: int | Unset | None = UNSET
    synthetic_speakers: int | Unset | None = UNSET
    synthetic_utts_per_speaker: int | Unset | None = UNSET
    training_work: float | Unset | None = UNSET

    def to_dict(self) -> dict[str, Any]:
        attackers: int | Unset | None
        if isinstance(self.attackers, Unset):
            attackers = UNSET
        else:
            attackers = self.attackers

        batch_size: int | Unset | None
        if isinstance(self.batch_size, Unset):
            batch_size = UNSET
        else:
            batch_size = self.batch_size

        bootstrap_resamples: int | Unset | None
        if isinstance(self.bootstrap_resamples, Unset):
            bootstrap_resamples = UNSET
        else:
            bootstrap_resamples = self.bootstrap_resamples

        crop_seconds: float | Unset | None
        if isinstance(self.crop_seconds, Unset):
            crop_seconds = UNSET
        else:
            crop_seconds = self.crop_seconds

        epochs: int | Unset | None
        if isinstance(self.epochs, Unset):
            epochs = UNSET
        else:
            epochs = self.epochs

        phone_units: int | Unset | None
        if isinstance(self.phone_units, Unset):
            phone_units = UNSET
        else:
            phone_units = self.phone_units

        seeds: int | Unset | None
        if isinstance(self.seeds, Unset):
            seeds = UNSET
        else:
            seeds = self.seeds

        size_study_counts: int | Unset | None
        if isinstance(self.size_study_counts, Unset):
            size_study_counts = UNSET
        else:
            size_study_counts = self.size_study_counts

        size_study_samples: int | Unset | None
        if isinstance(self.size_study_samples, Unset):
            size_study_samples = UNSET
        else:
            size_study_samples = self.size_study_samples

        size_study_target_seeds: int | Unset | None
        if isinstance(self.size_study_target_seeds, Unset):
            size_study_target_seeds = UNSET
        else:
            size_study_target_seeds = self.size_study_target_seeds

        synthetic_speakers: int | Unset | None
        if isinstance(self.synthetic_speakers, Unset):
            synthetic_speakers = UNSET
        else:
            synthetic_speakers = self.synthetic_speakers

        synthetic_utts_per_speaker: int | Unset | None
        if isinstance(self.synthetic_utts_per_speaker, Unset):
            synthetic_utts_per_speaker = UNSET
        else:
            synthetic_utts_per_speaker = self.synthetic_utts_per_speaker

        training_work: float | Unset | None
        if isinstance(self.training_work, Unset):
            training_work = UNSET
        else:
            training_work = self.training_work

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if attackers is not UNSET:
            field_dict["attackers"] = attackers
        if batch_size is not UNSET:
            field_dict["batch_size"] = batch_size
        if bootstrap_resamples is not UNSET:
            field_dict["bootstrap_resamples"] = bootstrap_resamples
        if crop_seconds is not UNSET:
            field_dict["crop_seconds"] = crop_seconds
        if epochs is not UNSET:
            field_dict["epochs"] = epochs
        if phone_units is not UNSET:
            field_dict["phone_units"] = phone_units
        if seeds is not UNSET:
            field_dict["seeds"] = seeds
        if size_study_counts is not UNSET:
            field_dict["size_study_counts"] = size_study_counts
        if size_study_samples is not UNSET:
            field_dict["size_study_samples"] = size_study_samples
        if size_study_target_seeds is not UNSET:
            field_dict["size_study_target_seeds"] = size_study_target_seeds
        if synthetic_speakers is not UNSET:
            field_dict["synthetic_speakers"] = synthetic_speakers
        if synthetic_utts_per_speaker is not UNSET:
            field_dict["synthetic_utts_per_speaker"] = synthetic_utts_per_speaker
        if training_work is not UNSET:
            field_dict["training_work"] = training_work

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_attackers(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        attackers = _parse_attackers(d.pop("attackers", UNSET))

        def _parse_batch_size(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        batch_size = _parse_batch_size(d.pop("batch_size", UNSET))

        def _parse_bootstrap_resamples(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        bootstrap_resamples = _parse_bootstrap_resamples(d.pop("bootstrap_resamples", UNSET))

        def _parse_crop_seconds(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        crop_seconds = _parse_crop_seconds(d.pop("crop_seconds", UNSET))

        def _parse_epochs(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        epochs = _parse_epochs(d.pop("epochs", UNSET))

        def _parse_phone_units(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        phone_units = _parse_phone_units(d.pop("phone_units", UNSET))

        def _parse_seeds(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        seeds = _parse_seeds(d.pop("seeds", UNSET))

        def _parse_size_study_counts(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        size_study_counts = _parse_size_study_counts(d.pop("size_study_counts", UNSET))

        def _parse_size_study_samples(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        size_study_samples = _parse_size_study_samples(d.pop("size_study_samples", UNSET))

        def _parse_size_study_target_seeds(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        size_study_target_seeds = _parse_size_study_target_seeds(
            d.pop("size_study_target_seeds", UNSET)
        )

        def _parse_synthetic_speakers(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        synthetic_speakers = _parse_synthetic_speakers(d.pop("synthetic_speakers", UNSET))

        def _parse_synthetic_utts_per_speaker(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        synthetic_utts_per_speaker = _parse_synthetic_utts_per_speaker(
            d.pop("synthetic_utts_per_speaker", UNSET)
        )

        def _parse_training_work(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        training_work = _parse_training_work(d.pop("training_work", UNSET))

        cost_limits = cls(
            attackers=attackers,
            batch_size=batch_size,
            bootstrap_resamples=bootstrap_resamples,
            crop_seconds=crop_seconds,
            epochs=epochs,
            phone_units=phone_units,
            seeds=seeds,
            size_study_counts=size_study_counts,
            size_study_samples=size_study_samples,
            size_study_target_seeds=size_study_target_seeds,
            synthetic_speakers=synthetic_speakers,
            synthetic_utts_per_speaker=synthetic_utts_per_speaker,
            training_work=training_work,
        )

        return cost_limits
