"""Gain of voice distinctiveness GVD (VoicePrivacy 2020 / 2022 evaluation plans; Noé et al. 2020).

Definitions (VoicePrivacy 2020 evaluation plan, section "voice distinctiveness"; the same in 2022):

- speaker similarity: for speakers i and j with utterance sets X_i and X_j,
  ``S(i, j) = sigmoid( mean_{x in X_i, y in X_j, x != y} LLR(x, y) )``, ``sigmoid(z) =
  1 / (1 + exp(-z))``: the mean of the verification scores over all pairs of DIFFERENT utterances
  (on the diagonal, an utterance is never compared with itself), through a sigmoid;
- voice similarity matrix ``M = (S(i, j))`` over the N speakers of a set; ``M_oo`` compares
  original with original speech, ``M_aa`` anonymized with anonymized;
- diagonal dominance ``D_diag(M) = | mean_i S(i, i) - mean_{i != j} S(i, j) |``: how much more a
  speaker resembles itself than others;
- ``GVD = 10 log10( D_diag(M_aa) / D_diag(M_oo) )`` in dB: 0 dB = the voices stay as distinct as
  the originals; below 0 = voices became less distinct (all speakers sound alike at the limit).

What Unmask does exactly:

- the verification score LLR(x, y) is the cosine similarity of the two utterances' embeddings
  from ONE recognizer trained on original speech (the challenge's ASV_eval), optionally mapped to a
  pseudo-LLR ``score_scale * cos + score_offset`` (default: the raw cosine, as the VoicePrivacy
  2024 evaluation toolkit feeds its raw cosine / PLDA score to the sigmoid). D_diag scales with
  the map's slope, GVD (a ratio) hardly at all;
- the mean over utterance pairs is the mean over all ordered pairs of distinct utterances
  (n_i n_j pairs off the diagonal, n_i (n_i - 1) on it), computed without forming the utterance
  score matrix: cosine is bilinear in the normalized embeddings, so the sum over pairs of speakers
  i and j is ``s_i . s_j`` with ``s_i`` the sum of speaker i's unit embeddings, minus the self
  pairs ``n_i`` on the diagonal. Memory O(n d + N^2), time O(n d + N^2 d);
- speakers with a single utterance have no same-speaker pair: they are left out of both matrices
  (``n_speakers_dropped``); at least two speakers must remain;
- ``D_diag(M_aa)`` below `DDIAG_FLOOR` (speakers indistinguishable to float precision) is floored
  there, so a collapse to one voice gives a large negative, finite GVD instead of -infinity;
  ``D_diag(M_oo)`` below the floor (the recognizer cannot tell the ORIGINAL voices apart) makes GVD
  undefined: NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from services.errors import InvalidInputError
from services.metrics import catalogue

DDIAG_FLOOR = 1e-9
"""Smallest diagonal dominance used in GVD's ratio (dimensionless, similarities lie in (0, 1))."""


def _unit_rows(x: NDArray[np.floating], name: str) -> NDArray[np.float64]:
    e = np.asarray(x, dtype=np.float64)
    if e.ndim != 2 or e.shape[0] == 0 or e.shape[1] == 0:
        raise InvalidInputError(
            f"{name}: embeddings must be a non-empty (n, d) array, got {e.shape}"
        )
    if not np.isfinite(e).all():
        raise InvalidInputError(f"{name}: embeddings contain NaN or infinity")
    norms = np.linalg.norm(e, axis=1)
    if (norms == 0).any():
        rows = np.flatnonzero(norms == 0)[:5].tolist()
        raise InvalidInputError(f"{name}: zero embedding at row(s) {rows}: cosine is undefined")
    return np.asarray(e / norms[:, None])


def _speaker_index(speakers: Sequence[str], n: int) -> tuple[NDArray[np.str_], NDArray[np.int64]]:
    labels = np.asarray([str(s) for s in speakers])
    if labels.size != n:
        raise InvalidInputError(
            f"speakers: {labels.size} labels for {n} embeddings; give one speaker per utterance"
        )
    names, inverse = np.unique(labels, return_inverse=True)
    return names, inverse.astype(np.int64)


def voice_similarity_matrix(
    embeddings: NDArray[np.floating],
    speaker_index: NDArray[np.int64],
    n_speakers: int,
    *,
    score_scale: float = 1.0,
    score_offset: float = 0.0,
) -> NDArray[np.float64]:
    """The (N, N) voice similarity matrix ``S(i, j)`` of the module docstring.

    Args:
        embeddings: (n, d) utterance embeddings (any norm: they are L2-normalized here).
        speaker_index: (n,) speaker of each utterance, integers in [0, n_speakers); every speaker
            needs at least two utterances (the diagonal averages pairs of distinct utterances).
        n_speakers: N.
        score_scale, score_offset: the pseudo-LLR ``score_scale * cos + score_offset``.

    Returns:
        S in (0, 1), symmetric, float64.
    """
    e = _unit_rows(embeddings, "embeddings")
    idx = np.asarray(speaker_index, dtype=np.int64)
    counts = np.bincount(idx, minlength=n_speakers).astype(np.float64)
    if (counts < 2).any():
        raise InvalidInputError(
            "voice similarity matrix: every speaker needs at least two utterances "
            f"(speaker index {int(np.flatnonzero(counts < 2)[0])} has {int(counts.min())})"
        )
    sums = np.zeros((n_speakers, e.shape[1]))
    np.add.at(sums, idx, e)  # s_i = sum of speaker i's unit embeddings
    pair_sums = sums @ sums.T  # sum of cos over all ordered utterance pairs (i, j)
    self_cos = np.bincount(idx, weights=np.einsum("nd,nd->n", e, e), minlength=n_speakers)
    pair_sums[np.diag_indices(n_speakers)] -= self_cos  # drop each utterance's pair with itself
    pair_counts = np.outer(counts, counts) - np.diag(counts)
    mean_score = score_scale * (pair_sums / pair_counts) + score_offset
    sim = 1.0 / (1.0 + np.exp(-mean_score))
    return np.asarray((sim + sim.T) / 2)  # exact symmetry (the products differ by rounding)


def diagonal_dominance(matrix: NDArray[np.floating]) -> float:
    """``D_diag(M) = |mean of the diagonal - mean off the diagonal|`` of an (N, N) M, N >= 2."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        raise InvalidInputError(f"diagonal dominance needs a square matrix, N >= 2, got {m.shape}")
    n = m.shape[0]
    diag = np.trace(m) / n
    off = (m.sum() - np.trace(m)) / (n * (n - 1))
    return float(abs(diag - off))


def gain_of_voice_distinctiveness(
    emb_orig: NDArray[np.floating],
    emb_anon: NDArray[np.floating],
    speakers: Sequence[str],
    *,
    score_scale: float = 1.0,
    score_offset: float = 0.0,
) -> dict[str, Any]:
    """GVD (dB) of anonymized against original trial speech (see the module docstring).

    Args:
        emb_orig: (n, d) embeddings of the original trial utterances, from a recognizer trained
            on original speech.
        emb_anon: (n, d) embeddings of the same utterances anonymized (same row order), from the
            SAME recognizer.
        speakers: (n,) source speaker of each row.
        score_scale, score_offset: pseudo-LLR ``score_scale * cos + score_offset`` fed to the
            sigmoid (default: raw cosine).

    Returns:
        ``gvd_db`` (dB; NaN when the original voices are not distinct), ``ddiag_original`` and
        ``ddiag_anonymized`` (D_diag of M_oo and M_aa, dimensionless), ``n_speakers`` (speakers in
        the matrices), ``n_speakers_dropped`` (speakers with a single utterance, left out),
        ``n_utterances`` (rows used).
    """
    o = np.asarray(emb_orig, dtype=np.float64)
    a = np.asarray(emb_anon, dtype=np.float64)
    if o.shape != a.shape:
        raise InvalidInputError(
            f"GVD needs one anonymized embedding per original one from the same recognizer: "
            f"shapes {o.shape} and {a.shape}"
        )
    if not np.isfinite(score_scale) or score_scale <= 0 or not np.isfinite(score_offset):
        raise InvalidInputError(
            f"GVD: score_scale must be > 0 and finite, score_offset finite; got "
            f"{score_scale}, {score_offset}"
        )
    names, inverse = _speaker_index(speakers, o.shape[0] if o.ndim == 2 else -1)
    counts = np.bincount(inverse, minlength=names.size)
    kept = counts >= 2
    n_kept = int(kept.sum())
    if n_kept < 2:
        raise InvalidInputError(
            f"GVD needs at least two speakers with two or more trial utterances each; got "
            f"{n_kept} of {names.size} speakers"
        )
    new_index = np.cumsum(kept) - 1  # old speaker index -> index among the kept speakers
    rows = kept[inverse]
    idx = new_index[inverse[rows]].astype(np.int64)
    kwargs = {"score_scale": score_scale, "score_offset": score_offset}
    d_oo = diagonal_dominance(voice_similarity_matrix(o[rows], idx, n_kept, **kwargs))
    d_aa = diagonal_dominance(voice_similarity_matrix(a[rows], idx, n_kept, **kwargs))
    gvd = (
        float(10.0 * np.log10(max(d_aa, DDIAG_FLOOR) / d_oo))
        if d_oo >= DDIAG_FLOOR
        else float("nan")
    )
    return {
        catalogue.VOICE_DISTINCTIVENESS.key: gvd,
        "ddiag_original": d_oo,
        "ddiag_anonymized": d_aa,
        "n_speakers": n_kept,
        "n_speakers_dropped": int(names.size - n_kept),
        "n_utterances": int(rows.sum()),
    }
