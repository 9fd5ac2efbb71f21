"""Legal metrics (services/metrics/legal.py) against the authors' reference package and analytic
cases: agreement to 1e-9 on seeded random embedding sets, chance levels, perfect separation and
the errors for populations too small for the request."""

from __future__ import annotations

import numpy as np
import pytest
from legal_eval.embeddings import build_conversations
from legal_eval.metrics.singling_out import score_conversations, singling_out
from legal_eval.scoring import cosine_score_matrix
from legal_eval.sweeps import linkability_sweep, singling_out_sweep

from services.metrics import legal


def _embeddings(
    n_speakers: int, per_speaker: int, dim: int, spread: float, seed: int
) -> tuple[np.ndarray, list[str], list[str]]:
    """Utterance embeddings around one random centre per speaker (``spread``: within-speaker
    noise; large = little speaker information), their speaker ids and utterance ids."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_speakers, dim))
    x = centres[:, None, :] + spread * rng.normal(size=(n_speakers, per_speaker, dim))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    speakers = [f"spk{i:03d}" for i in range(n_speakers) for _ in range(per_speaker)]
    ids = [f"spk{i:03d}-{j:02d}" for i in range(n_speakers) for j in range(per_speaker)]
    return x.reshape(-1, dim), speakers, ids


@pytest.mark.parametrize(
    ("n_speakers", "per_speaker", "length", "counts", "folds", "seed"),
    [
        (12, 6, 1, [2, 5, 12], 1, 0),
        (20, 7, 3, [2, 9, 20], 3, 7),  # 7 utterances: 1 spare, C = comb(4, 3) = 4 calibration
        (30, 12, 2, [3, 17, 30], 2, 3),
        (25, 21, 10, [2, 25], 2, 11),  # comb(11, 10) = 11 -> 9 calibration conversations
    ],
)
def test_singling_out_agrees_with_reference_package(
    n_speakers: int, per_speaker: int, length: int, counts: list[int], folds: int, seed: int
) -> None:
    x, speakers, ids = _embeddings(n_speakers, per_speaker, 16, 1.5, seed)
    enr_x, enr_s, _ = _embeddings(n_speakers, 4, 16, 1.5, seed)  # other draws: same centres
    enroll = legal.enrollment_embeddings(enr_x, enr_s)
    curve = legal.singling_out_curve(
        enroll, x, ids, speakers, length, counts, draws=4, folds=folds,
        calibration_conversations=9, seed=seed, sampler="reference",
    )  # fmt: skip
    spk2utt: dict[str, list[str]] = {}
    for u, s in zip(ids, speakers, strict=True):
        spk2utt.setdefault(s, []).append(u)
    u2e = {u: x[i] for i, u in enumerate(ids)}
    ref = singling_out_sweep(
        enroll, spk2utt, u2e, length, speaker_counts=counts, n_runs=4, n_folds=folds, seed=seed
    )
    for n in counts:
        point = curve.at(n)
        assert point is not None
        assert point.draws.size == 4 * folds
        assert abs(point.draws.mean() - np.mean(ref.values[n])) < 1e-9
    # Outcome by outcome, not only on average: the same speakers isolate in the same draws.
    conversations = build_conversations(spk2utt, u2e, length, seed=seed, fold=0)
    scored = score_conversations(enroll, conversations)
    mine = legal.singling_out_outcomes(
        scored, counts[1], draws=4, seed=seed, fold=0, sampler="reference"
    )
    theirs = singling_out(scored, counts[1], n_runs=4, seed=seed, fold=0)
    assert mine.astype(int).tolist() == [theirs[s] for s in scored.enroll_speakers]


def test_singling_out_unequal_calibration_counts_agree() -> None:
    """Speakers with different utterance counts get different numbers of calibration
    conversations (the padded, per-row threshold path)."""
    x, speakers, ids = _embeddings(15, 8, 12, 1.2, 5)
    keep = [i for i, u in enumerate(ids) if int(u[-2:]) < 4 + int(u[3:6]) % 5]
    x, speakers, ids = x[keep], [speakers[i] for i in keep], [ids[i] for i in keep]
    enroll = legal.enrollment_embeddings(*_embeddings(15, 3, 12, 1.2, 5)[:2])
    spk2utt: dict[str, list[str]] = {}
    for u, s in zip(ids, speakers, strict=True):
        spk2utt.setdefault(s, []).append(u)
    u2e = {u: x[i] for i, u in enumerate(ids)}
    scored = score_conversations(enroll, build_conversations(spk2utt, u2e, 2, seed=1, fold=0))
    assert len({b - a for a, b in scored.calibration_slices}) > 1
    for n in (2, 6, 15):
        mine = legal.singling_out_outcomes(scored, n, draws=3, seed=1, fold=0, sampler="reference")
        theirs = singling_out(scored, n, n_runs=3, seed=1, fold=0)
        assert mine.astype(int).tolist() == [theirs[s] for s in scored.enroll_speakers]


@pytest.mark.parametrize(("length", "seed"), [(1, 0), (3, 4), (10, 2)])
def test_linkability_agrees_with_reference_package(length: int, seed: int) -> None:
    x, speakers, _ = _embeddings(40, 10, 16, 2.0, seed)
    enroll = legal.enrollment_embeddings(*_embeddings(40, 5, 16, 2.0, seed)[:2])
    counts = [2, 7, 19, 40]
    curve = legal.linkability_curve(enroll, x, speakers, length, counts, draws=5, seed=seed)
    # The same conversations built by hand: consecutive runs of L utterances per speaker.
    tests, order = {}, []
    for s in enroll:
        rows = [i for i, sp in enumerate(speakers) if sp == s]
        for k in range(len(rows) // length):
            chunk = x[rows[k * length : (k + 1) * length]]
            mean = chunk.mean(axis=0)
            tests[f"{s}#{k}"] = chunk[0] if length == 1 else mean / np.linalg.norm(mean)
            order.append(f"{s}#{k}")
    matrix = cosine_score_matrix(enroll, tests, test_order=order)
    ref = linkability_sweep(
        matrix, counts, n_runs=5, seed=seed, test_speakers=[o.split("#")[0] for o in order]
    )
    for n in counts:
        point = curve.at(n)
        assert point is not None
        assert np.max(np.abs(point.draws - np.asarray(ref.values[n]))) < 1e-9


def test_no_speaker_information_gives_chance() -> None:
    """Embeddings independent of the speaker: linkability 1/N, singling out (1 - 1/N)^(N-1)."""
    rng = np.random.default_rng(3)
    n_spk, per = 60, 12
    speakers = [f"s{i:02d}" for i in range(n_spk) for _ in range(per)]
    ids = [f"u{k}" for k in range(n_spk * per)]
    x = rng.normal(size=(n_spk * per, 24))
    enroll = legal.enrollment_embeddings(rng.normal(size=(n_spk * 4, 24)), speakers[::3])
    link = legal.linkability_curve(enroll, x, speakers, 1, [5, 60], draws=20, seed=0)
    assert link.at(5).draws.mean() == pytest.approx(0.2, abs=0.03)  # type: ignore[union-attr]
    assert link.at(60).draws.mean() == pytest.approx(1 / 60, abs=0.01)  # type: ignore[union-attr]
    sing = legal.singling_out_curve(
        enroll, x, ids, speakers, 1, [2, 10, 60], draws=20, folds=3,
        calibration_conversations=9, seed=0,
    )  # fmt: skip
    for n in (2, 10, 60):
        point = sing.at(n)
        assert point is not None
        assert point.chance == pytest.approx((1 - 1 / n) ** (n - 1))
        assert point.draws.mean() == pytest.approx(point.chance, abs=0.04)


def test_separated_speakers_are_linked_and_singled_out() -> None:
    x, speakers, ids = _embeddings(30, 8, 32, 0.05, 1)
    enroll = legal.enrollment_embeddings(*_embeddings(30, 3, 32, 0.05, 1)[:2])
    link = legal.linkability_curve(enroll, x, speakers, 1, [30], draws=3, seed=0)
    sing = legal.singling_out_curve(
        enroll, x, ids, speakers, 1, [30], draws=3, folds=2, calibration_conversations=9, seed=0
    )
    assert link.points[0].draws.min() == 1.0
    assert sing.points[0].draws.min() == 1.0


def test_batched_sampler_matches_reference_in_distribution() -> None:
    """The default sampler draws the same set distribution: means within sampling error."""
    x, speakers, ids = _embeddings(40, 6, 16, 1.8, 9)
    enroll = legal.enrollment_embeddings(*_embeddings(40, 4, 16, 1.8, 9)[:2])
    kw = {"draws": 25, "folds": 2, "calibration_conversations": 5, "seed": 2}
    ref = legal.singling_out_curve(enroll, x, ids, speakers, 1, [8], sampler="reference", **kw)
    fast = legal.singling_out_curve(enroll, x, ids, speakers, 1, [8], sampler="batched", **kw)
    assert fast.points[0].draws.mean() == pytest.approx(ref.points[0].draws.mean(), abs=0.03)


def test_report_adapts_defaults_and_stores_headline() -> None:
    x, speakers, ids = _embeddings(16, 8, 16, 1.0, 0)
    e_x, e_s, _ = _embeddings(16, 8, 16, 1.0, 0)
    report = legal.legal_report(
        e_x, e_s, x, ids, speakers, speaker_counts=None, conversation_lengths=None,
        grid_points=8, headline_speakers=None, headline_length=1, draws=3, folds=2,
        calibration_conversations=9, seed=0,
    )  # fmt: skip
    by = {(c["metric"], c["conversation_length"]) for c in report["curves"]}
    # 8 trial utterances: L = 1, 3 for both (10 and 30 unavailable).
    assert by == {(m, L) for m in ("linkability_top1", "singling_out") for L in (1, 3)}
    grid = [p["n"] for p in report["curves"][0]["points"]]
    assert grid[0] == 2 and grid[-1] == 16 and len(grid) >= 6
    head = report["headline"]
    assert head["n"] == 16 and head["linkability_top1_chance_percent"] == pytest.approx(6.25)
    assert head["singling_out_chance_percent"] == pytest.approx(100 * (15 / 16) ** 15)
    assert 0 <= head["linkability_top1_percent"] <= 100
    low, high = report["curves"][0]["points"][-1]["interval_percent"]
    assert low <= report["curves"][0]["points"][-1]["mean_percent"] <= high


def test_population_too_small_is_an_error_naming_the_counts() -> None:
    pop = legal.LegalPopulation(n_speakers=16, min_trials=8)
    problems = legal.legal_problems([4, 20], [1, 10], 32, 1, pop)
    assert any("speaker_counts: [20]" in p and "16 speakers" in p for p in problems)
    assert any("conversation_lengths: [10]" in p and "trial utterances" in p for p in problems)
    assert any("headline_speakers: 32" in p for p in problems)
    assert legal.legal_problems(None, None, None, 5, pop)[0].startswith(
        "metrics.legal.headline_length: 5 needs 10"
    )
    assert legal.legal_problems([2, 16], [1, 4], 16, 4, pop) == []
    x, speakers, ids = _embeddings(6, 4, 8, 1.0, 0)
    with pytest.raises(ValueError, match="speaker_counts"):
        legal.legal_report(
            x, speakers, x, ids, speakers, speaker_counts=[10], conversation_lengths=None,
            grid_points=4, headline_speakers=None, headline_length=1, draws=2, folds=1,
            calibration_conversations=3, seed=0,
        )  # fmt: skip


def test_log_spaced_counts() -> None:
    assert legal.log_spaced_counts(16, 8) == [2, 3, 4, 5, 7, 9, 12, 16]
    grid = legal.log_spaced_counts(1000, 8)
    assert grid[0] == 2 and grid[-1] == 1000 and np.all(np.diff(np.log(grid)) > 0)
    assert legal.log_spaced_counts(1, 8) == []


def test_large_population_window_path_agrees_with_reference_package() -> None:
    """At large N the thresholds come from each speaker's sorted top calibration scores (not a
    gather of all N M): outcomes still equal the package's, draw by draw."""
    x, speakers, ids = _embeddings(150, 12, 16, 1.6, 8)
    enroll = legal.enrollment_embeddings(*_embeddings(150, 3, 16, 1.6, 8)[:2])
    spk2utt: dict[str, list[str]] = {}
    for u, s in zip(ids, speakers, strict=True):
        spk2utt.setdefault(s, []).append(u)
    u2e = {u: x[i] for i, u in enumerate(ids)}
    scored = score_conversations(enroll, build_conversations(spk2utt, u2e, 1, seed=4, fold=1))
    width = max(b - a for a, b in scored.calibration_slices)
    cache: dict[str, object] = {}  # N = 150 scans the window sorted for N = 60
    for n in (60, 150):
        assert 4 * legal._window_size(width, 150, n) <= n * width  # the window path runs
        mine = legal.singling_out_outcomes(
            scored, n, draws=3, seed=4, fold=1, sampler="reference", cache=cache
        )
        theirs = singling_out(scored, n, n_runs=3, seed=4, fold=1)
        assert mine.astype(int).tolist() == [theirs[s] for s in scored.enroll_speakers]


def test_paper_original_curves_come_from_the_package() -> None:
    curves = {(c.metric, c.conversation_length): c for c in legal.paper_original_curves()}
    assert {("linkability_top1", 1), ("singling_out", 1)} <= set(curves)
    link = curves[("linkability_top1", 1)]
    # The paper: 82 % of original Common Voice speakers linked at N' = 20 from one utterance.
    assert link.n[0] == 20 and link.mean_percent[0] == pytest.approx(82.2, abs=0.1)
    assert "Common Voice" in link.label and all(0 <= v <= 100 for v in link.mean_percent)
