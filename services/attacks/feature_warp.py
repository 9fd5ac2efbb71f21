"""Feature-domain transforms for pre-restoration: warp the power spectrum, not the waveform.

The attacker's features (`services.attacker.features`) are SpeechBrain's ``Fbank``: STFT
(400-point FFT, 25 ms Hamming window, 10 ms hop, centred) -> power spectrum ``P`` (frames x 201
bins) -> 80 triangular mel filters ``M`` (201 x 80) -> dB, clipped 80 dB below the utterance's
maximum -> per-utterance mean normalization. A frequency transform of the waveform
(`services.anonymizers.warps` convention: ``Y(omega) = X(omega'(omega))``) is, on the power
spectrum, a linear map along the frequency axis: ``P_r = P W_r^T`` with ``W_r`` (201 x 201) the
linear interpolation at ``omega'(omega_k)``. Folding it into the filterbank gives one matrix per
parameter, ``C_r = W_r^T M`` (201 x 80), and all R transforms of one utterance come out of a
single product ``P [C_1 ... C_R]``. The STFT is computed once per utterance.

Pitch scaling by ``a`` semitones scales every frequency by ``2^(a/12)``: ``omega' = omega
2^(-a/12)``; where ``omega' > pi`` (a downward shift empties the top band) the warped power is 0.

At the identity parameter ``W = I`` and the features equal the attacker's own features of the
waveform up to float rounding (tested), so an embedding model trained on those features accepts
the warped ones as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from speechbrain.processing.features import spectral_magnitude

from services.anonymizers.warps import IDENTITY_PARAMETER, TRANSFORM_FAMILIES, warp
from services.attacker.features import FilterbankFeatures


def source_frequencies(family: str, omega: np.ndarray, parameter: float) -> np.ndarray:
    """``omega'(omega)`` (radians per sample) for any transform family, pitch included.

    For ``pitch`` the result may exceed pi (content that does not exist); callers zero it.
    """
    if family == "pitch":
        return np.asarray(omega, dtype=np.float64) * 2.0 ** (-float(parameter) / 12.0)
    if family not in TRANSFORM_FAMILIES:
        raise ValueError(
            f"unknown transform family {family!r}; expected one of {', '.join(TRANSFORM_FAMILIES)}"
        )
    return warp(family, omega, parameter)


def warp_matrices(family: str, parameters: Sequence[float], n_bins: int) -> np.ndarray:
    """Interpolation matrices ``W`` (R, n_bins, n_bins), float64: ``warped = W[r] @ spectrum``.

    Row ``k`` of ``W[r]`` holds the linear-interpolation weights of the source position
    ``omega'(omega_k)`` (bins equally spaced on [0, pi]); a source above pi gives a zero row.
    """
    params = np.asarray(parameters, dtype=np.float64)
    omega = np.linspace(0.0, np.pi, n_bins)
    src = np.stack([source_frequencies(family, omega, float(a)) for a in params])  # (R, K)
    pos = src / np.pi * (n_bins - 1)
    inside = pos <= (n_bins - 1) + 1e-9
    pos = np.clip(pos, 0.0, n_bins - 1)
    i0 = np.minimum(np.floor(pos).astype(np.int64), n_bins - 2)
    frac = pos - i0
    out = np.zeros((len(params), n_bins, n_bins))
    r_idx, k_idx = np.meshgrid(np.arange(len(params)), np.arange(n_bins), indexing="ij")
    out[r_idx, k_idx, i0] = np.where(inside, 1.0 - frac, 0.0)
    out[r_idx, k_idx, i0 + 1] += np.where(inside, frac, 0.0)
    # Exact identity rows where the source lands on a bin (the identity parameter in particular).
    return out


def mel_matrix(features: FilterbankFeatures) -> torch.Tensor:
    """The attacker's frozen mel filterbank as a (n_bins, n_mels) float32 matrix."""
    cf = features.fbank.compute_fbanks
    n_bins = cf.all_freqs_mat.shape[1]
    f_central = cf.f_central.repeat(n_bins, 1).transpose(0, 1)
    band = cf.band.repeat(n_bins, 1).transpose(0, 1)
    return cf._create_fbank_matrix(f_central, band).float()


class FeatureDomainTransformer:
    """All R transforms of an utterance's attacker features from one STFT.

    ``plan`` is a list of (family, parameter) pairs; `transform` returns their mean-normalized
    log-mel features (R, frames, n_mels) in that order, ready for ``EmbeddingModel``.
    """

    def __init__(
        self,
        features: FilterbankFeatures,
        plan: Sequence[tuple[str, float]],
        device: torch.device | None = None,
    ) -> None:
        self.features = features
        self.plan = list(plan)
        self.device = device or torch.device("cpu")
        mel = mel_matrix(features).double()  # (K, n_mels)
        n_bins = mel.shape[0]
        self.n_mels = int(mel.shape[1])
        blocks = []
        for family in dict.fromkeys(f for f, _ in self.plan):
            params = [a for f, a in self.plan if f == family]
            w = torch.from_numpy(warp_matrices(family, params, n_bins))  # (R_f, K, K)
            composite = torch.einsum("rkj,km->rjm", w, mel)  # C_r = W_r^T M: (R_f, K, n_mels)
            for a, c in zip(params, composite, strict=True):
                if float(a) == IDENTITY_PARAMETER[family]:  # type: ignore[index]
                    c = mel  # exactly the attacker's filterbank
                blocks.append(((family, float(a)), c))
        by_key = dict(blocks)
        stacked = torch.stack([by_key[(f, float(a))] for f, a in self.plan])  # (R, K, n_mels)
        # (K, R * n_mels): one product per utterance gives every transform's mel energies.
        self.composite = (
            stacked.permute(1, 0, 2).reshape(n_bins, -1).float().contiguous().to(self.device)
        )
        self._buffer = torch.empty(0, device=self.device)

    def power_spectrum(self, waveform: np.ndarray | torch.Tensor) -> torch.Tensor:
        """The attacker's STFT power spectrum (frames, n_bins) of one 16 kHz waveform."""
        x = torch.as_tensor(np.asarray(waveform, dtype=np.float32)).to(self.device).unsqueeze(0)
        return spectral_magnitude(self.features.fbank.compute_STFT(x))[0]

    @torch.inference_mode()
    def transform(self, waveform: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Mean-normalized log-mel features (R, frames, n_mels) of every transform in the plan.

        The result is a view into a buffer that the next call overwrites: use it (embed it)
        before transforming the next utterance, or ``.clone()`` it.
        """
        power = self.power_spectrum(waveform)  # (T, K)
        n_frames, n_out = power.shape[0], self.composite.shape[1]
        if self._buffer.numel() < n_frames * n_out:
            self._buffer = torch.empty(n_frames * n_out, device=self.device)
        # Reusing one buffer and working in place avoids fresh ~40 MB tensors per step, whose
        # page faults cost more than the arithmetic (measured: 25 ms vs 5 ms per pass).
        mel = torch.matmul(
            power, self.composite, out=self._buffer[: n_frames * n_out].view(n_frames, n_out)
        )
        cube = mel.view(n_frames, len(self.plan), self.n_mels)  # (T, R, n_mels)
        # SpeechBrain's dB conversion: 10 log10(max(x, amin)), floored 80 dB below each version's
        # maximum. Flooring the energies at max * 1e-8 before the log is the same clip.
        fb = self.features.fbank.compute_fbanks
        floor = torch.clamp(
            cube.amax(dim=(0, 2)) * 10.0 ** (-fb.top_db / fb.multiplier), min=fb.amin
        )
        torch.maximum(cube, floor[None, :, None], out=cube)
        cube.log10_().mul_(fb.multiplier)
        if fb.db_multiplier != 0.0:
            cube.sub_(fb.multiplier * fb.db_multiplier)
        cube.sub_(cube.mean(dim=0, keepdim=True))  # per-utterance mean normalization
        return cube.permute(1, 0, 2)
