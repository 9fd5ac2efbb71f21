"""Errors that mean "the input is wrong", as opposed to a bug.

Interfaces map them to a clear message: the CLI prints one line on stderr and exits with code 2,
the HTTP API answers 4xx with ``application/problem+json``. Anything else is a bug and may show a
trace.
"""

from __future__ import annotations


class InvalidInputError(ValueError):
    """Bad user input (file, row, field, parameter). The message names the problem."""


class CorpusError(InvalidInputError):
    """A manifest or audio file is unusable; the message names the file and row."""


class ConfigError(InvalidInputError):
    """An evaluation config or parameter is invalid; the message names the field."""


class InvalidFieldError(InvalidInputError):
    """One named field holds a bad value; ``field`` says where (``body.builtin.params``), and
    the message starts with it. The API adds it to the problem's ``errors`` list."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
