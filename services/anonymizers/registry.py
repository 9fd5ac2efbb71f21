"""Built-in anonymizers by name: ``build_anonymizer("vtln", {"warp": "power", "alpha": 0.1})``.

| name | params (all optional) |
|---|---|
| ``pitch`` | ``semitones`` (float, fixed mode, -12..12), ``jitter`` (semitones, default 0.3) |
| ``vtln`` | ``warp`` (bilinear, quadratic, power, piecewise_linear; default bilinear), |
|  | ``alpha`` (fixed mode, within the warp's Table 1 range), ``jitter`` (fraction of |
|  | half the range, default 0.05), ``mode`` (envelope, spectrum; default envelope) |
| ``mcadams`` | ``alpha`` (fixed mode, 0.5..1.5), ``jitter`` (default 0.01) |
| ``silence`` | TEST ONLY, none: digital silence |
| ``noise`` | TEST ONLY, ``color`` (white, pink, brown, speech; default white) |

`BUILTIN_NAMES` are the real anonymizers the platform offers to makers; `TEST_ONLY_NAMES` are the
degenerate ones (services/anonymizers/degenerate.py) that evaluation configs may name to exercise
the utility metrics; `ALL_BUILTIN_NAMES` is both.

Parameter values may be given as strings (from the command line); they are converted to the
declared types. Unknown names or parameters raise `InvalidInputError`. The anonymizer *kinds*
(built-in, archive, container) are ``services.anonymizers.kinds``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from services.anonymizers.builtin import BuiltinAnonymizer
from services.anonymizers.degenerate import NoiseAnonymizer, SilenceAnonymizer
from services.anonymizers.mcadams import McAdamsAnonymizer
from services.anonymizers.pitch import PitchShiftAnonymizer
from services.anonymizers.vtln import VTLNAnonymizer
from services.errors import InvalidInputError

_PARAM_TYPES: dict[str, dict[str, type]] = {
    "pitch": {"semitones": float, "jitter": float},
    "vtln": {"warp": str, "alpha": float, "jitter": float, "mode": str},
    "mcadams": {"alpha": float, "jitter": float},
    "silence": {},
    "noise": {"color": str},
}

_FACTORIES: dict[str, Callable[..., BuiltinAnonymizer]] = {
    "pitch": PitchShiftAnonymizer,
    "vtln": VTLNAnonymizer,
    "mcadams": McAdamsAnonymizer,
    "silence": SilenceAnonymizer,
    "noise": NoiseAnonymizer,
}

BUILTIN_NAMES: tuple[str, ...] = ("pitch", "vtln", "mcadams")
"""The real built-ins: what the platform offers to anonymizers' makers and the leaderboard."""

TEST_ONLY_NAMES: tuple[str, ...] = ("silence", "noise")
"""Degenerate built-ins that destroy speech, for testing the utility metrics only."""

ALL_BUILTIN_NAMES: tuple[str, ...] = BUILTIN_NAMES + TEST_ONLY_NAMES
"""Every name `build_anonymizer` accepts (evaluation configs may use all of them)."""


def _convert(name: str, key: str, value: Any, kind: type) -> Any:
    if kind is float:
        if isinstance(value, bool):
            raise InvalidInputError(f"{name}: parameter {key!r} must be a number, got {value!r}")
        try:
            out = float(value)
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"{name}: parameter {key!r} must be a number, got {value!r}"
            ) from None
        if out != out or out in (float("inf"), float("-inf")):
            raise InvalidInputError(f"{name}: parameter {key!r} must be finite, got {value!r}")
        return out
    if not isinstance(value, str):
        raise InvalidInputError(f"{name}: parameter {key!r} must be a string, got {value!r}")
    return value


def build_anonymizer(name: str, params: Mapping[str, Any] | None = None) -> BuiltinAnonymizer:
    """A built-in anonymizer from its registry name and parameters (see the module table)."""
    if name not in _FACTORIES:
        raise InvalidInputError(
            f"unknown anonymizer {name!r}; built-ins are {', '.join(BUILTIN_NAMES)} "
            f"(test only: {', '.join(TEST_ONLY_NAMES)})"
        )
    params = dict(params or {})
    allowed = _PARAM_TYPES[name]
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise InvalidInputError(
            f"{name}: unknown parameter(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(allowed) or 'none'}"
        )
    kwargs = {k: _convert(name, k, v, allowed[k]) for k, v in params.items()}
    return _FACTORIES[name](**kwargs)
