from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.quota_usage import QuotaUsage


T = TypeVar("T", bound="Quotas")


@_attrs_define
class Quotas:
    """The team's quotas (failed/cancelled jobs and rejected submissions are not charged).

    Attributes:
        archive_storage_bytes (QuotaUsage): One quota: the limit and what the team uses now.
        concurrent_jobs (QuotaUsage): One quota: the limit and what the team uses now.
        jobs_per_day (QuotaUsage): One quota: the limit and what the team uses now.
        submissions_per_day (QuotaUsage): One quota: the limit and what the team uses now.
    """

    archive_storage_bytes: QuotaUsage
    concurrent_jobs: QuotaUsage
    jobs_per_day: QuotaUsage
    submissions_per_day: QuotaUsage
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        archive_storage_bytes = self.archive_storage_bytes.to_dict()

        concurrent_jobs = self.concurrent_jobs.to_dict()

        jobs_per_day = self.jobs_per_day.to_dict()

        submissions_per_day = self.submissions_per_day.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "archive_storage_bytes": archive_storage_bytes,
                "concurrent_jobs": concurrent_jobs,
                "jobs_per_day": jobs_per_day,
                "submissions_per_day": submissions_per_day,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.quota_usage import QuotaUsage

        d = dict(src_dict)
        archive_storage_bytes = QuotaUsage.from_dict(d.pop("archive_storage_bytes"))

        concurrent_jobs = QuotaUsage.from_dict(d.pop("concurrent_jobs"))

        jobs_per_day = QuotaUsage.from_dict(d.pop("jobs_per_day"))

        submissions_per_day = QuotaUsage.from_dict(d.pop("submissions_per_day"))

        quotas = cls(
            archive_storage_bytes=archive_storage_bytes,
            concurrent_jobs=concurrent_jobs,
            jobs_per_day=jobs_per_day,
            submissions_per_day=submissions_per_day,
        )

        quotas.additional_properties = d
        return quotas

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
