from enum import StrEnum


class ProtocolsGetLeaderboardBackendType0(StrEnum):
    COSINE = "cosine"
    PLDA = "plda"

    def __str__(self) -> str:
        return str(self.value)
