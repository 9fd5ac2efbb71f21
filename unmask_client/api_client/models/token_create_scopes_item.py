from enum import StrEnum


class TokenCreateScopesItem(StrEnum):
    ADMIN = "admin"
    READ = "read"
    SUBMIT = "submit"

    def __str__(self) -> str:
        return str(self.value)
