"""McAdams-coefficient anonymization: VoicePrivacy 2020/22 baseline B2 (Patino et al. 2021).

Per 20 ms frame (10 ms hop, Hann window): LPC of order 20 (autocorrelation method), and every
complex pole ``r e^{i phi}`` moves to ``r e^{i sign(phi) |phi|^alpha}`` (real poles stay); the
LPC residual is resynthesized through the modified all-pole filter. Because residual extraction
``E = X A`` and resynthesis ``Y = E / A'`` are both linear filters, each frame is filtered by
``A(omega) / A'(omega)`` in the frequency domain (1024-point FFT, long enough for the all-pole
tails), and the filtered frames are overlap-added (the Hann analysis windows sum to one at 50 %
overlap, so ``alpha = 1`` is the identity). All frames are processed at once: batched Levinson,
batched companion-matrix eigenvalues, batched polynomial products.
"""

from __future__ import annotations

import numpy as np

from services.anonymizers.base import VoiceProfile
from services.anonymizers.builtin import BuiltinAnonymizer
from services.anonymizers.dsp import (
    frame_signal,
    lpc,
    overlap_add,
    polynomial_from_roots,
    polynomial_roots,
)
from services.anonymizers.seeding import keyed_uniform

_FRAME = 320  # 20 ms at 16 kHz
_HOP = 160  # 10 ms
_ORDER = 20
_N_FFT = 1024
_MAX_ANGLE = np.pi - 1e-3

ALPHA_LOW = 0.5
ALPHA_HIGH = 1.5
TARGET_ALPHA_RANGE = (0.75, 0.9)
"""McAdams coefficients a target id (or a random draw) maps to, uniformly."""


def mcadams_transform(x: np.ndarray, alpha: float, order: int = _ORDER) -> np.ndarray:
    """McAdams-transform a 16 kHz waveform with coefficient ``alpha``; same length out."""
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    window = np.hanning(_FRAME + 1)[:-1]  # periodic: sums to 1 at 50 % overlap
    # Pad one frame on each side so that every sample is covered by two full windows.
    padded = np.concatenate([np.zeros(_FRAME), x, np.zeros(_FRAME)])
    frames = frame_signal(padded, _FRAME, _HOP) * window[None, :]
    a = lpc(frames, order)
    poles = polynomial_roots(a)
    angle = np.angle(poles)
    radius = np.abs(poles)
    is_complex = np.abs(poles.imag) > 1e-10
    new_angle = np.where(
        is_complex, np.sign(angle) * np.minimum(np.abs(angle) ** alpha, _MAX_ANGLE), angle
    )
    a_new = polynomial_from_roots(radius * np.exp(1j * new_angle)).real
    spec = np.fft.rfft(frames, _N_FFT, axis=1)
    response = np.fft.rfft(a, _N_FFT, axis=1) / np.fft.rfft(a_new, _N_FFT, axis=1)
    filtered = np.fft.irfft(spec * response, _N_FFT, axis=1)
    y = overlap_add(filtered, _HOP, len(padded))
    return y[_FRAME : _FRAME + n]


class McAdamsAnonymizer(BuiltinAnonymizer):
    """McAdams-coefficient anonymization (VPC B2).

    Target mode: a per-target coefficient, uniform in [0.75, 0.9] as a hash of the target id
    (profiles are not used), plus a jitter of std ``jitter``. Fixed mode: ``alpha`` everywhere
    (B2 default 0.8). Random mode: a seeded uniform draw in [0.75, 0.9] per utterance.
    """

    name = "mcadams"
    family = "mcadams"
    parameter_name = "alpha"
    parameter_low = ALPHA_LOW
    parameter_high = ALPHA_HIGH
    identity = 1.0
    uses_profiles = False

    def __init__(self, alpha: float | None = None, jitter: float = 0.01) -> None:
        super().__init__(fixed=alpha, jitter=jitter)

    def _draw_away_from_identity(self, u_side: float, u_size: float) -> float:
        lo, hi = TARGET_ALPHA_RANGE
        return lo + (hi - lo) * u_size

    def _parameter_from_target_id(self, target_id: str) -> float:
        lo, hi = TARGET_ALPHA_RANGE
        return lo + (hi - lo) * keyed_uniform("mcadams", "target", target_id)

    def _parameter_from_profiles(self, source: VoiceProfile, target: VoiceProfile) -> float:
        raise AssertionError("unreachable: McAdams derives alpha from the target id")

    def transform(self, waveform: np.ndarray, parameter: float) -> np.ndarray:
        return mcadams_transform(waveform, parameter)
