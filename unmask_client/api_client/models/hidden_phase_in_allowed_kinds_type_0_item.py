from enum import StrEnum


class HiddenPhaseInAllowedKindsType0Item(StrEnum):
    ARCHIVE = "archive"
    BUILTIN = "builtin"
    CONTAINER = "container"
    SERVICE = "service"

    def __str__(self) -> str:
        return str(self.value)
