"""Field types and rules every aggregate's schemas share (one rule per kind of value)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from services.json_values import NUL_MESSAGE
from services.storage.models import WebhookDeliveryState
from services.text_policy import TextKind, check_text, text_pattern
from services.vocab import JOB_STATE_VALUES, PROTOCOL_ASR_STATE_VALUES, WEBHOOK_EVENT_TYPES

Visibility = Literal["public", "private"]
# The domain's vocabularies (services.vocab) as the enums of the OpenAPI document.
JobState = Literal[JOB_STATE_VALUES]  # type: ignore[valid-type]
EventType = Literal[WEBHOOK_EVENT_TYPES]  # type: ignore[valid-type]
ProtocolAsrState = Literal[PROTOCOL_ASR_STATE_VALUES]  # type: ignore[valid-type]
DELIVERY_STATE_VALUES: tuple[str, ...] = tuple(s.value for s in WebhookDeliveryState)
DeliveryState = Literal[DELIVERY_STATE_VALUES]  # type: ignore[valid-type]
# API-level submission status: an archive whose upload finished but which the workers have not
# validated yet is "validating" (stored as "pending").
SubmissionApiStatus = Literal["validating", "accepted", "rejected"]
Scope = Literal["submit", "read", "admin"]

# Marks the schema of an evaluation config's fields (a protocol's `config`, a job's
# `config_overrides`): the generated client sends them as plain JSON objects
# (scripts/generate_client.py), the server's document states each field.
EVALUATION_CONFIG_MARK = "x-evaluation-config"

SHA256_HEX_RE = re.compile(r"^[0-9a-f]{64}$")
SHA256_HEX_PATTERN = SHA256_HEX_RE.pattern

# --- shared field types: one rule per kind of value ------------------------------------------

# Ids are PostgreSQL INTEGER columns: a larger path, query or body id is a 422, not a 500.
DB_ID_MAX = 2**31 - 1
DbId = Annotated[int, Ge(1), Le(DB_ID_MAX)]
# Page cursors are the last id of the previous page, as a decimal string.
# Exactly the decimal strings of 0 .. 2147483647 (leading zeros allowed, at most 10 digits).
CURSOR_PATTERN = (
    r"^(?:[0-9]{1,9}|0[0-9]{9}|1[0-9]{9}|20[0-9]{8}|21[0-3][0-9]{7}|214[0-6][0-9]{6}"
    r"|2147[0-3][0-9]{5}|21474[0-7][0-9]{4}|214748[0-2][0-9]{3}|2147483[0-5][0-9]{2}"
    r"|21474836[0-3][0-9]|214748364[0-7])$"
)

# PostgreSQL text and jsonb cannot store NUL (U+0000); refusing it here names the field.
NO_NUL_PATTERN = r"^[^\x00]*$"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError(NUL_MESSAGE)
    return value


def _cursor_in_range(value: str) -> str:
    if int(value) > DB_ID_MAX:
        raise ValueError(f"cursor must be at most {DB_ID_MAX} (a `next_cursor` value)")
    return value


def _text_field(max_length: int, min_length: int = 0) -> Any:
    return Field(
        min_length=min_length,
        max_length=max_length,
        json_schema_extra={"pattern": NO_NUL_PATTERN},
    )


@dataclass(frozen=True)
class TextPolicyPattern:
    """Documents the text policy's pattern in the JSON schema (built on first use)."""

    kind: TextKind

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema["pattern"] = text_pattern(self.kind)
        return schema


def _policy(kind: TextKind, max_length: int) -> Any:
    """The text policy as a validator: normalized, refused characters named (a 422)."""

    def check(value: str) -> str:
        return check_text(value, kind=kind, max_length=max_length)

    return AfterValidator(check)


def Text(max_length: int, *, min_length: int = 0) -> Any:
    """Free text stored or filtered on: at most ``max_length`` characters, no NUL."""
    # The pattern is documented; the validator enforces it, with a message naming the NUL.
    return Annotated[str, _text_field(max_length, min_length), AfterValidator(_no_nul)]


# A page cursor (the `next_cursor` of the previous page).
Cursor = Annotated[
    str,
    # Enforced as 1-10 digits plus the range check (its message names the bound); documented as
    # the exact pattern of 0 .. 2147483647.
    Field(
        pattern=r"^[0-9]{1,10}$",
        json_schema_extra={"pattern": CURSOR_PATTERN},
        description="`next_cursor`.",
    ),
    AfterValidator(_cursor_in_range),
]
# A JSON object stored in a jsonb column: import services.json_values.JsonObject.
# Spelled out (not ``Text(...)``) so that type checkers see them as type aliases.
# Text shown to other people, under one policy (services.text_policy): no control, format,
# private-use or invisible character. Names and labels: NFKC, stripped, not only spaces.
NameText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
    ),
    TextPolicyPattern("name"),
    AfterValidator(_no_nul),
    _policy("name", 200),
]
# NameText as a query parameter: the same validation, no pattern in its schema. Swagger UI (and
# other tools) compile a parameter's pattern as `new RegExp(pattern)`, without the `u` flag, and
# the text policy's pattern holds ranges of code points beyond U+FFFF that only Unicode mode
# reads: "Try it out" would throw instead of sending the request. The server's 422 names a
# refused character all the same.
NameQueryText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        description="A name under the text policy (no control, format, private-use or invisible "
        "character; stored in NFKC).",
    ),
    AfterValidator(_no_nul),
    _policy("name", 200),
]
ShortText = Annotated[
    str,
    Field(
        max_length=200,
    ),
    TextPolicyPattern("name"),
    AfterValidator(_no_nul),
    _policy("name", 200),
]
LabelText = Annotated[
    str,
    Field(
        max_length=64,
    ),
    TextPolicyPattern("name"),
    AfterValidator(_no_nul),
    _policy("name", 64),
]


def Prose(max_length: int) -> Any:
    """A description shown to others: at most ``max_length`` characters, one line, NFC, under
    the text policy (services.text_policy)."""
    return Annotated[
        str,
        Field(
            max_length=max_length,
        ),
        TextPolicyPattern("prose"),
        AfterValidator(_no_nul),
        _policy("prose", max_length),
    ]


def _timestamp_text(value: Any) -> Any:
    if not isinstance(value, str | dt.datetime):
        raise ValueError("a date-time string with a time zone, e.g. 2026-12-01T00:00:00Z")
    return value


def _in_utc_range(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is not None:
        try:
            value.astimezone(dt.UTC)
        except OverflowError:
            raise ValueError("a date-time between years 1 and 9999 in UTC") from None
    return value


# A point in time in a request: an RFC 3339 string (as the document's `date-time` says), never a
# number that lax parsing would read as Unix seconds.
Timestamp = Annotated[dt.datetime, BeforeValidator(_timestamp_text), AfterValidator(_in_utc_range)]


class StrictModel(BaseModel):
    """Request bodies refuse unknown fields (a typo is an error, not a silent default)."""

    model_config = ConfigDict(extra="forbid")
