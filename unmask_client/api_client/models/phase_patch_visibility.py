from enum import StrEnum


class PhasePatchVisibility(StrEnum):
    HIDDEN = "hidden"
    PUBLIC = "public"

    def __str__(self) -> str:
        return str(self.value)
