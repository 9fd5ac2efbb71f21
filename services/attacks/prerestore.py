"""De-anonymization by pre-restoration (PROTOCOLS.md section 7, Liu et al.).

The attacker transforms one side of every trial with each of the R parameters of a transform
family (pitch scaling or one of the four VTLN warps, Liu et al. Table 1 grids) and keeps the best
match:

- **enrollment** mode: ``d = min_r dist(g(x^(r)), g(y))`` (x enrollment, y trial);
- **trial** mode: ``d = min_r dist(g(x), g(y^(r)))``;

with ``g`` the attacker's embedding and ``dist`` = -cosine, i.e. the score is the best cosine
over the R transforms. Enrollment is modelled like the cosine back-end (``speaker_mean``: the mean
of a speaker's enrollment embeddings, per transform r in enrollment mode) or per utterance. The
result holds, per (family, mode): the EER of the best-over-r score, the per-parameter EER curve
(the EER when only transform r is used) and which parameter wins the target trials. Every result
records its enrollment condition (original or anonymized enrollment speech against the anonymized
trials) and the attacker's training data, and each entry is labelled by
`services.attacks.prerestore_config.attack_label` (semi-informed, lazy-informed or ignorant, from
the family and the attacker's training data and enrollment).

Two implementations of the transforms (`TransformEmbedder`):

- ``waveform``: the built-in anonymizers in fixed-parameter mode (pitch: phase-vocoder pitch
  scaling; VTLN: ``mode="spectrum"``, which warps the whole spectrum as the feature path does),
  then the attacker's own features and embedding model, one version at a time or batched;
- ``feature``: one STFT per utterance, every transform as a warp of the power spectrum's
  frequency axis folded into the mel filterbank (pitch: one short STFT per parameter with a
  window scaled by the pitch ratio instead of a warp), with antialiasing and a time smoothing that
  mimics the waveform transforms' phase-vocoder smearing (`services.attacks.feature_warp`), and
  the R versions embedded in batches (equal lengths: no padding, no masks; on a CPU batches of
  about 2,500 frames, `CPU_MAX_BATCH_FRAMES`).

Every grid contains its family's identity; identity versions are never recomputed: they are the
attacker's ordinary embedding of the utterance (also the "no pre-restoration" baseline).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from services.anonymizers.builtin import BuiltinAnonymizer, finish_waveform
from services.anonymizers.registry import build_anonymizer
from services.anonymizers.warps import (
    IDENTITY_PARAMETER,
    TRANSFORM_FAMILIES,
    parameter_grid,
)
from services.attacker.embeddings import check_waveforms, resolve_device
from services.attacker.features import FilterbankFeatures
from services.attacker.models import SpeakerEncoder
from services.attacks.feature_warp import FeatureDomainTransformer
from services.attacks.prerestore_config import (
    MODES,
    AttackerTraining,
    EnrollmentCondition,
    EnrollmentModel,
    Implementation,
    Label,
    attack_label,
    check_attack_condition,
    family_matches,
)
from services.attacks.prerestore_config import PrerestorationMode as Mode
from services.audio import read_audio
from services.corpus.manifest import Manifest
from services.errors import InvalidInputError
from services.metrics import compute_eer
from services.plotting import save_figure
from services.scoring.cosine import l2_normalize

ProgressFn = Callable[[str, float, str], None]
DEFAULT_MAX_BATCH_FRAMES = 32_000
"""Most feature frames (batch x frames) in one embedding batch on a GPU: 32 versions of 10 s."""
CPU_MAX_BATCH_FRAMES = 2_500
"""The same bound on a CPU: about 8 versions of a 3 s utterance, 2 of 10 s. With one thread the
tiny ECAPA embeds fastest per version in batches of about 1,500-4,000 frames (2.2-2.4 ms per
version of 2-3 s against 3.1-3.9 ms one at a time); batches of 16,000+ frames fall out of the
cache and are up to 2x slower than that optimum (docs/performance.md)."""


def default_max_batch_frames(device: torch.device) -> int:
    """`CPU_MAX_BATCH_FRAMES` on a CPU, `DEFAULT_MAX_BATCH_FRAMES` on an accelerator."""
    return CPU_MAX_BATCH_FRAMES if device.type == "cpu" else DEFAULT_MAX_BATCH_FRAMES


def _no_progress(stage: str, fraction: float, message: str) -> None:
    return None


# -- inputs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class UtteranceSet:
    """Waveforms (mono float32, 16 kHz) with their speaker and utterance ids."""

    waveforms: Sequence[np.ndarray]
    speaker_ids: Sequence[str]
    utt_ids: Sequence[str] | None = None

    def __post_init__(self) -> None:
        if len(self.waveforms) != len(self.speaker_ids):
            raise InvalidInputError(
                f"{len(self.waveforms)} waveforms but {len(self.speaker_ids)} speaker ids"
            )
        if self.utt_ids is not None and len(self.utt_ids) != len(self.waveforms):
            raise InvalidInputError(
                f"{len(self.waveforms)} waveforms but {len(self.utt_ids)} utterance ids"
            )

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> UtteranceSet:
        """Read every utterance of ``manifest`` (resampled to 16 kHz mono)."""
        waves = [read_audio(manifest.resolve(u))[0] for u in manifest.utterances]
        return cls(
            waves,
            [u.speaker_id for u in manifest.utterances],
            [u.utt_id for u in manifest.utterances],
        )


def resolve_grids(
    families: Sequence[str], grids: Mapping[str, Sequence[float]] | None = None
) -> dict[str, np.ndarray]:
    """Parameter sweep per family: Liu et al. Table 1 (`parameter_grid`) unless ``grids`` names one.

    A custom grid must hold the family's identity (its embedding is the untransformed baseline).
    """
    out: dict[str, np.ndarray] = {}
    for family in families:
        if family not in TRANSFORM_FAMILIES:
            raise InvalidInputError(
                f"unknown pre-restoration family {family!r}; "
                f"expected one of {', '.join(TRANSFORM_FAMILIES)}"
            )
        grid = np.asarray(
            grids[family] if grids and family in grids else parameter_grid(family), np.float64
        )
        if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)):
            raise InvalidInputError(f"{family}: the parameter grid must be a non-empty 1-D list")
        if not np.any(np.isclose(grid, IDENTITY_PARAMETER[family], atol=1e-9)):
            raise InvalidInputError(
                f"{family}: the parameter grid must contain the identity "
                f"{IDENTITY_PARAMETER[family]}"
            )
        out[family] = grid
    return out


def transform_plan(grids: Mapping[str, np.ndarray]) -> list[tuple[str, float]]:
    """(family, parameter) for every parameter of every family's grid, in order."""
    return [(family, float(a)) for family, grid in grids.items() for a in grid]


def _is_identity(family: str, parameter: float) -> bool:
    return math.isclose(parameter, IDENTITY_PARAMETER[family], abs_tol=1e-9)  # type: ignore[index]


# -- embedding the transformed versions ------------------------------------------------------


class TransformEmbedder:
    """Embeddings (R, dim) of every transform of ``plan`` applied to one utterance.

    ``implementation``: ``feature`` or ``waveform`` (module docstring). ``max_batch``: most
    versions embedded together (1 = one at a time); ``max_batch_frames`` bounds batch x frames
    (None: `default_max_batch_frames` of the device). The versions are split into equal batches.
    Identity entries of the plan are computed once, from the untransformed utterance.
    """

    def __init__(
        self,
        encoder: SpeakerEncoder,
        plan: Sequence[tuple[str, float]],
        implementation: Implementation = "feature",
        *,
        device: str | torch.device = "cpu",
        max_batch: int = 256,
        max_batch_frames: int | None = None,
        vtln_mode: str = "spectrum",
        antialias: bool = True,
        time_smoothing: bool = True,
        scaled_pitch_window: bool = True,
    ) -> None:
        if implementation not in ("feature", "waveform"):
            raise InvalidInputError(
                f"implementation must be 'feature' or 'waveform', got {implementation!r}"
            )
        self.device = resolve_device(device)
        if max_batch_frames is None:
            max_batch_frames = default_max_batch_frames(self.device)
        if max_batch < 1 or max_batch_frames < 1:
            raise InvalidInputError("max_batch and max_batch_frames must be >= 1")
        self.encoder = encoder.to(self.device).eval()
        self.plan = list(plan)
        self.implementation = implementation
        self.max_batch = max_batch
        self.max_batch_frames = max_batch_frames
        identity = [_is_identity(f, a) for f, a in self.plan]
        # Row 0 of the computed versions is the untransformed utterance.
        self._transformed = [p for p, ident in zip(self.plan, identity, strict=True) if not ident]
        rows, k = [], 1
        for ident in identity:
            rows.append(0 if ident else k)
            k += 0 if ident else 1
        self._rows = np.array(rows, dtype=np.int64)
        self._feature: FeatureDomainTransformer | None = None
        self._anonymizers: list[BuiltinAnonymizer] = []
        if implementation == "feature":
            features = self.encoder.features
            if not isinstance(features, FilterbankFeatures):
                # The feature-domain warps act on fbanks; an SSL front end has none.
                raise InvalidInputError(
                    "implementation 'feature' needs an fbank recognizer; this one has a "
                    f"{type(features).__name__} front end: use implementation 'waveform'"
                )
            self._feature = FeatureDomainTransformer(
                features,
                [(self.plan[0][0], IDENTITY_PARAMETER[self.plan[0][0]]), *self._transformed],  # type: ignore[index]
                self.device,
                antialias=antialias,
                time_smoothing=time_smoothing,
                scaled_pitch_window=scaled_pitch_window,
            )
        else:
            for family, a in self._transformed:
                params: dict[str, Any] = (
                    {"semitones": a}
                    if family == "pitch"
                    else {"warp": family, "alpha": a, "mode": vtln_mode}
                )
                self._anonymizers.append(
                    build_anonymizer("pitch" if family == "pitch" else "vtln", params)
                )

    @property
    def n_computed(self) -> int:
        """Versions actually computed per utterance (the identity counted once)."""
        return 1 + len(self._transformed)

    def _embed_features(self, feats: torch.Tensor) -> np.ndarray:
        n, frames = feats.shape[0], feats.shape[1]
        size = max(1, min(self.max_batch, self.max_batch_frames // max(frames, 1)))
        size = -(-n // -(-n // size))  # equal batches: 10 versions at most 8 -> 2 of 5
        out = [
            self.encoder.embedding(feats[i : i + size]).float().cpu().numpy()
            for i in range(0, n, size)
        ]
        return np.concatenate(out, axis=0)

    def _versions(self, waveform: np.ndarray) -> np.ndarray:
        if self._feature is not None:
            return self._embed_features(self._feature.transform(waveform))
        x64 = np.asarray(waveform, dtype=np.float64)
        waves = [np.asarray(waveform, dtype=np.float32)] + [
            finish_waveform(anon.transform(x64, a), x64)
            for anon, (_, a) in zip(self._anonymizers, self._transformed, strict=True)
        ]
        batch = torch.from_numpy(np.stack(waves)).to(self.device)  # equal lengths: no padding
        return self._embed_features(self.encoder.features(batch))

    def embed(self, waveform: np.ndarray) -> np.ndarray:
        """Embeddings (R, dim) float32 of the plan's transforms of ``waveform``, plan order."""
        fork = [self.device.index or 0] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=fork), torch.inference_mode():
            torch.manual_seed(0)  # x-vector pooling draws noise: keep embeddings repeatable
            computed = self._versions(waveform)
        return computed[self._rows]


def embed_transformed_set(
    embedder: TransformEmbedder,
    waveforms: Sequence[np.ndarray],
    progress: ProgressFn = _no_progress,
    stage: str = "embed",
) -> np.ndarray:
    """Embeddings (n, R, dim) of every utterance under every transform of the embedder's plan."""
    out = np.empty((len(waveforms), len(embedder.plan), embedder.encoder.embedding_dim), np.float32)
    for i, w in enumerate(waveforms):  # utterances differ in length: one batch of R per utterance
        out[i] = embedder.embed(w)
        progress(stage, (i + 1) / len(waveforms), f"{i + 1}/{len(waveforms)}")
    return out


# -- scoring -----------------------------------------------------------------------------------


def enrollment_models(
    speaker_ids: Sequence[str], enrollment_model: EnrollmentModel
) -> tuple[np.ndarray, np.ndarray]:
    """(averaging matrix A (n_models, n_enrollment), model speaker ids).

    ``speaker_mean``: one model per speaker, the mean of its embeddings (``A`` rows sum to 1,
    speakers sorted); ``per_utterance``: ``A = I``.
    """
    spk = np.asarray(speaker_ids).astype(str)
    if enrollment_model == "per_utterance":
        return np.eye(len(spk)), spk
    if enrollment_model != "speaker_mean":
        raise InvalidInputError(
            f"enrollment_model must be 'speaker_mean' or 'per_utterance', got {enrollment_model!r}"
        )
    models, inverse = np.unique(spk, return_inverse=True)
    onehot = (inverse[None, :] == np.arange(len(models))[:, None]).astype(np.float64)
    return onehot / onehot.sum(axis=1, keepdims=True), models


@dataclass
class ModeScores:
    """Scores of one (family, mode): best over r, which r won, and the per-r EER (%)."""

    scores: np.ndarray  # (n_trial, n_models), best cosine over r
    best_index: np.ndarray  # (n_trial, n_models), argmax r
    per_parameter_eer_percent: np.ndarray  # (R,)


def _eer(scores: np.ndarray, target: np.ndarray) -> float:
    return float(compute_eer(scores[target], scores[~target]).eer_percent)


def score_prerestoration(
    transformed: np.ndarray,
    fixed: np.ndarray,
    averaging: np.ndarray,
    target_mask: np.ndarray,
    mode: Mode,
) -> ModeScores:
    """Best-over-r cosine scores of one mode, and the EER (%) of each r alone.

    ``enrollment`` mode: ``transformed`` (n_enrollment, R, d) are the enrollment embeddings under
    every transform (models ``averaging @ transformed[:, r]``), ``fixed`` (n_trial, d) the trial
    embeddings. ``trial`` mode: ``transformed`` (n_trial, R, d), ``fixed`` (n_enrollment, d)
    (models ``averaging @ fixed``). ``averaging`` (n_models, n_enrollment) comes from
    `enrollment_models`; ``target_mask`` (n_trial, n_models) is True for same-speaker pairs.
    """
    if mode not in MODES:
        raise InvalidInputError(f"mode must be 'enrollment' or 'trial', got {mode!r}")
    if transformed.ndim != 3 or fixed.ndim != 2:
        raise InvalidInputError("transformed must be (n, R, d) and fixed (m, d)")
    if transformed.shape[1] == 0:
        # With no transform there is no best-over-r score (it would be -inf everywhere).
        raise InvalidInputError(
            "pre-restoration needs at least one transform: transformed has R = 0 versions"
        )
    fixed_side = l2_normalize(fixed if mode == "enrollment" else averaging @ fixed)
    best = np.full(target_mask.shape, -np.inf)
    best_index = np.zeros(target_mask.shape, dtype=np.int64)
    per_r = np.empty(transformed.shape[1])
    for r in range(transformed.shape[1]):  # a loop over parameters; each step scores all pairs
        if mode == "enrollment":
            s = fixed_side @ l2_normalize(averaging @ transformed[:, r]).T
        else:
            s = l2_normalize(transformed[:, r]) @ fixed_side.T
        per_r[r] = _eer(s, target_mask)
        better = s > best
        best = np.where(better, s, best)
        best_index = np.where(better, r, best_index)
    return ModeScores(best, best_index, per_r)


# -- results -----------------------------------------------------------------------------------


@dataclass
class FamilyModeResult:
    """One row of Liu et al.'s Table 2 plus its Fig. 2 curve."""

    family: str
    mode: Mode
    label: Label | None
    family_matches_anonymizer: bool | None
    """Liu et al.'s bold cells: the swept family is the anonymizer's (None: anonymizer unknown)."""
    eer_percent: float
    parameters: list[float]
    per_parameter_eer_percent: list[float]
    best_parameter_by_eer: float
    target_best_parameter_counts: list[int]
    median_target_best_parameter: float


@dataclass
class PrerestorationResult:
    """Everything the pre-restoration analysis reports; `to_dict` is JSON-able."""

    implementation: Implementation
    anonymizer_family: str | None
    enrollment_condition: EnrollmentCondition
    """Enrollment speech the anonymized trials were compared with: original or anonymized."""
    attacker_training: AttackerTraining
    """Data the attacker's recognizer was trained on: original or anonymized speech."""
    enrollment_model: EnrollmentModel
    families: list[str]
    modes: list[Mode]
    n_enrollment_utterances: int
    n_trial_utterances: int
    n_models: int
    n_target: int
    n_nontarget: int
    baseline_eer_percent: float
    entries: list[FamilyModeResult]
    timings_s: dict[str, float] = field(default_factory=dict)
    transforms_per_utterance: int = 0
    best_scores: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    """With ``keep_scores``: best-over-r cosines (n_trial, n_models) per ``"family/mode"``, and
    ``target_mask`` the same-speaker pairs (models: sorted speakers or enrollment utterances).
    Not part of `to_dict`."""
    target_mask: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (floats, ints, strings, lists); the score matrices are left out."""
        out = asdict(replace(self, best_scores={}, target_mask=None))
        del out["best_scores"], out["target_mask"]
        return out

    def entry(self, family: str, mode: str) -> FamilyModeResult:
        """The result of one (family, mode); KeyError if it was not run."""
        for e in self.entries:
            if e.family == family and e.mode == mode:
                return e
        raise KeyError(f"no pre-restoration result for family {family!r}, mode {mode!r}")

    def table(self) -> list[dict[str, Any]]:
        """Liu et al. Table 2 rows: family, label, EER (%) per mode, baseline, and the condition."""
        rows = []
        for family in self.families:
            row: dict[str, Any] = {
                "family": family,
                "enrollment_condition": self.enrollment_condition,
                "attacker_training": self.attacker_training,
                "baseline_eer_percent": self.baseline_eer_percent,
            }
            for e in self.entries:
                if e.family == family:
                    row["label"] = e.label
                    row["family_matches_anonymizer"] = e.family_matches_anonymizer
                    row[f"{e.mode}_eer_percent"] = e.eer_percent
            rows.append(row)
        return rows


def _as_encoder(encoder_checkpoint: SpeakerEncoder | str | Path) -> SpeakerEncoder:
    if isinstance(encoder_checkpoint, SpeakerEncoder):
        return encoder_checkpoint
    from services.attacker.checkpoint import load_encoder

    return load_encoder(encoder_checkpoint)


def _as_set(data: UtteranceSet | Manifest, name: str) -> UtteranceSet:
    out = UtteranceSet.from_manifest(data) if isinstance(data, Manifest) else data
    check_waveforms(list(out.waveforms), name)
    return out


def _families_and_modes(
    families: Sequence[str], modes: Sequence[Mode]
) -> tuple[list[str], list[Mode]]:
    """The families and modes without duplicates; :class:`InvalidInputError` when either is
    empty or a mode is unknown."""
    unique_families = list(dict.fromkeys(families))
    unique_modes = list(dict.fromkeys(modes))
    if not unique_families or not unique_modes:
        raise InvalidInputError("at least one family and one mode are needed")
    for m in unique_modes:
        if m not in MODES:
            raise InvalidInputError(
                f"unknown pre-restoration mode {m!r}; expected enrollment, trial"
            )
    return unique_families, unique_modes


def _target_mask(trial: UtteranceSet, model_speakers: np.ndarray) -> np.ndarray:
    """(trials, models) True where the trial's speaker is the model's; InvalidInputError unless
    there are both target and non-target trials."""
    speakers = np.asarray(trial.speaker_ids).astype(str)
    target: np.ndarray = speakers[:, None] == model_speakers[None, :]
    n_target = int(target.sum())
    if n_target == 0 or n_target == target.size:
        raise InvalidInputError(
            "pre-restoration needs target and non-target trials: check that trial speakers are "
            "enrolled and that there are at least two enrollment speakers"
        )
    return target


def _embed_sets(
    encoder: SpeakerEncoder,
    sets: Mapping[str, UtteranceSet],
    plan: list[tuple[str, float]],
    identity_plan: list[tuple[str, float]],
    modes: Sequence[Mode],
    implementation: Implementation,
    progress: ProgressFn,
    timings: dict[str, float],
    **options: Any,
) -> dict[str, np.ndarray]:
    """Each set's embeddings under every transform of ``plan`` when its mode is attacked, else
    under the identity alone; ``timings`` gets ``embed_<set>`` (s). ``options``: the
    :class:`TransformEmbedder`'s keyword arguments."""
    embedded: dict[str, np.ndarray] = {}
    for name, data in sets.items():
        t0 = time.perf_counter()
        versions = plan if name in modes else identity_plan
        embedder = TransformEmbedder(encoder, versions, implementation, **options)
        embedded[name] = embed_transformed_set(embedder, data.waveforms, progress, name)
        timings[f"embed_{name}"] = time.perf_counter() - t0
    return embedded


def _score_families(
    embedded: Mapping[str, np.ndarray],
    grid_of: Mapping[str, np.ndarray],
    labels: Mapping[str, tuple[Label | None, bool | None]],
    modes: Sequence[Mode],
    averaging: np.ndarray,
    target: np.ndarray,
    *,
    keep_scores: bool,
) -> tuple[float, list[FamilyModeResult], dict[str, np.ndarray]]:
    """(EER % without transforms, one entry per (family, mode), the kept score matrices) of the
    embedded sets; ``labels``: per family (in plan order), its attack label and whether it is
    the anonymizer's family."""
    families = list(labels)
    offsets = np.cumsum([0] + [len(grid_of[f]) for f in families])
    base = _untransformed(embedded, grid_of, families[0])
    baseline = score_prerestoration(
        base["trial"][:, None], base["enrollment"], averaging, target, "trial"
    ).per_parameter_eer_percent[0]
    entries: list[FamilyModeResult] = []
    best_scores: dict[str, np.ndarray] = {}
    for i, family in enumerate(families):
        label, matches = labels[family]
        columns = {m: embedded[m][:, int(offsets[i]) : int(offsets[i + 1])] for m in modes}
        for mode, ms in _scored_modes(columns, base, averaging, target):
            if keep_scores:
                best_scores[f"{family}/{mode}"] = ms.scores
            entries.append(_entry(family, mode, label, matches, grid_of[family], ms, target))
    return float(baseline), entries, best_scores


def _untransformed(
    embedded: Mapping[str, np.ndarray], grid_of: Mapping[str, np.ndarray], family: str
) -> dict[str, np.ndarray]:
    """Each set's untransformed embeddings: the plan row of ``family``'s identity parameter (the
    only row of a set embedded without transforms)."""
    grid = grid_of[family]
    identity_row = int(np.flatnonzero(np.isclose(grid, IDENTITY_PARAMETER[family]))[0])  # type: ignore[index]
    return {name: e[:, identity_row if e.shape[1] > 1 else 0] for name, e in embedded.items()}


def _scored_modes(
    columns: Mapping[Mode, np.ndarray],
    base: Mapping[str, np.ndarray],
    averaging: np.ndarray,
    target: np.ndarray,
) -> Iterator[tuple[Mode, ModeScores]]:
    """Per mode, the transformed side's versions (``columns``) scored against the other side's
    untransformed embeddings (``base``)."""
    for mode, transformed in columns.items():
        other = "trial" if mode == "enrollment" else "enrollment"
        yield mode, score_prerestoration(transformed, base[other], averaging, target, mode)


def _entry(
    family: str,
    mode: Mode,
    label: Label | None,
    matches: bool | None,
    params: np.ndarray,
    ms: ModeScores,
    target: np.ndarray,
) -> FamilyModeResult:
    """One (family, mode) result from its best-over-parameters scores ``ms``."""
    wins = ms.best_index[target]
    return FamilyModeResult(
        family=family,
        mode=mode,
        label=label,
        family_matches_anonymizer=matches,
        eer_percent=_eer(ms.scores, target),
        parameters=[float(a) for a in params],
        per_parameter_eer_percent=[float(v) for v in ms.per_parameter_eer_percent],
        best_parameter_by_eer=float(params[int(np.argmin(ms.per_parameter_eer_percent))]),
        target_best_parameter_counts=np.bincount(wins, minlength=len(params)).tolist(),
        median_target_best_parameter=float(np.median(params[wins])),
    )


def run_prerestoration(
    encoder_checkpoint: SpeakerEncoder | str | Path,
    enrollment: UtteranceSet | Manifest,
    trial: UtteranceSet | Manifest,
    families: Sequence[str] = TRANSFORM_FAMILIES,
    modes: Sequence[Mode] = MODES,
    implementation: Implementation = "feature",
    anonymizer_family: str | None = None,
    *,
    attacker_training: AttackerTraining,
    enrollment_condition: EnrollmentCondition,
    grids: Mapping[str, Sequence[float]] | None = None,
    enrollment_model: EnrollmentModel = "speaker_mean",
    device: str | torch.device = "cpu",
    max_batch: int = 256,
    max_batch_frames: int | None = None,
    vtln_mode: str = "spectrum",
    antialias: bool = True,
    time_smoothing: bool = True,
    scaled_pitch_window: bool = True,
    keep_scores: bool = False,
    progress: ProgressFn = _no_progress,
) -> PrerestorationResult:
    """Pre-restoration attack of Liu et al. on one evaluation set (see the module docstring).

    ``encoder_checkpoint``: the attacker (checkpoint path or ``SpeakerEncoder``). ``enrollment``
    and ``trial``: waveforms + speaker ids, or manifests (audio is read). Trials are every trial
    utterance against every enrollment model, target when the speakers match (pooled genders).
    ``anonymizer_family``: the anonymizer's transform family (`anonymizer_family_of`), or None.
    ``attacker_training`` (the recognizer's training data) and ``enrollment_condition`` (whether
    ``enrollment`` is original or anonymized speech) state the attack condition: recorded in the
    result, with the family they label each entry (`attack_label`). ``grids``: custom sweeps per
    family (default: Liu et al. Table 1; each must contain the identity). ``max_batch`` (1 = one
    version at a time), ``max_batch_frames`` (None: the device's default), ``vtln_mode``,
    ``antialias``, ``time_smoothing``, ``scaled_pitch_window``: the `TransformEmbedder`'s.
    ``keep_scores`` keeps the best-over-r score matrices (``best_scores``, ``target_mask``).
    EERs are in percent; timings in seconds.
    """
    t_start = time.perf_counter()
    check_attack_condition(attacker_training, enrollment_condition)
    families, modes = _families_and_modes(families, modes)
    grid_of = resolve_grids(families, grids)
    plan = transform_plan(grid_of)
    encoder = _as_encoder(encoder_checkpoint)
    enr = _as_set(enrollment, "enrollment")
    tri = _as_set(trial, "trial")
    averaging, model_speakers = enrollment_models(enr.speaker_ids, enrollment_model)
    target = _target_mask(tri, model_speakers)
    timings: dict[str, float] = {}
    embedded = _embed_sets(
        encoder,
        {"enrollment": enr, "trial": tri},
        plan,
        [(families[0], float(IDENTITY_PARAMETER[families[0]]))],  # type: ignore[index]
        modes,
        implementation,
        progress,
        timings,
        device=device,
        max_batch=max_batch,
        max_batch_frames=max_batch_frames,
        vtln_mode=vtln_mode,
        antialias=antialias,
        time_smoothing=time_smoothing,
        scaled_pitch_window=scaled_pitch_window,
    )

    t0 = time.perf_counter()
    labels = {
        f: (
            attack_label(f, anonymizer_family, attacker_training, enrollment_condition),
            family_matches(f, anonymizer_family),
        )
        for f in families
    }
    baseline, entries, best_scores = _score_families(
        embedded, grid_of, labels, modes, averaging, target, keep_scores=keep_scores
    )
    timings["score"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    return PrerestorationResult(
        implementation=implementation,
        anonymizer_family=anonymizer_family,
        enrollment_condition=enrollment_condition,
        attacker_training=attacker_training,
        enrollment_model=enrollment_model,
        families=families,
        modes=modes,
        n_enrollment_utterances=len(enr.waveforms),
        n_trial_utterances=len(tri.waveforms),
        n_models=len(model_speakers),
        n_target=int(target.sum()),
        n_nontarget=int(target.size - target.sum()),
        baseline_eer_percent=float(baseline),
        entries=entries,
        timings_s=timings,
        transforms_per_utterance=len(plan),
        best_scores=best_scores,
        target_mask=target if keep_scores else None,
    )


# -- plot --------------------------------------------------------------------------------------


def plot_per_parameter_eer(result: PrerestorationResult, path_stem: Path) -> list[str]:
    """Liu et al. Fig. 2: EER (%) using only transform r, against r, one panel per family.

    One line per mode, a dashed line at the no-pre-restoration baseline, dotted lines at each
    mode's best-over-r EER, a grey line at the identity parameter. Writes PNG and SVG; returns
    the file names.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(result.families)
    fig, axes = plt.subplots(1, n, figsize=(3.6 * n, 3.4), squeeze=False, sharey=True)
    for ax, family in zip(axes[0], result.families, strict=True):
        for k, e in enumerate(x for x in result.entries if x.family == family):
            color = f"C{k}"
            ax.plot(
                e.parameters,
                e.per_parameter_eer_percent,
                marker=".",
                color=color,
                label=f"{e.mode} (min over r: {e.eer_percent:.1f} %)",
            )
            ax.axhline(e.eer_percent, color=color, linestyle=":", linewidth=1)
        ax.axhline(
            result.baseline_eer_percent,
            color="k",
            linestyle="--",
            linewidth=1,
            label=f"none ({result.baseline_eer_percent:.1f} %)",
        )
        ax.axvline(IDENTITY_PARAMETER[family], color="0.7", linewidth=1)  # type: ignore[index]
        label = next((e.label for e in result.entries if e.family == family), None)
        ax.set_title(family + (f" ({label})" if label else ""), fontsize=9)
        ax.set_xlabel("semitones" if family == "pitch" else "warp parameter")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("EER (%)")
    fig.suptitle(
        f"{result.enrollment_condition} enrollment, anonymized trials; attacker trained on "
        f"{result.attacker_training} speech",
        fontsize=9,
    )
    fig.tight_layout()
    return save_figure(fig, path_stem)
