"""Legal metrics (Vauquier et al., Interspeech 2025): top-1 linkability and predicate singling out.

Both are measured per speaker on embeddings of *conversations*: L utterances of one speaker,
embeddings averaged and length-normalized (one utterance is used as it is), cosine similarity s.

- **Top-1 linkability** pi_link = Pr_i[ s(test_i, enroll_i) > max_{j != i} s(test_i, enroll_j) ]
  in a population of N enrolled speakers (the true speaker plus N - 1 drawn without
  replacement); chance 1/N. Ties count for the attacker (the reference code's convention).
- **Singling out** pi_sing: an enrollment embedding x_e and a threshold t define the predicate
  p(x) = 1[s(x, x_e) > t]; t sits midway between the M-th and (M + 1)-th highest of the M * N
  calibration scores of the N drawn speakers (M held-out conversations per speaker), so that
  E[p] = 1/N; success when p fires on exactly one of the N test conversations, whoever it is.
  Chance: a predicate firing on each of N conversations with probability 1/N isolates one with
  probability (1 - 1/N)^(N - 1), which falls to e^-1 (36.8 %, the paper's trivial level).

The authors' reference package ``voice-anonymization-legal-eval`` (``legal_eval``) is called for
linkability (its vectorized beater count and hypergeometric draw) and for the conversation split
(test and calibration conversations per fold). Its singling out loops in Python over enrollment
speakers and draws, with O(N) Python work inside each, which costs minutes at 1,000 speakers
(``benchmarks/legal_metrics.py``); :func:`singling_out_outcomes` is the same computation on
whole batches of draws. With ``sampler="reference"`` it replays the package's random streams and
reproduces its outcomes exactly (tested); the default ``sampler="batched"`` draws the same
distribution (N - 1 others uniformly without replacement) from one stream per (seed, N, fold).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from legal_eval.embeddings import average_embeddings, build_conversations
from legal_eval.io import ScoreMatrix
from legal_eval.metrics.linkability import count_beaters, linkability
from legal_eval.metrics.singling_out import ConversationScores, score_conversations
from numpy.typing import NDArray

Sampler = Literal["batched", "reference"]

PAPER_CONVERSATION_LENGTHS: tuple[int, ...] = (1, 3, 10, 30)
"""The conversation lengths L of the paper's curves; the default where the protocol has them."""

MIN_SPEAKERS = 4
"""Fewest evaluation speakers for the default (automatic) curves: below it they are left out."""

INTERVAL_PERCENTILES = (2.5, 97.5)
"""The interval over draws reported at each curve point (percentiles of the draws' values)."""

_BATCH_ELEMENTS = 4_000_000
"""Gathered calibration scores per batch of draws (bounds the working memory to ~32 MB)."""


def linkability_chance(n: int) -> float:
    """Top-1 linkability of a blind guess among ``n`` speakers (a fraction): 1/n."""
    return 1.0 / n


def singling_out_chance(n: int) -> float:
    """Isolation rate (a fraction) of a predicate firing on each of ``n`` conversations with
    probability 1/n: (1 - 1/n)^(n - 1); 0.5 at n = 2, tending to e^-1."""
    return (1.0 - 1.0 / n) ** (n - 1)


def log_spaced_counts(maximum: int, points: int) -> list[int]:
    """About ``points`` population sizes from 2 to ``maximum``, evenly spaced in log N."""
    if maximum < 2:
        return []
    grid = np.unique(np.round(np.geomspace(2, maximum, num=max(points, 2))).astype(int))
    return [int(n) for n in grid]


# --- the population a protocol offers ----------------------------------------------------------


@dataclass(frozen=True)
class LegalPopulation:
    """What an evaluation set offers the legal metrics: speakers with enrollment and trial
    utterances, and the fewest trial utterances any of them has."""

    n_speakers: int
    min_trials: int

    def linkability_lengths(self, wanted: Sequence[int]) -> list[int]:
        """The ``wanted`` L a test conversation (L trial utterances) can be built for."""
        return [L for L in wanted if L <= self.min_trials]

    def singling_out_lengths(self, wanted: Sequence[int]) -> list[int]:
        """The ``wanted`` L with a test AND a calibration conversation (2 L trial utterances)."""
        return [L for L in wanted if 2 * L <= self.min_trials]


def legal_problems(
    speaker_counts: Sequence[int] | None,
    conversation_lengths: Sequence[int] | None,
    headline_speakers: int | None,
    headline_length: int,
    population: LegalPopulation,
    *,
    field_prefix: str = "metrics.legal",
) -> list[str]:
    """Every request the population cannot serve, as ``field: message`` naming what it has.

    Explicit values that exceed the population are errors (never truncated); unset ones
    (None) adapt to it.
    """
    have = (
        f"the evaluation set has {population.n_speakers} speakers with enrollment and trial "
        f"utterances, the fewest trial utterances of a speaker being {population.min_trials}"
    )
    problems: list[str] = []
    if speaker_counts is not None:
        too_many = [n for n in speaker_counts if n > population.n_speakers]
        if too_many:
            problems.append(
                f"{field_prefix}.speaker_counts: {too_many} exceed the population; {have}"
            )
    if conversation_lengths is not None:
        too_long = [L for L in conversation_lengths if 2 * L > population.min_trials]
        if too_long:
            problems.append(
                f"{field_prefix}.conversation_lengths: {too_long} need 2 L trial utterances per "
                f"speaker (one test and at least one calibration conversation); {have}"
            )
    if headline_speakers is not None and headline_speakers > population.n_speakers:
        problems.append(
            f"{field_prefix}.headline_speakers: {headline_speakers} exceeds the population; {have}"
        )
    if 2 * headline_length > population.min_trials:
        problems.append(
            f"{field_prefix}.headline_length: {headline_length} needs {2 * headline_length} "
            f"trial utterances per speaker; {have}"
        )
    elif conversation_lengths is not None and headline_length not in conversation_lengths:
        problems.append(
            f"{field_prefix}.headline_length: {headline_length} is not one of "
            f"conversation_lengths {list(conversation_lengths)}"
        )
    if population.n_speakers < 2:
        problems.append(f"{field_prefix}: needs at least 2 speakers; {have}")
    return problems


# --- curves ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CurvePoint:
    """One point of a curve: population size ``n``, the draws' values (fractions) and the
    chance level (fraction)."""

    n: int
    draws: NDArray[np.float64]
    chance: float

    def to_json(self) -> dict[str, Any]:
        """Percent values: mean, sample std and 2.5-97.5 percentile interval over draws."""
        d = self.draws * 100.0
        low, high = np.percentile(d, INTERVAL_PERCENTILES)
        return {
            "n": self.n,
            "mean_percent": float(d.mean()),
            "std_percent": float(d.std(ddof=1)) if d.size > 1 else 0.0,
            "interval_percent": [float(low), float(high)],
            "n_draws": int(d.size),
            "chance_percent": 100.0 * self.chance,
        }


@dataclass
class Curve:
    """A metric over population sizes at one conversation length."""

    metric: Literal["linkability_top1", "singling_out"]
    conversation_length: int
    points: list[CurvePoint] = field(default_factory=list)

    def at(self, n: int) -> CurvePoint | None:
        """The point at population size ``n``, if computed."""
        return next((p for p in self.points if p.n == n), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "conversation_length": self.conversation_length,
            "points": [p.to_json() for p in self.points],
        }


def _by_speaker(
    embeddings: NDArray[np.floating[Any]], speakers: Sequence[str]
) -> dict[str, list[int]]:
    rows: dict[str, list[int]] = {}
    for i, s in enumerate(speakers):
        rows.setdefault(str(s), []).append(i)
    return rows


def enrollment_embeddings(
    embeddings: NDArray[np.floating[Any]], speakers: Sequence[str]
) -> dict[str, NDArray[np.float64]]:
    """One embedding per enrollment speaker: all its utterances averaged (the reference code's
    ``average_embeddings``: length-normalized after averaging), speakers sorted."""
    rows = _by_speaker(embeddings, speakers)
    x = np.asarray(embeddings, dtype=np.float64)
    return {s: average_embeddings(list(x[rows[s]])) for s in sorted(rows)}


def linkability_curve(
    enroll: Mapping[str, NDArray[np.float64]],
    trial_embeddings: NDArray[np.floating[Any]],
    trial_speakers: Sequence[str],
    conversation_length: int,
    speaker_counts: Sequence[int],
    *,
    draws: int,
    seed: int,
) -> Curve:
    """Top-1 linkability over population sizes, by the reference package.

    Test conversations: each trial speaker's utterances (in the given order) cut into
    consecutive, disjoint runs of L, every run a test column (a speaker with K trial utterances
    gives K // L). The population is the enrollment speakers; each draw picks the N - 1 others
    per test conversation (``legal_eval.metrics.linkability``, hypergeometric form).
    """
    x = np.asarray(trial_embeddings, dtype=np.float64)
    L = conversation_length
    columns: list[NDArray[np.float64]] = []
    labels: list[str] = []
    for s, rows in _by_speaker(x, trial_speakers).items():
        if s not in enroll:
            continue
        for start in range(0, len(rows) - L + 1, L):
            columns.append(average_embeddings(list(x[rows[start : start + L]])))
            labels.append(s)
    if not labels:
        raise ValueError(f"no trial speaker has {L} utterances for a conversation of length {L}")
    names = list(enroll)
    e = np.vstack([enroll[s] for s in names])
    e = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-300)
    t = np.vstack(columns)
    t = t / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-300)
    beaters = np.empty(len(labels), dtype=np.int64)
    block = max(1, _BATCH_ELEMENTS // len(names))
    for start in range(0, len(labels), block):  # bounded memory: beaters per column block
        stop = min(start + block, len(labels))
        matrix = ScoreMatrix(e @ t[start:stop].T, names, labels[start:stop], {})
        beaters[start:stop] = count_beaters(matrix)
    full = ScoreMatrix(np.empty((len(names), 0)), names, [], {})
    curve = Curve("linkability_top1", L)
    for n in speaker_counts:
        values = linkability(full, int(n), n_runs=draws, seed=seed, beaters=beaters)
        curve.points.append(CurvePoint(int(n), np.asarray(values), linkability_chance(int(n))))
    return curve


def _window_size(m: int, n_dataset: int, n: int) -> int:
    """Highest calibration scores to scan for the top m + 1 of n drawn speakers' out of
    n_dataset: each score belongs to a drawn speaker with probability n / n_dataset, so about
    (m + 1) n_dataset / n are needed; three times that plus a margin (else: gathered)."""
    return int(np.ceil(3 * (m + 1) * n_dataset / n)) + 32


class _TopCalibration:
    """Each evaluated speaker's ``size`` highest calibration scores, sorted descending, with the
    dataset speaker each belongs to."""

    def __init__(self, flat: NDArray[np.float64], size: int, width: int) -> None:
        size = min(size, flat.shape[1])
        self.size = size
        idx = np.argpartition(-flat, size - 1, axis=1)[:, :size]
        vals = np.take_along_axis(flat, idx, axis=1)
        order = np.argsort(-vals, axis=1, kind="stable")
        self.values = np.take_along_axis(vals, order, axis=1)
        self.speaker = np.take_along_axis(idx, order, axis=1) // width

    def bounds(
        self,
        who: NDArray[np.intp],
        chosen: NDArray[np.intp],
        k: NDArray[np.intp],
        n_dataset: int,
        upper: NDArray[np.float64],
        lower: NDArray[np.float64],
    ) -> NDArray[np.bool_]:
        """Fill ``upper`` / ``lower`` with the k-th and (k+1)-th highest calibration scores of
        the drawn speakers where the window holds k + 1 of them; returns where it did."""
        b = np.arange(len(who))[:, None]
        drawn = np.zeros((len(who), n_dataset), dtype=bool)
        drawn[b, chosen] = True
        member = drawn[b, self.speaker[who]]
        count = np.cumsum(member, axis=1)
        found = count[:, -1] >= k + 1
        i_upper = np.argmax(count >= k[:, None], axis=1)
        i_lower = np.argmax(count >= (k + 1)[:, None], axis=1)
        values = self.values[who]
        upper[found] = values[found, i_upper[found]]
        lower[found] = values[found, i_lower[found]]
        return found


def singling_out_outcomes(
    scores: ConversationScores,
    n: int,
    *,
    draws: int,
    seed: int,
    fold: int,
    sampler: Sampler = "batched",
    cache: dict[str, Any] | None = None,
) -> NDArray[np.bool_]:
    """Isolation outcomes (enrollment speakers in ``scores.dataset_speakers``, ``draws``) for
    sets of ``n`` test speakers: each draw takes the speaker's own test speaker plus n - 1 others,
    calibrates the threshold on their calibration conversations and succeeds when exactly one of
    the n test conversations fires.

    ``sampler="reference"`` draws each (speaker, draw) set from the stream
    ``default_rng((seed, n, fold, row, draw))`` as ``legal_eval.metrics.singling_out`` does, so
    the outcomes equal the package's; ``"batched"`` draws all sets of a batch from one stream.
    ``cache``: one dict per ``scores`` (fold), shared by its calls for increasing n.
    """
    n_dataset = len(scores.dataset_speakers)
    if not 2 <= n <= n_dataset:
        raise ValueError(f"n must be in [2, {n_dataset}], got {n}")
    dataset_index = scores.dataset_index
    enroll_index = {s: i for i, s in enumerate(scores.enroll_speakers)}
    evaluated = [s for s in scores.enroll_speakers if s in dataset_index]
    rows = np.array([enroll_index[s] for s in evaluated], dtype=np.intp)
    own = np.array([dataset_index[s] for s in evaluated], dtype=np.intp)
    sizes = np.array([b - a for a, b in scores.calibration_slices], dtype=np.intp)
    width = int(sizes.max())
    cal = _calibration_cube(scores, sizes, width)
    n_own = sizes[own]
    uniform = bool(np.all(n_own == n_own[0]))

    # Large N: scan each speaker's highest calibration scores (sorted once) for the first M + 1
    # that belong to drawn speakers, instead of gathering all N M of them; the same values.
    size = _window_size(int(n_own.max()), n_dataset, n)
    window = None
    if 4 * size <= n * width:
        window = (cache or {}).get("window")
        if window is None or window.size < size:
            window = _TopCalibration(cal[rows].reshape(len(rows), n_dataset * width), size, width)
            if cache is not None:  # the same fold's larger N reuse it (a longer scan is exact)
                cache["window"] = window

    # Every (speaker, draw) pair, speaker-major (the package's loop order).
    pair_speaker = np.repeat(np.arange(len(evaluated)), draws)
    pair_draw = np.tile(np.arange(draws), len(evaluated))
    batch = max(1, _BATCH_ELEMENTS // (n * width))
    batched_rng = np.random.default_rng((seed, n, fold))
    out = np.empty(pair_speaker.size, dtype=bool)
    for start in range(0, pair_speaker.size, batch):
        sel = slice(start, min(start + batch, pair_speaker.size))
        who, which = pair_speaker[sel], pair_draw[sel]
        if sampler == "reference":
            others = _reference_others(rows[who], which, n, n_dataset, seed=seed, fold=fold)
        else:
            others = _batched_others(batched_rng, len(who), n, n_dataset)
        own_col = own[who][:, None]
        others = np.where(others >= own_col, others + 1, others)
        chosen = np.concatenate([own_col, others], axis=1)  # (b, n)
        r = rows[who][:, None]
        k = n_own[who]
        upper, lower = _calibration_bounds(cal, window, who, r, chosen, k, uniform=uniform)
        threshold = (lower + upper) / 2.0
        fired = np.count_nonzero(scores.test_scores[r, chosen] > threshold[:, None], axis=1)
        out[sel] = fired == 1
    return out.reshape(len(evaluated), draws)


def _calibration_cube(
    scores: ConversationScores, sizes: NDArray[np.intp], width: int
) -> NDArray[np.float64]:
    """Calibration scores as (enroll, dataset speaker, conversation), padded with -inf: padding
    never reaches the top M + 1 because every drawn set holds more than M real scores."""
    n_dataset = len(scores.dataset_speakers)
    starts = np.array([a for a, _ in scores.calibration_slices], dtype=np.intp)
    if np.all(sizes == width) and np.array_equal(starts, np.arange(n_dataset) * width):
        # Contiguous equal blocks in speaker order (score_conversations' layout): a view.
        return scores.calibration_scores.reshape(len(scores.enroll_speakers), n_dataset, width)
    cal = np.full((len(scores.enroll_speakers), n_dataset, width), -np.inf)
    for c, (a, b) in enumerate(scores.calibration_slices):
        cal[:, c, : b - a] = scores.calibration_scores[:, a:b]
    return cal


def _reference_others(
    rows: NDArray[np.intp], draws: NDArray[np.intp], n: int, n_dataset: int, *, seed: int, fold: int
) -> NDArray[np.intp]:
    """The n - 1 other speakers (indices into the n_dataset - 1 others) of each (row, draw), each
    from its own stream ``default_rng((seed, n, fold, row, draw))`` as the package draws them."""
    return np.stack(
        [
            np.random.default_rng((seed, n, fold, int(row), int(d))).choice(
                n_dataset - 1, size=n - 1, replace=False
            )
            for row, d in zip(rows, draws, strict=True)
        ]
    ).reshape(len(rows), n - 1)


def _batched_others(
    rng: np.random.Generator, count: int, n: int, n_dataset: int
) -> NDArray[np.intp]:
    """The n - 1 other speakers of ``count`` sets at once, from one stream: the n - 1 smallest
    of uniform keys per row, a uniform draw without replacement."""
    keys = rng.random((count, n_dataset - 1))
    return (
        np.argpartition(keys, n - 2, axis=1)[:, : n - 1]
        if n - 1 < n_dataset - 1
        else np.broadcast_to(np.arange(n_dataset - 1), keys.shape)
    )


def _calibration_bounds(
    cal: NDArray[np.float64],
    window: _TopCalibration | None,
    who: NDArray[np.intp],
    r: NDArray[np.intp],
    chosen: NDArray[np.intp],
    k: NDArray[np.intp],
    *,
    uniform: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The k-th and (k + 1)-th highest calibration scores of each drawn set (``upper``,
    ``lower``): from the sorted window where it holds them, else gathered from ``cal``."""
    n_dataset, width = cal.shape[1], cal.shape[2]
    n = chosen.shape[1]
    upper = np.full(len(who), np.nan)
    lower = np.full(len(who), np.nan)
    if window is not None:
        found = window.bounds(who, chosen, k, n_dataset, upper, lower)
    else:
        found = np.zeros(len(who), dtype=bool)
    rest = np.flatnonzero(~found)
    if rest.size:  # gather the drawn speakers' calibration scores, take the top M + 1
        calib = cal[r[rest], chosen[rest]].reshape(rest.size, n * width)
        if uniform:
            top = -np.partition(-calib, (k[0] - 1, k[0]), axis=1)
            upper[rest], lower[rest] = top[:, k[0] - 1], top[:, k[0]]
        else:
            desc = -np.sort(-calib, axis=1)
            upper[rest] = desc[np.arange(rest.size), k[rest] - 1]
            lower[rest] = desc[np.arange(rest.size), k[rest]]
    return upper, lower


def singling_out_curve(
    enroll: Mapping[str, NDArray[np.float64]],
    trial_embeddings: NDArray[np.floating[Any]],
    trial_ids: Sequence[str],
    trial_speakers: Sequence[str],
    conversation_length: int,
    speaker_counts: Sequence[int],
    *,
    draws: int,
    folds: int,
    calibration_conversations: int,
    seed: int,
    sampler: Sampler = "batched",
) -> Curve:
    """Singling out over population sizes; one value per (fold, draw): the success rate over
    enrollment speakers.

    Each fold splits every trial speaker's utterances anew into one test and up to M
    calibration conversations (``legal_eval.embeddings.build_conversations``, folds varied);
    the predicates are the enrollment embeddings.
    """
    x = np.asarray(trial_embeddings, dtype=np.float64)
    spk2utt: dict[str, list[str]] = {}
    for utt, s in zip(trial_ids, trial_speakers, strict=True):
        if str(s) in enroll:
            spk2utt.setdefault(str(s), []).append(str(utt))
    utt2emb = {str(u): x[i] for i, u in enumerate(trial_ids)}
    values: dict[int, list[NDArray[np.float64]]] = {int(n): [] for n in speaker_counts}
    for fold in range(folds):
        conversations = build_conversations(
            spk2utt,
            utt2emb,
            conversation_length=conversation_length,
            max_calibration=calibration_conversations,
            seed=seed,
            fold=fold,
        )
        if len(conversations) < 2:
            raise ValueError(
                f"fewer than 2 trial speakers have the {2 * conversation_length} utterances a "
                f"conversation length of {conversation_length} needs"
            )
        scored = score_conversations(enroll, conversations)
        cache: dict[str, Any] = {}
        for n in sorted(values):
            outcomes = singling_out_outcomes(
                scored, n, draws=draws, seed=seed, fold=fold, sampler=sampler, cache=cache
            )
            values[n].append(outcomes.mean(axis=0))  # per draw: success rate over speakers
    curve = Curve("singling_out", conversation_length)
    for n, per_fold in values.items():
        curve.points.append(CurvePoint(n, np.concatenate(per_fold), singling_out_chance(n)))
    return curve


def population_of(trial_speakers: Sequence[str], enroll_speakers: Sequence[str]) -> LegalPopulation:
    """The speakers with enrollment and trial utterances and their fewest trial utterances."""
    enrolled = {str(s) for s in enroll_speakers}
    counts: dict[str, int] = {}
    for s in trial_speakers:
        if str(s) in enrolled:
            counts[str(s)] = counts.get(str(s), 0) + 1
    return LegalPopulation(len(counts), min(counts.values()) if counts else 0)


def legal_report(
    enroll_embeddings: NDArray[np.floating[Any]],
    enroll_speakers: Sequence[str],
    trial_embeddings: NDArray[np.floating[Any]],
    trial_ids: Sequence[str],
    trial_speakers: Sequence[str],
    *,
    speaker_counts: Sequence[int] | None,
    conversation_lengths: Sequence[int] | None,
    grid_points: int,
    headline_speakers: int | None,
    headline_length: int,
    draws: int,
    folds: int,
    calibration_conversations: int,
    seed: int,
    sampler: Sampler = "batched",
) -> dict[str, Any]:
    """Both curves at every available L and the headline point, as a results.json block.

    Unset (None) grids adapt to the population: N log-spaced from 2 to all speakers, L the
    paper's lengths the trial utterances allow (linkability L, singling out 2 L per speaker).
    Explicit values the population cannot serve raise ``ValueError`` (:func:`legal_problems`).
    The headline point (N = ``headline_speakers`` or all speakers, L = ``headline_length``) is
    added to the N grid when missing. Values in percent.
    """
    population = population_of(trial_speakers, enroll_speakers)
    problems = legal_problems(
        speaker_counts, conversation_lengths, headline_speakers, headline_length, population
    )
    if problems:
        raise ValueError("; ".join(problems))
    head_n = headline_speakers or population.n_speakers
    grid = sorted(
        {*(speaker_counts or log_spaced_counts(population.n_speakers, grid_points)), head_n}
    )
    wanted = list(conversation_lengths or PAPER_CONVERSATION_LENGTHS)
    enroll = enrollment_embeddings(enroll_embeddings, enroll_speakers)
    curves: list[Curve] = []
    for L in population.linkability_lengths(wanted):
        curves.append(
            linkability_curve(
                enroll, trial_embeddings, trial_speakers, L, grid, draws=draws, seed=seed
            )
        )
    so_grid = [n for n in grid if n >= 2]
    for L in population.singling_out_lengths(wanted):
        curves.append(
            singling_out_curve(
                enroll,
                trial_embeddings,
                trial_ids,
                trial_speakers,
                L,
                so_grid,
                draws=draws,
                folds=folds,
                calibration_conversations=calibration_conversations,
                seed=seed,
                sampler=sampler,
            )
        )
    headline: dict[str, Any] = {"n": head_n, "conversation_length": headline_length}
    for curve in curves:
        point = curve.at(head_n)
        if curve.conversation_length != headline_length or point is None:
            continue
        j = point.to_json()
        headline[f"{curve.metric}_percent"] = j["mean_percent"]
        headline[f"{curve.metric}_chance_percent"] = j["chance_percent"]
    return {
        "method": "Vauquier et al., Interspeech 2025; cosine on conversation embeddings",
        "n_speakers": population.n_speakers,
        "min_trials_per_speaker": population.min_trials,
        "draws": draws,
        "folds": folds,
        "calibration_conversations": calibration_conversations,
        "sampler": sampler,
        "headline": headline,
        "curves": [c.to_json() for c in curves],
    }


@dataclass(frozen=True)
class PublishedCurve:
    """A curve the paper published (Common Voice 11.0, original speech): percent per N."""

    metric: str
    conversation_length: int
    n: tuple[int, ...]
    mean_percent: tuple[float, ...]
    label: str


def paper_original_curves() -> list[PublishedCurve]:
    """The paper's original-speech (non-anonymized) curves of both metrics, shipped with the
    reference package (``legal_eval/data/paper_results``): the reference for how linkable
    unprotected voices are on Common Voice (22,024 enrolled speakers, x-vectors)."""
    from legal_eval.paper import load_paper_results

    # The package names its curves linkability and singling_out (and eer, not used); Unmask's
    # names start with them (linkability alone is the catalogue's D_sys).
    ours = ("linkability_top1", "singling_out")
    out: list[PublishedCurve] = []
    for source, by_length in load_paper_results().items():
        metric = next((m for m in ours if m.startswith(source)), None)
        if metric is None:
            continue
        for length, attackers in sorted(by_length.items()):
            curve = attackers.get("original")
            if curve is None:
                continue
            ns = tuple(curve.speaker_counts)
            out.append(
                PublishedCurve(
                    metric,
                    int(length),
                    ns,
                    tuple(100.0 * curve.means[n] for n in ns),
                    f"Common Voice, original speech (paper), L={length}",
                )
            )
    return out
