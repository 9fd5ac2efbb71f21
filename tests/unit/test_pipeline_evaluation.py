"""The evaluation pipeline end to end on a tiny synthetic protocol (in-process, no servers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.metrics import bootstrap_eer, catalogue
from services.pipeline.config import EvaluationConfig, parse_config
from services.pipeline.evaluation import EvaluationRun, run_evaluation
from services.pipeline.phases import PHASES
from services.scoring import eer_report
from services.scoring.trial_scores import load_scored_trials, speaker_trials, trials_path
from support.configs import TINY_ANALYSES, tiny_config

pytestmark = pytest.mark.slow

TINY: dict[str, Any] = tiny_config()


def _metric_rows(result: dict[str, Any]) -> list[tuple[str, str, int, float]]:
    return [(r["scenario"], r["backend"], r["seed"], r["eer_percent"]) for r in result["rows"]]


@pytest.fixture(scope="module")
def tiny_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[EvaluationConfig, Path, dict[str, Any]]:
    cfg = parse_config(TINY)
    out = tmp_path_factory.mktemp("eval")
    return cfg, out, run_evaluation(cfg, out)


def test_result_document_is_complete(
    tiny_run: tuple[EvaluationConfig, Path, dict[str, Any]],
) -> None:
    cfg, out, result = tiny_run
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk["rows"] == json.loads(json.dumps(result["rows"]))
    assert {(r["scenario"], r["backend"]) for r in result["rows"]} == {
        (s, b) for s in cfg.scenarios for b in cfg.backends
    }
    for row in result["rows"]:
        assert 0.0 <= row["eer_percent"] <= 100.0
        lo, hi = row["eer_ci95_percent"]
        assert lo <= hi
        assert row["n_target"] == 4 * 3  # 4 speakers x 3 trials, one enrollment model each
        assert row["n_nontarget"] == 4 * 3 * 3
        assert row["min_cllr_bits"] >= 0
        assert row["zebra"]["category"] in list("0ABCDEF")
        srd = row["srd"]["empirical"]
        assert srd["identification_rate_percent"] >= 0
        assert len(srd["pmf"]) == 4
    # Cllr only where the scores are log-likelihood ratios (PLDA).
    assert all(("cllr_bits" in r) == (r["backend"] == "plda") for r in result["rows"])
    prov = result["provenance"]
    assert prov["config_hash"] == cfg.content_hash()
    assert prov["packages"]["torch"].startswith("2.11")
    for history in result["training"].values():
        assert len(history["history"]) == 2
        # The scored epoch and its w_T (observe mode: 0) are named next to the history.
        scored = history["history"][history["best_epoch"] - 1]
        assert history["best_w_target"] == scored["w_target"] == 0.0
    anonymized = result["training"]["anonymized-seed0"]["history"]
    assert all(h["ver_target"] is not None for h in anonymized)  # observe mode measures VER_T
    probe = result["training"]["anonymized-seed0"]["probe"]  # and a fresh probe, after training
    assert probe["target"]["n_classes"] == 2 and probe["source"]["n_classes"] == 6
    assert 0.0 <= probe["target"]["error_rate_percent"] <= 100.0
    assert probe["source"]["n_fit"] + probe["source"]["n_test"] == 6 * 8 - 6  # 10 % validation
    assert "probe" not in result["training"]["original-seed0"]
    # The challenger (pretrained GE2E) was scored on the headline's trials, not as a row.
    challenger = result["challenger"]
    headline = max(
        cfg.scenarios, key=["original", "ignorant", "lazy-informed", "semi-informed"].index
    )
    assert challenger["attacker"] == "ge2e" and challenger["scenario"] == headline
    assert 0.0 <= challenger["eer_percent"] <= 100.0 and challenger["n_speakers"] == 4
    assert set(challenger["scenarios"]) == set(cfg.scenarios) - {"original"}
    assert result["trust"]["challenger"]["stronger"] == challenger["stronger"]
    assert not any(r.get("attacker") for r in result["rows"])
    svg = (out / "plots" / "training-anonymized-seed0.svg").read_text()
    assert "probe target error" in svg and "VER_T at chance (1 - 1/2)" in svg
    for files in result["plots"].values():
        for f in files:
            assert (out / f).stat().st_size > 1000
    summary = {(s["scenario"], s["backend"]): s for s in result["summary"]}
    assert summary[("original", "cosine")]["eer_percent"]["std"] == 0.0  # one seed
    # Legal metrics, on by default: 4 speakers x 3 trials -> N in {2, 3, 4}; linkability at
    # L = 1 and 3, singling out at L = 1 (2 L trials needed); the headline at N = 4, L = 1.
    for scenario in cfg.scenarios:
        blocks = [r["legal"] for r in result["rows"] if r["scenario"] == scenario]
        assert all(b == blocks[0] for b in blocks)  # one stage for every back-end
        legal = blocks[0]
        assert {(c["metric"], c["conversation_length"]) for c in legal["curves"]} == {
            ("linkability_top1", 1),
            ("linkability_top1", 3),
            ("singling_out", 1),
        }
        assert [p["n"] for p in legal["curves"][0]["points"]] == [2, 3, 4]
        head = legal["headline"]
        assert (head["n"], head["conversation_length"]) == (4, 1)
        for key, chance in (
            (catalogue.LINKABILITY_TOP1, 25.0),
            (catalogue.SINGLING_OUT, 100 * 0.75**3),
        ):
            value = key.value_in(next(r for r in result["rows"] if r["scenario"] == scenario))
            assert value is not None and 0.0 <= value <= 100.0
            assert head[key.chance_key] == pytest.approx(chance)  # type: ignore[index]
            entry = summary[(scenario, "cosine")][key.key]
            assert entry["mean"] == pytest.approx(value)
        assert (out / "plots" / f"legal-{scenario}.png").stat().st_size > 1000


def test_each_row_keeps_its_trials_and_they_reproduce_its_eer(
    tiny_run: tuple[EvaluationConfig, Path, dict[str, Any]],
) -> None:
    """The trials a row keeps (what the compare page pairs two jobs on) give back the row's
    EER and bootstrap interval; one scenario's trial grid is the same over back-ends and
    differs between scenarios only if their trial utterances do."""
    cfg, out, result = tiny_run
    assert len(result["trials"]) == len(result["rows"])
    grids = {}
    for row in result["rows"]:
        relative = trials_path("baseline", row["scenario"], row["backend"], row["seed"])
        assert relative in result["trials"]
        scored, grid = load_scored_trials(out / relative)
        grids[(row["scenario"], row["backend"])] = grid
        assert eer_report(scored).eer_percent == pytest.approx(row["eer_percent"])
        pooled = speaker_trials(scored)
        assert int(pooled.is_target.sum()) == row["n_target"]
        ci = bootstrap_eer(pooled.scores, pooled.is_target, pooled.speaker_ids,
                           n_resamples=cfg.metrics.bootstrap_resamples,
                           seed=row["seed"])  # fmt: skip
        assert [ci.low, ci.high] == pytest.approx(row["eer_ci95_percent"])
    for scenario in {s for s, _ in grids}:
        assert len({g for (s, _), g in grids.items() if s == scenario}) == 1


def test_rerun_reuses_every_stage(tiny_run: tuple[EvaluationConfig, Path, dict[str, Any]]) -> None:
    cfg, out, result = tiny_run
    again = EvaluationRun(cfg, out).run()
    assert again is not None
    assert all(s["reused"] for s in again["stages"])
    assert _metric_rows(again) == _metric_rows(result)


def test_same_seed_same_results_in_a_fresh_folder(
    tiny_run: tuple[EvaluationConfig, Path, dict[str, Any]], tmp_path: Path
) -> None:
    cfg, _, result = tiny_run
    fresh = run_evaluation(cfg, tmp_path / "fresh")
    assert _metric_rows(fresh) == _metric_rows(result)


def test_phases_run_one_at_a_time_compute_each_stage_once(
    tiny_run: tuple[EvaluationConfig, Path, dict[str, Any]], tmp_path: Path
) -> None:
    cfg, out, result = tiny_run
    # A copy of the finished corpus/anonymize/train stages: the platform runs phases separately.
    import shutil

    work = tmp_path / "phased"
    shutil.copytree(out / "stages", work / "stages")
    for phase in PHASES[:-1]:
        assert EvaluationRun(cfg, work).run(stop_after=phase) is None
    final = EvaluationRun(cfg, work).run(stop_after="report")
    assert final is not None
    assert _metric_rows(final) == _metric_rows(result)


def test_analyses_run_as_stages_and_land_in_the_result(
    tiny_run: tuple[EvaluationConfig, Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, out, result = tiny_run
    with_analyses = parse_config(tiny_config(analyses=TINY_ANALYSES))
    # The shared stage store: corpus, anonymization, training and embeddings are reused.
    res = run_evaluation(with_analyses, tmp_path / "a", stages_dir=out / "stages")
    reused = {s["stage"] for s in res["stages"] if s["reused"]}
    assert {"corpus", "train", "score"} <= reused
    assert _metric_rows(res) == _metric_rows(result)

    srd = res["analyses"]["srd_representations"]
    assert set(srd) == {"original", "anonymized"}
    anon_rows = srd["anonymized"]["representations"]
    assert {"ignorant", "semi-informed", "f0", "phone_units"} <= set(anon_rows)
    assert "original-trained" in srd["original"]["representations"]
    for row in anon_rows.values():
        assert row["n_references"] == 4

    size = res["analyses"]["size_study"]
    assert size["target_seeds"] == [0, 1]
    assert set(size["sweeps"]) == {"speakers", "enrollment", "trials"}
    assert any(k.startswith("size-") for k in res["plots"])
    assert any(k.startswith("srd-anonymized") for k in res["plots"])
    pre = res["analyses"]["prerestoration"]
    assert set(pre) == {"ignorant", "semi-informed"}
    for name, attacker in pre.items():
        assert {(e["family"], e["mode"]) for e in attacker["entries"]} == {
            ("pitch", "enrollment"),
            ("pitch", "trial"),
        }
        assert attacker["enrollment_condition"] == "original"  # the default, Liu et al.'s
        assert all(e["family_matches_anonymizer"] for e in attacker["entries"])  # pitch vs pitch
        # Same family, but only the recognizer trained on anonymized speech is semi-informed.
        label = "lazy-informed" if name == "ignorant" else "semi-informed"
        assert attacker["attacker_training"] == ("original" if name == "ignorant" else "anonymized")
        assert all(e["label"] == label for e in attacker["entries"])
    # Original enrollment vs anonymized trials with the original-trained recognizer is the
    # ignorant scenario: no pre-restoration gives the ignorant cosine row's EER.
    ignorant_row = next(
        r for r in res["rows"] if r["scenario"] == "ignorant" and r["backend"] == "cosine"
    )
    assert pre["ignorant"]["baseline_eer_percent"] == pytest.approx(ignorant_row["eer_percent"])
    assert any(k.startswith("prerestore-ignorant") for k in res["plots"])
    for files in res["plots"].values():
        for f in files:
            assert (tmp_path / "a" / f).is_file()

    # The anonymized enrollment condition: recorded, and the label says the attacker ran the
    # anonymizer (lazy-informed) even with an original-trained recognizer.
    anonymized_enrollment = parse_config(
        {
            **TINY,
            "analyses": {
                "prerestoration": {
                    "families": ["pitch"],
                    "modes": ["trial"],
                    "enrollment": "anonymized",
                }
            },
        }
    )
    res = run_evaluation(anonymized_enrollment, tmp_path / "b", stages_dir=out / "stages")
    ignorant = res["analyses"]["prerestoration"]["ignorant"]
    assert ignorant["enrollment_condition"] == "anonymized"
    assert [e["label"] for e in ignorant["entries"]] == ["lazy-informed"]


def test_as_norm_and_mixed_gender_rows_reuse_the_trained_attackers(
    tiny_run: tuple[EvaluationConfig, Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, out, result = tiny_run
    cfg = parse_config(
        tiny_config(
            scenarios=["semi-informed"],
            gender_handling="mixed",
            scoring={"normalization": "as-norm", "cohort_top_k": 200},
            # The first run's anonymized recognizer was fine-tuned from its original-speech one
            # (the default there); without an original scenario the default is scratch.
            training={"init": "original"},
        )
    )
    res = run_evaluation(cfg, tmp_path / "norm", stages_dir=out / "stages")
    reused = {s["stage"] for s in res["stages"] if s["reused"]}
    assert {"corpus", "train"} <= reused  # only embeddings of new sets and scores are new
    assert all(s["reused"] for s in res["stages"] if s["stage"] == "train")
    for row in res["rows"]:
        norm = row["score_normalization"]
        assert norm["method"] == "as-norm" and norm["cohort_top_k"] == 200
        # 6 attacker-train speakers, 3 per gender: K is clamped per gender partition
        assert norm["cohort_speakers"] == {"f": 3, "m": 3}
        assert norm["cohort_top_k_used"] == {"f": 3, "m": 3}
        assert "cllr_bits" not in row  # normalized PLDA scores are not LLRs
        assert 0.0 <= row["eer_percent"] <= 100.0
        per_speaker = row["per_speaker_eer"]
        assert per_speaker["n_speakers"] == 4 and per_speaker["n_worst_decile"] == 1
        assert per_speaker["worst_decile_percent"] <= per_speaker["mean_percent"]
        # mixed: same-gender pairs only (2 speakers of each gender): 4 x 3 x 1 non-targets
        assert row["n_nontarget"] == 4 * 3 * 1
        assert row["detection_rate"]["far_1_percent"] is None
        assert "100" in row["detection_rate"]["reasons"]["far_1_percent"]
    raw = [r for r in result["rows"] if r["scenario"] == "semi-informed"]
    assert all(r["score_normalization"] == {"method": "none"} for r in raw)
