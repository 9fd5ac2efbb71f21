"""Frequency-warping functions and parameter grids of PROTOCOLS.md section 7 (Liu et al., Table 1).

Every warp maps normalized angular frequency ``omega`` in [0, pi] (pi = Nyquist) to ``omega'`` in
[0, pi]; it is monotone increasing and fixes 0 and pi for every parameter in its grid. The
convention (PROTOCOLS.md section 7): *the warped spectrum at frequency omega takes the original's
value at omega'(omega)*, i.e. ``Y(omega) = X(omega'(omega))``. A spectral peak of ``X`` at
``omega_p`` therefore appears in ``Y`` at ``inverse_warp(omega_p)``: where ``omega' < omega``
(e.g. ``power`` with a > 0, ``piecewise_linear`` with a < 1) peaks move up, otherwise down.

The functions are pure and vectorized so that both the waveform anonymizers (`services.anonymizers
.vtln`) and the feature-domain pre-restoration attack can share them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, get_args

import numpy as np

WarpFamily = Literal["bilinear", "quadratic", "power", "piecewise_linear"]
TransformFamily = Literal["pitch", "bilinear", "quadratic", "power", "piecewise_linear"]

WARP_FAMILIES: tuple[WarpFamily, ...] = get_args(WarpFamily)
TRANSFORM_FAMILIES: tuple[TransformFamily, ...] = get_args(TransformFamily)

# (low, high, step) of Liu et al. Table 1; pitch is in semitones, the warps are dimensionless.
PARAMETER_RANGES: dict[TransformFamily, tuple[float, float, float]] = {
    "pitch": (-11.0, 11.0, 1.0),
    "bilinear": (-0.3, 0.3, 0.02),
    "quadratic": (-2.0, 2.0, 0.2),
    "power": (-0.5, 0.5, 0.05),
    "piecewise_linear": (0.5, 1.5, 0.05),
}

IDENTITY_PARAMETER: dict[TransformFamily, float] = {
    "pitch": 0.0,
    "bilinear": 0.0,
    "quadratic": 0.0,
    "power": 0.0,
    "piecewise_linear": 1.0,
}
"""The parameter value for which each transform is the identity."""


def _as_omega(omega: np.ndarray | float) -> np.ndarray:
    w = np.asarray(omega, dtype=np.float64)
    if np.any(w < -1e-12) or np.any(w > np.pi + 1e-12):
        raise ValueError("omega must lie in [0, pi] (radians per sample)")
    return np.clip(w, 0.0, np.pi)


def bilinear_warp(omega: np.ndarray | float, a: float) -> np.ndarray:
    """Bilinear (all-pass) warp ``omega' = |-i log((z - a) / (1 - a z))|``, ``z = e^{i omega}``.

    ``a`` in (-1, 1); 0 is the identity; a > 0 gives ``omega' > omega`` (peaks move down).
    """
    if not -1.0 < a < 1.0:
        raise ValueError(f"bilinear warp parameter must lie in (-1, 1), got {a}")
    w = _as_omega(omega)
    z = np.exp(1j * w)
    out = np.abs(np.angle((z - a) / (1.0 - a * z)))
    # The all-pass maps the endpoints onto themselves; pin them against rounding.
    return np.where(w == 0.0, 0.0, np.where(w == np.pi, np.pi, out))


def quadratic_warp(omega: np.ndarray | float, a: float) -> np.ndarray:
    """Quadratic warp ``omega' = omega + a (omega/pi - (omega/pi)^2)``; monotone for |a| < pi."""
    if not abs(a) < np.pi:
        raise ValueError(f"quadratic warp parameter must satisfy |a| < pi, got {a}")
    w = _as_omega(omega)
    u = w / np.pi
    return w + a * (u - u * u)


def power_warp(omega: np.ndarray | float, a: float) -> np.ndarray:
    """Power warp ``omega' = pi (omega/pi)^(1 + a)``; ``a`` > -1, 0 is the identity.

    Liu et al.'s range [-0.5, 0.5] is centred on the identity, so the exponent is ``1 + a``
    (documented choice of PROTOCOLS.md section 7).
    """
    if not a > -1.0:
        raise ValueError(f"power warp parameter must exceed -1, got {a}")
    w = _as_omega(omega)
    return np.pi * (w / np.pi) ** (1.0 + a)


def piecewise_linear_boundary(a: float) -> float:
    """Knee ``omega_0`` of the piecewise-linear warp: 7 pi / 8, or 7 pi / (8 a) when a > 1."""
    return 7.0 * np.pi / 8.0 if a <= 1.0 else 7.0 * np.pi / (8.0 * a)


def piecewise_linear_warp(omega: np.ndarray | float, a: float) -> np.ndarray:
    """Piecewise-linear warp: ``omega' = a omega`` up to ``omega_0``, then linear to (pi, pi).

    ``a`` > 0; 1 is the identity; a < 1 moves peaks up (by 1/a below the knee).
    """
    if not a > 0.0:
        raise ValueError(f"piecewise-linear warp parameter must be positive, got {a}")
    w = _as_omega(omega)
    w0 = piecewise_linear_boundary(a)
    upper = a * w0 + (np.pi - a * w0) * (w - w0) / (np.pi - w0)
    return np.where(w <= w0, a * w, upper)


_WARPS: dict[WarpFamily, Callable[[np.ndarray | float, float], np.ndarray]] = {
    "bilinear": bilinear_warp,
    "quadratic": quadratic_warp,
    "power": power_warp,
    "piecewise_linear": piecewise_linear_warp,
}


def check_warp_family(family: str) -> WarpFamily:
    """``family`` as a `WarpFamily`; ValueError naming the known families otherwise."""
    if family not in _WARPS:
        raise ValueError(f"unknown warp {family!r}; expected one of {', '.join(WARP_FAMILIES)}")
    return family


def warp(family: str, omega: np.ndarray | float, a: float) -> np.ndarray:
    """``omega'(omega)`` for the warp ``family`` with parameter ``a`` (radians per sample)."""
    return _WARPS[check_warp_family(family)](omega, float(a))


def inverse_warp(family: str, omega: np.ndarray | float, a: float) -> np.ndarray:
    """The inverse map: where a spectral component at ``omega`` lands after warping.

    Closed forms: bilinear with ``-a``; quadratic by the quadratic formula; power with exponent
    ``1 / (1 + a)``; piecewise-linear by inverting each segment.
    """
    fam = check_warp_family(family)
    v = _as_omega(omega)
    a = float(a)
    warp(fam, np.zeros(1), a)  # validates a
    if fam == "bilinear":
        return bilinear_warp(v, -a)
    if fam == "power":
        return np.pi * (v / np.pi) ** (1.0 / (1.0 + a))
    if fam == "quadratic":
        if a == 0.0:
            return v
        b = np.pi + a
        u = (b - np.sqrt(np.maximum(b * b - 4.0 * a * v, 0.0))) / (2.0 * a)
        return np.clip(np.pi * u, 0.0, np.pi)
    w0 = piecewise_linear_boundary(a)
    knee = a * w0
    upper = w0 + (v - knee) * (np.pi - w0) / (np.pi - knee)
    return np.where(v <= knee, v / a, upper)


def parameter_grid(family: str) -> np.ndarray:
    """The sweep of Liu et al. Table 1 for ``family`` (semitones for pitch), low to high."""
    if family not in PARAMETER_RANGES:
        known = ", ".join(TRANSFORM_FAMILIES)
        raise ValueError(f"unknown transform family {family!r}; expected one of {known}")
    lo, hi, step = PARAMETER_RANGES[family]
    n = round((hi - lo) / step) + 1
    return np.round(lo + step * np.arange(n), 10)


def fit_warp_to_scale(
    family: str,
    scale: float,
    band_hz: tuple[float, float] = (300.0, 4000.0),
    sample_rate: int = 16_000,
    n_candidates: int = 801,
) -> float:
    """The parameter (within the family's Table 1 range) whose warp best scales peaks by ``scale``.

    A peak at ``f`` lands at ``inverse_warp(f)``; we want that near ``scale * f`` for ``f`` in
    ``band_hz`` (Hz), i.e. ``omega'(scale * omega) ~= omega``. The fit minimizes the mean squared
    log-frequency error over a dense candidate grid; ``scale`` > 1 raises formants.
    """
    fam = check_warp_family(family)
    if not scale > 0.0:
        raise ValueError(f"scale must be positive, got {scale}")
    lo, hi, _ = PARAMETER_RANGES[fam]
    nyq = sample_rate / 2.0
    f = np.geomspace(band_hz[0], band_hz[1], 64)
    f = f[scale * f < 0.98 * nyq]
    if f.size == 0:
        return IDENTITY_PARAMETER[fam]
    omega = np.pi * f / nyq
    candidates = np.linspace(lo, hi, n_candidates)
    errors = np.empty(n_candidates)
    for i, a in enumerate(candidates):  # a loop over candidate parameters, not samples or frames
        mapped = warp(fam, np.clip(scale * omega, 0.0, np.pi), float(a))
        errors[i] = np.mean(np.log(np.maximum(mapped, 1e-9) / omega) ** 2)
    return float(candidates[int(np.argmin(errors))])
