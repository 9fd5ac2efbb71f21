from enum import StrEnum


class PhaseVisibility(StrEnum):
    HIDDEN = "hidden"
    PUBLIC = "public"

    def __str__(self) -> str:
        return str(self.value)
