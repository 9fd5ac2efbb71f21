from enum import StrEnum


class SubmissionKind(StrEnum):
    ARCHIVE = "archive"
    BUILTIN = "builtin"
    CONTAINER = "container"
    SERVICE = "service"

    def __str__(self) -> str:
        return str(self.value)
