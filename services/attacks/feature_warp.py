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

Pitch versions come by default from a *scaled-window STFT* instead of a warp (`pitch_window`):
a waveform scaled in frequency by ``s`` and analysed with the attacker's 25 ms window shows its
harmonics with the window's own mainlobe width, whereas warping the original's spectrum widens
every mainlobe by ``s`` too. Analysing the original with a window and FFT ``s`` times as long
(Hamming, ``n = 400 s`` samples, same hop) puts bin ``j`` at ``j 40 Hz / s``, i.e. exactly at
output bin ``j`` after the scaling, with the mainlobe the waveform path would show: no
interpolation at all. Measured on 100 synthetic speakers (pitch family, enrollment mode, where
the transformed enrollment must look like phase-vocoder-anonymized trials): the gap to the
waveform attack went from +4.6 / +7.9 pp (two speaker draws) to -0.6 / +0.3 pp.

Two refinements bring the warped features closer to those of the waveform transforms (measured
on the 40-speaker validation set of ``benchmarks/prerestore.py --validate``, docs/performance.md):

- *antialiasing* (`warp_matrices`): where the warp compresses the frequency axis, the
  interpolation kernel widens so that no source bin is skipped;
- *time smoothing* (`smearing_frames`): the built-in waveform transforms resynthesize through a
  phase vocoder that smears the spectrogram in time (64 ms windows for pitch, 32 ms for VTLN);
  each warped version's mel energies are smoothed along frames by a Gaussian fitted to that.

At the identity parameter ``W = I`` and the features equal the attacker's own features of the
waveform up to float rounding (tested), so an embedding model trained on those features accepts
the warped ones as they are.
"""

from __future__ import annotations

import itertools
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


def warp_matrices(
    family: str, parameters: Sequence[float], n_bins: int, antialias: bool = False
) -> np.ndarray:
    """Interpolation matrices ``W`` (R, n_bins, n_bins), float64: ``warped = W[r] @ spectrum``.

    Row ``k`` of ``W[r]`` holds the linear-interpolation weights of the source position
    ``omega'(omega_k)`` (bins equally spaced on [0, pi]); a source above pi gives a zero row.

    ``antialias``: where the warp compresses (neighbouring output bins read source positions
    ``d > 1`` bins apart, e.g. pitch down-shifts), the triangle kernel of linear interpolation
    is widened to a half-width of ``d`` source bins (weights normalized to sum to 1), so every
    source bin contributes instead of being skipped: the power spectrum is resampled like an image
    downscaled with antialiasing. Where ``d <= 1`` this is plain linear interpolation.
    """
    params = np.asarray(parameters, dtype=np.float64)
    omega = np.linspace(0.0, np.pi, n_bins)
    src = np.stack([source_frequencies(family, omega, float(a)) for a in params])  # (R, K)
    pos = src / np.pi * (n_bins - 1)
    inside = pos <= (n_bins - 1) + 1e-9
    pos = np.clip(pos, 0.0, n_bins - 1)
    if antialias:
        # Source positions of the output bins' edges (half-bins, clipped to [0, pi]).
        edges = np.clip(np.arange(n_bins + 1) - 0.5, 0.0, n_bins - 1) * np.pi / (n_bins - 1)
        src_edges = np.stack([source_frequencies(family, edges, float(a)) for a in params])
        d = np.diff(src_edges, axis=1) / np.pi * (n_bins - 1)  # (R, K) source bins per bin
        width = np.where(edges[1:] - edges[:-1] < np.pi / (n_bins - 1) - 1e-12, 2.0 * d, d)
        half = np.maximum(np.abs(width), 1.0)
        j = np.arange(n_bins, dtype=np.float64)
        out = np.clip(1.0 - np.abs(j[None, None, :] - pos[:, :, None]) / half[:, :, None], 0, None)
        out /= out.sum(axis=2, keepdims=True)
        out[~inside] = 0.0
        return out
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


PITCH_SMEAR_FRAMES_SQ = (0.74, 0.91)
"""``sigma^2 = c0 + c1 s^2`` (frames^2, ``s = 2^(a/12)``): time smearing of the built-in pitch."""
VTLN_SMEAR_FRAMES = 0.6
"""Time smearing (frames) of the built-in VTLN in spectrum mode (512-point STFT resynthesis)."""


def smearing_frames(family: str, parameter: float) -> float:
    """Std (10 ms frames) of the Gaussian time smoothing that mimics the waveform transform.

    The built-in waveform transforms resynthesize through a phase vocoder (pitch: resampling, then
    a 1024-point / hop 256 STFT of the resampled signal, i.e. a window of ``64 s`` ms for the
    frequency ratio ``s``; VTLN spectrum mode: a 512-point / hop 128 STFT), which smears the
    spectrogram in time; the feature-domain warp of one STFT does not. Smoothing each warped
    version's mel energies along time with a Gaussian of this std brings its log-mel features
    closer to those of the transformed waveform: fitted on synthetic speech (4 utterances of 2.5 s,
    std grid 0-2.5 frames, mean |log-mel difference| per frame): pitch ``sigma^2 = 0.74 + 0.91
    s^2`` (1.0 frame at -11 semitones, 1.3 at +1, 1.5 at +4, 2.0 at +11; frame error 5.1-7.7 dB
    -> 3.0-3.8 dB at the best std of the grid), VTLN 0.6 frames for every warp (3.6-4.8 dB ->
    2.9-3.7 dB). The identity is not smoothed (0): both implementations leave it untouched.
    """
    if parameter == IDENTITY_PARAMETER.get(family, None):  # type: ignore[call-overload]
        return 0.0
    if family == "pitch":
        c0, c1 = PITCH_SMEAR_FRAMES_SQ
        return float(np.sqrt(c0 + c1 * 2.0 ** (2.0 * float(parameter) / 12.0)))
    return VTLN_SMEAR_FRAMES


def pitch_window(parameter: float, base_window: int = 400) -> int:
    """Window and FFT length (samples, even) that analyses a pitch shift of ``parameter``
    semitones without a warp: ``base_window * 2^(a/12)`` rounded to an even number."""
    return max(2, 2 * round(base_window * 2.0 ** (float(parameter) / 12.0) / 2.0))


def smoothing_kernels(sigmas: Sequence[float]) -> tuple[int, np.ndarray]:
    """(half-length h, weights (2h + 1, R)): normalized Gaussians, truncated at 3 sigma.

    A sigma of 0 gives the unit impulse; every column sums to 1.
    """
    sig = np.asarray(sigmas, dtype=np.float64)
    h = int(np.ceil(3.0 * sig.max())) if sig.size else 0
    lags = np.arange(-h, h + 1, dtype=np.float64)[:, None]
    safe = np.where(sig > 0, sig, 1.0)[None, :]
    gauss = np.exp(-0.5 * (lags / safe) ** 2) * (np.abs(lags) <= np.ceil(3.0 * sig)[None, :])
    w = np.where(sig[None, :] > 0, gauss, (lags == 0).astype(np.float64))
    return h, w / w.sum(axis=0, keepdims=True)


class FeatureDomainTransformer:
    """All R transforms of an utterance's attacker features from one STFT.

    ``plan`` is a list of (family, parameter) pairs; `transform` returns their mean-normalized
    log-mel features (R, frames, n_mels) in that order, ready for ``EmbeddingModel``.
    ``antialias``: antialiased warp matrices (`warp_matrices`); ``time_smoothing``: Gaussian
    smoothing of each version's mel energies along frames with the std `smearing_frames`
    (identity versions untouched); ``scaled_pitch_window``: pitch versions from an STFT with a
    window of `pitch_window` samples instead of a warp (module docstring). ``composite`` always
    holds every version's warp folded into the filterbank.
    """

    def __init__(
        self,
        features: FilterbankFeatures,
        plan: Sequence[tuple[str, float]],
        device: torch.device | None = None,
        antialias: bool = True,
        time_smoothing: bool = True,
        scaled_pitch_window: bool = True,
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
            w = torch.from_numpy(warp_matrices(family, params, n_bins, antialias))  # (R_f, K, K)
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
        self._pad_buffer = torch.empty(0, device=self.device)
        stft = features.fbank.compute_STFT
        self._hop, self._window = int(stft.hop_length), int(stft.win_length)
        self._mel = mel.float().to(self.device)
        # Pitch versions analysed with a scaled window: (version index, window length, window).
        self._pitch_rows: list[tuple[int, int, torch.Tensor]] = []
        if scaled_pitch_window:
            for r, (family, a) in enumerate(self.plan):
                if family == "pitch" and float(a) != IDENTITY_PARAMETER["pitch"]:
                    n = pitch_window(a, self._window)
                    window = torch.hamming_window(n, device=self.device)
                    self._pitch_rows.append((r, n, window))
        # Time smoothing: runs of consecutive versions with the same kernel half-length h, each
        # (start, stop, h, weights (2h + 1, versions, 1)).
        sigmas = np.array([smearing_frames(f, a) if time_smoothing else 0.0 for f, a in self.plan])
        halves = np.ceil(3.0 * sigmas).astype(np.int64)
        self._runs: list[tuple[int, int, int, torch.Tensor]] = []
        bounds = [0, *(np.flatnonzero(np.diff(halves)) + 1).tolist(), len(self.plan)]
        for start, stop in itertools.pairwise(bounds):
            if halves[start] > 0:
                h, kernels = smoothing_kernels(sigmas[start:stop].tolist())
                weights = torch.from_numpy(kernels).float()[:, :, None].to(self.device)
                self._runs.append((start, stop, h, weights))

    def _smooth_in_time(self, cube: torch.Tensor) -> None:
        """Gaussian smoothing along frames of the mel energies ``cube`` (T, R, n_mels), in place.

        Edges are replicated. One reused scratch buffer holds each run's padded copy.
        """
        n_frames = cube.shape[0]
        for start, stop, h, w in self._runs:
            src = cube[:, start:stop]
            need = (n_frames + 2 * h) * (stop - start) * self.n_mels
            if self._pad_buffer.numel() < need:
                self._pad_buffer = torch.empty(need, device=self.device)
            padded = self._pad_buffer[:need].view(n_frames + 2 * h, stop - start, self.n_mels)
            padded[h : h + n_frames] = src
            padded[:h] = src[:1]
            padded[h + n_frames :] = src[-1:]
            src.copy_(padded[:n_frames]).mul_(w[0])
            for k in range(1, 2 * h + 1):
                src.addcmul_(padded[k : k + n_frames], w[k])

    def _scaled_window_pitch(self, waveform: np.ndarray | torch.Tensor, cube: torch.Tensor) -> None:
        """Overwrite the pitch versions' mel energies in ``cube`` (T, R, n_mels) with those of
        scaled-window STFTs (bin j of an n-point STFT lands on output bin j after the shift).

        The warp's product in `transform` also computes these columns (22 of 113 versions with
        Liu et al.'s grids); they are overwritten here, before the time smoothing and the dB.
        """
        x = torch.as_tensor(np.asarray(waveform, dtype=np.float32)).to(self.device)
        n_bins = self._mel.shape[0]
        for r, n, window in self._pitch_rows:
            spec = torch.stft(
                x, n, self._hop, n, window, center=True, pad_mode="constant", return_complex=True
            )
            power = spec.real.square() + spec.imag.square()  # (n/2 + 1, T)
            k = min(n_bins, power.shape[0])  # a downward shift leaves the top bins empty
            cube[:, r] = power[:k].T @ self._mel[:k]

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
        if self._pitch_rows:
            self._scaled_window_pitch(waveform, cube)
        self._smooth_in_time(cube)
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
