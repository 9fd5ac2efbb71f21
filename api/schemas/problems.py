"""The body of every error response: RFC 9457 problem details (``application/problem+json``).

How errors become these bodies: ``api/problems.py``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class FieldProblem(BaseModel):
    """One invalid field of a request."""

    field: str = Field(description="Where: `body.builtin.params.semitones`, `query.limit`, ...")
    message: str = Field(description="What is wrong with it.")


class Problem(BaseModel):
    """An error (RFC 9457 problem details), sent as `application/problem+json`."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="URI naming the kind of problem, e.g. `urn:unmask:problem:...`.")
    title: str = Field(description="Short summary of the kind of problem.")
    status: int = Field(description="The HTTP status code.")
    detail: str = Field(description="What went wrong in this request, naming the field/object.")
    instance: str = Field(description="The request path the problem occurred at.")
    errors: list[FieldProblem] | None = Field(
        None, description="Validation errors only: every invalid field."
    )
