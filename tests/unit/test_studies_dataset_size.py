"""Dataset-size studies (Georgiou et al.; PROTOCOLS.md section 6)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from services.scoring import CosineBackend, PLDABackend, train_plda
from services.scoring.synthetic import make_synthetic_speakers
from services.studies.dataset_size import (
    EmbeddingTable,
    SizePoint,
    SizeStudyConfig,
    _utterance_index,
    draw_trial_enrollment,
    prepare_tables,
    run_point,
    run_size_study,
    tables_from_arrays,
)


def _tables(
    n_speakers: int = 60, per_speaker: int = 24, seeds: int = 2
) -> dict[int, EmbeddingTable]:
    pop = make_synthetic_speakers(n_speakers, 16, np.random.default_rng(0), 1.0, 6.0)
    out = {}
    for ts in range(seeds):
        x, s, g = pop.sample(per_speaker, np.random.default_rng([1, ts]))
        out[ts] = EmbeddingTable(x, s, g)
    return out


# --- sampling ----------------------------------------------------------------------------------


def test_draw_is_utterance_disjoint_and_respects_roles() -> None:
    # Speaker A: 4 utterances with a trial and an enrollment version each, 2 enrollment-only.
    # Speaker B: 3 utterances usable on both sides. Speaker C: 1 utterance (never eligible).
    spk = ["A"] * 10 + ["B"] * 3 + ["C"]
    utt = [f"a{i // 2}" for i in range(8)] + ["a8", "a9", "b0", "b1", "b2", "c0"]
    roles = ["trial", "enrollment"] * 4 + ["enrollment"] * 2 + ["both"] * 4
    table = EmbeddingTable(
        np.random.default_rng(0).standard_normal((14, 3)),
        np.array(spk),
        np.array(["f"] * 14),
        np.array(roles),
        np.array(utt),
    )
    index = _utterance_index(table)
    for seed in range(20):
        rng = np.random.default_rng(seed)
        t_rows, e_rows, eligible = draw_trial_enrollment(index, rng, None, 1, 2)
        assert eligible == 2
        assert set(table.roles[t_rows]) <= {"trial", "both"}
        assert set(table.roles[e_rows]) <= {"enrollment", "both"}
        assert not set(table.utterance_ids[t_rows]) & set(table.utterance_ids[e_rows])
        assert sorted(table.speaker_ids[t_rows].tolist()) == ["A", "B"]
        assert sorted(table.speaker_ids[e_rows].tolist()) == ["A", "A", "B", "B"]
    # "All the rest" enrollment: A keeps its 5 other utterances' enrollment versions, B 2.
    t_rows, e_rows, _ = draw_trial_enrollment(index, np.random.default_rng(1), None, 1, None)
    assert np.unique(table.speaker_ids[e_rows], return_counts=True)[1].tolist() == [5, 2]


def test_draw_speaker_subsets_are_seeded_and_checked() -> None:
    table = _tables(30, 5, 1)[0]
    index = _utterance_index(table)
    a = draw_trial_enrollment(index, np.random.default_rng(3), 10, 1, 4)
    b = draw_trial_enrollment(index, np.random.default_rng(3), 10, 1, 4)
    c = draw_trial_enrollment(index, np.random.default_rng(4), 10, 1, 4)
    assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    assert a[0].tolist() != c[0].tolist()
    assert np.unique(table.speaker_ids[a[0]]).size == 10
    with pytest.raises(ValueError, match="only 30 have"):
        draw_trial_enrollment(index, np.random.default_rng(0), 31, 1, 4)
    with pytest.raises(ValueError, match="at least 2"):
        draw_trial_enrollment(index, np.random.default_rng(0), None, 3, 3)  # 5 < 3 + 3


def test_table_validation_names_the_problem() -> None:
    x = np.zeros((2, 3))
    with pytest.raises(ValueError, match="roles must be one of"):
        EmbeddingTable(x, np.array(["a", "a"]), np.array(["f", "f"]), np.array(["x", "both"]))
    with pytest.raises(ValueError, match="more than one trial-capable"):
        EmbeddingTable(
            x,
            np.array(["a", "a"]),
            np.array(["f", "f"]),
            np.array(["both", "trial"]),
            np.array(["u", "u"]),
        )


def test_tables_from_arrays_split_by_target_seed() -> None:
    x = np.arange(12.0).reshape(6, 2)
    tables = tables_from_arrays(x, list("aabbcc"), ["f"] * 6, [5, 7, 5, 7, 5, 7])
    assert sorted(tables) == [5, 7]
    np.testing.assert_array_equal(tables[5].embeddings, x[::2])


# --- scoring -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend_name", ["cosine", "plda"])
def test_precomputed_operands_give_the_score_trials_eer(backend_name: str) -> None:
    tables = _tables(40, 12, 1)
    if backend_name == "plda":
        pop = make_synthetic_speakers(80, 16, np.random.default_rng(9), 1.0, 6.0)
        x, s, _ = pop.sample(6, np.random.default_rng(9))
        backend = PLDABackend(train_plda(x, s, n_iter=5))
    else:
        backend = CosineBackend()
    prepared, ready, _ = prepare_tables(tables, backend)
    cfg = SizeStudyConfig(samples=3)
    point = SizePoint("trials", 4, None, 4, 6)
    fast = run_point(point, prepared, ready, cfg, use_shortcut=True)
    general = run_point(point, prepared, ready, cfg, use_shortcut=False)
    np.testing.assert_allclose(fast["eer_percent"], general["eer_percent"], atol=1e-9)


# --- Georgiou et al.'s relations ---------------------------------------------------------------


@pytest.fixture(scope="module")
def study() -> dict:
    cfg = SizeStudyConfig(
        speaker_counts=[5, 40, None],
        enrollment_counts=[1, 10],
        trial_counts=[1, 4, 10],
        trial_sweep_enrollment=10,
        samples=5,
    )
    return run_size_study(_tables(120, 24, 5), CosineBackend(), cfg)


def test_eer_std_shrinks_as_the_number_of_speakers_grows(study: dict) -> None:
    rows = {r["size"]: r for r in study["sweeps"]["speakers"]}
    assert rows[None]["n_speakers"] == 120
    assert rows[5]["repetitions"] == 25
    assert rows[5]["eer_std_percent"] > 2 * rows[None]["eer_std_percent"]
    assert rows[5]["eer_std_percent"] > rows[40]["eer_std_percent"]


def test_more_trial_and_enrollment_utterances_lower_the_eer(study: dict) -> None:
    trials = [r["eer_mean_percent"] for r in study["sweeps"]["trials"]]
    assert trials[0] > trials[1] > trials[2]
    assert trials[2] < 0.6 * trials[0]
    enroll = [r["eer_mean_percent"] for r in study["sweeps"]["enrollment"]]
    assert enroll[0] > enroll[1]
    # The sizes asked for are the sizes used.
    assert [r["mean_trial_utterances"] for r in study["sweeps"]["trials"]] == [120, 480, 1200]


def test_summary_fields_are_consistent(study: dict) -> None:
    json.dumps(study)
    for rows in study["sweeps"].values():
        for r in rows:
            eers = np.array(r["eer_percent"])
            assert r["eer_mean_percent"] == pytest.approx(eers.mean())
            assert r["eer_std_percent"] == pytest.approx(eers.std(ddof=1))
            lo, hi = r["eer_mean_ci95_percent"]
            assert lo <= r["eer_mean_percent"] <= hi
            lo, hi = r["eer_interval95_percent"]
            assert eers.min() <= lo <= hi <= eers.max()
            assert r["seconds"] > 0


def test_study_is_deterministic_and_skips_impossible_points(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = SizeStudyConfig(
        sweeps=["speakers", "trials"],
        speaker_counts=[10, 500],
        trial_counts=[2],
        samples=2,
        trial_sweep_enrollment=4,
    )
    tables = _tables(30, 8, 2)
    a = run_size_study(tables, CosineBackend(), cfg, out_dir=str(tmp_path))
    b = run_size_study(tables, CosineBackend(), cfg)
    assert [r["eer_percent"] for r in a["sweeps"]["speakers"]] == [
        r["eer_percent"] for r in b["sweeps"]["speakers"]
    ]
    other = run_size_study(tables, CosineBackend(), cfg.model_copy(update={"seed": 1}))
    assert (
        other["sweeps"]["speakers"][0]["eer_percent"] != a["sweeps"]["speakers"][0]["eer_percent"]
    )
    assert [s["size"] for s in a["skipped"]] == [500]
    assert a["plots"]["speakers"] == ["size_study_speakers.png", "size_study_speakers.svg"]
    assert (tmp_path / "size_study_trials.svg").is_file()


@pytest.mark.slow
def test_relations_hold_on_the_synthetic_corpus() -> None:
    """Speech of the synthetic corpus, MFCC mean+std as a stand-in recognizer (no training)."""
    import librosa

    from services.corpus.synthetic import sample_speakers, synthesize_utterance

    speakers = sample_speakers(24, seed=5)
    rows, ids, genders = [], [], []
    for i, s in enumerate(speakers):
        for u in range(10):
            w = synthesize_utterance(s, np.random.default_rng([7, i, u]), duration_s=1.0)
            m = librosa.feature.mfcc(y=w, sr=16000, n_mfcc=20)
            rows.append(np.concatenate([m.mean(axis=1), m.std(axis=1)]))
            ids.append(s.speaker_id)
            genders.append(s.gender)
    emb = np.array(rows)
    emb = (emb - emb.mean(axis=0)) / emb.std(axis=0)  # comparable feature scales for the cosine
    table = EmbeddingTable(emb, np.array(ids), np.array(genders))
    cfg = SizeStudyConfig(
        speaker_counts=[6, None],
        enrollment_counts=[1],
        trial_counts=[1, 5],
        trial_sweep_enrollment=5,
        samples=25,
    )
    result = run_size_study({0: table}, CosineBackend(), cfg)
    spk = {r["size"]: r for r in result["sweeps"]["speakers"]}
    assert spk[6]["eer_std_percent"] > spk[None]["eer_std_percent"]
    trials = result["sweeps"]["trials"]
    assert trials[1]["eer_mean_percent"] < trials[0]["eer_mean_percent"]
