from enum import StrEnum


class BuiltinSubmissionCreateVisibility(StrEnum):
    PRIVATE = "private"
    PUBLIC = "public"

    def __str__(self) -> str:
        return str(self.value)
