from enum import StrEnum


class SubmissionOutStatus(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    VALIDATING = "validating"

    def __str__(self) -> str:
        return str(self.value)
