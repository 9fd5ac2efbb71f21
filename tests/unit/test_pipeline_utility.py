"""The utility phase through the real pipeline: the ASR is trained once per protocol on original
speech, the DSP built-in keeps usable speech, the test-only silence anonymizer is flagged and
its result says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from services.errors import ConfigError


def test_missing_transcripts_name_the_fix() -> None:
    from services.corpus.manifest import Manifest, Utterance
    from services.pipeline.sets import ConditionSets
    from services.pipeline.stages.utility import check_transcripts

    def manifest(text: str | None) -> Manifest:
        return Manifest(
            utterances=tuple(
                Utterance(
                    utt_id=f"u{i}",
                    speaker_id="s",
                    gender="f",
                    path="x.wav",
                    duration_s=1.0,
                    text=text,
                )
                for i in range(3)
            )
        )

    with_text, without = manifest("U1 U2"), manifest(None)
    check_transcripts(ConditionSets(with_text, with_text, with_text, with_text))
    with pytest.raises(ConfigError, match=r"3 of 3 trial utterances .* utility.wer: false"):
        check_transcripts(ConditionSets(with_text, with_text, with_text, without))


def _config(anonymizer: str, **utility: Any) -> Any:
    from services.pipeline.config import EvaluationConfig
    from tests.support.configs import tiny_config

    return EvaluationConfig.model_validate(
        tiny_config(
            name=anonymizer,
            anonymizer={"name": anonymizer},
            scenarios=["ignorant"],
            backends=["cosine"],
            training={"epochs": 2, "target_classifier": "off"},
            metrics={"bootstrap_resamples": 0},
            utility={"asr": {"epochs": 2}, "bootstrap_resamples": 20, **utility},
        )
    )


@pytest.mark.slow
def test_utility_phase_measures_speech_and_flags_silence(tmp_path: Path) -> None:
    from services.pipeline.evaluation import run_evaluation
    from services.platform.results.document import result_rows_from_document

    stages = tmp_path / "stages"
    pitch = run_evaluation(_config("pitch"), tmp_path / "pitch", stages_dir=stages)
    silence = run_evaluation(_config("silence"), tmp_path / "silence", stages_dir=stages)

    block = pitch["utility"]
    wer = block["wer"]
    for key in ("wer_original_percent", "wer_anonymized_percent", "wer_increase_percent"):
        assert isinstance(wer[key], float) and wer[key] >= -100.0, (key, wer)
    assert wer["wer_increase_percent"] == pytest.approx(
        wer["wer_anonymized_percent"] - wer["wer_original_percent"]
    )
    low, high = wer["wer_increase_ci95_percent"]
    assert low <= wer["wer_increase_percent"] <= high
    assert block["pitch_correlation"]["mean"] > 0.5  # a pitch shift keeps the intonation
    assert block["voice_distinctiveness"]["gvd_db"] is not None
    assert block["usable_speech"]["usable"] is True, block["usable_speech"]
    assert block["n_utterances"] == len(block["pitch_correlation"]["per_utterance"])

    flagged = silence["utility"]["usable_speech"]
    assert flagged["usable"] is False and "silence" in flagged["reasons"], flagged
    # No F0 in silence: rho_F0 is "not measured" (null in strict JSON), not a number.
    assert silence["utility"]["pitch_correlation"]["mean"] is None
    # One ASR for the protocol, whatever the submission.
    assert len([p for p in (stages / "utility-asr").iterdir() if p.is_dir()]) == 1
    rows = {(r.scenario, r.metric): r.value for r in result_rows_from_document(silence)}
    assert rows[("utility", "usable_speech")] == 0.0


def test_a_protocol_without_transcripts_is_refused_before_any_work(tmp_path: Path) -> None:
    from services.corpus.loaders import write_manifest
    from services.corpus.protocol import build_protocol, save_protocol
    from services.corpus.synthetic import generate_synthetic_corpus
    from services.pipeline.config import parse_config
    from services.pipeline.config_checks import config_problems

    corpus = generate_synthetic_corpus(
        tmp_path / "corpus", n_speakers=8, utts_per_speaker=4, max_duration_s=2.5
    )
    # The same corpus as an importer without transcripts would write it.
    bare = corpus.model_copy(
        update={"utterances": tuple(u.model_copy(update={"text": None}) for u in corpus)}
    )
    write_manifest(bare, tmp_path / "corpus" / "manifest.jsonl")
    protocol = build_protocol(
        bare,
        name="bare",
        manifest_path="corpus/manifest.jsonl",
        n_attacker_train_speakers=4,
        n_eval_speakers=2,
        n_target_speakers=2,
        trials_per_speaker=2,
        enrollments_per_speaker=2,
    )
    save_protocol(protocol, tmp_path / "protocol.json")
    with_wer = parse_config({"protocol": str(tmp_path / "protocol.json"), "utility": {}})
    problems = config_problems(with_wer)
    assert len(problems) == 1 and problems[0].startswith("utility.wer: "), problems
    assert "no transcript" in problems[0] and "utility.wer: false" in problems[0]
    without_wer = parse_config(
        {"protocol": str(tmp_path / "protocol.json"), "utility": {"wer": False}}
    )
    assert config_problems(without_wer) == []
