from enum import StrEnum


class BuiltinSpecName(StrEnum):
    MCADAMS = "mcadams"
    PITCH = "pitch"
    VTLN = "vtln"

    def __str__(self) -> str:
        return str(self.value)
