from enum import StrEnum


class ProtocolAsrOutState(StrEnum):
    FAILED = "failed"
    QUEUED = "queued"
    READY = "ready"
    RUNNING = "running"

    def __str__(self) -> str:
        return str(self.value)
