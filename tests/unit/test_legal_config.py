"""The legal metrics' config (metrics.legal): on by default, adapting to the evaluation set;
explicit requests the set cannot serve are config errors before any work, naming the field and
the available speakers and trial utterances (synthetic corpus, protocol file, CLI exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from services.errors import ConfigError
from services.pipeline.config import parse_config
from services.pipeline.config_checks import config_problems


def test_on_by_default_for_the_demo_protocol() -> None:
    from services.pipeline.config import demo_config, legal_runs_on, synthetic_population

    cfg = demo_config()
    assert cfg.metrics.legal is not None
    assert legal_runs_on(cfg.metrics.legal, synthetic_population(cfg.synthetic))


def test_explicit_requests_beyond_the_synthetic_set_are_errors() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"metrics": {"legal": {"speaker_counts": [2, 40]}}})
    message = str(err.value)
    assert "metrics.legal.speaker_counts: [40]" in message
    assert "16 speakers" in message and "fewest trial utterances of a speaker being 8" in message
    with pytest.raises(ConfigError, match=r"conversation_lengths: \[10\] need 2 L"):
        parse_config({"metrics": {"legal": {"conversation_lengths": [1, 10]}}})
    with pytest.raises(ConfigError, match=r"headline_length: 3 is not one of"):
        parse_config({"metrics": {"legal": {"conversation_lengths": [1], "headline_length": 3}}})
    with pytest.raises(ConfigError, match="speaker_counts"):
        parse_config({"metrics": {"legal": {"speaker_counts": [1, 4]}}})


def test_defaults_adapt_and_null_turns_them_off() -> None:
    from services.pipeline.config import legal_runs_on, synthetic_population

    small = {"synthetic": {"n_eval_speakers": 3, "trials_per_speaker": 1}}
    cfg = parse_config(small)  # too small for the defaults: left out, not an error
    assert not legal_runs_on(cfg.metrics.legal, synthetic_population(cfg.synthetic))
    with pytest.raises(ConfigError, match="headline_speakers: 4 exceeds"):
        parse_config({**small, "metrics": {"legal": {"headline_speakers": 4}}})
    assert parse_config({**small, "metrics": {"legal": None}}).metrics.legal is None


def _protocol_file(tmp_path: Path) -> Path:
    from services.corpus.loaders import write_manifest
    from services.corpus.protocol import build_protocol, save_protocol
    from services.corpus.synthetic import generate_synthetic_corpus

    corpus = generate_synthetic_corpus(
        tmp_path / "corpus", n_speakers=8, utts_per_speaker=4, max_duration_s=2.5
    )
    write_manifest(corpus, tmp_path / "corpus" / "manifest.jsonl")
    protocol = build_protocol(
        corpus,
        name="small",
        manifest_path="corpus/manifest.jsonl",
        n_attacker_train_speakers=4,
        n_eval_speakers=2,
        n_target_speakers=2,
        trials_per_speaker=2,
        enrollments_per_speaker=2,
    )
    save_protocol(protocol, tmp_path / "protocol.json")
    return tmp_path / "protocol.json"


def test_protocol_file_too_small_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.main import main

    protocol = _protocol_file(tmp_path)
    cfg = parse_config({"protocol": str(protocol), "metrics": {"legal": {"headline_length": 2}}})
    problems = config_problems(cfg)
    assert len(problems) == 1, problems
    assert problems[0].startswith("metrics.legal.headline_length: 2 needs 4 trial utterances")
    assert "2 speakers" in problems[0]
    assert config_problems(parse_config({"protocol": str(protocol)})) == []  # adapts
    path = tmp_path / "bad.yaml"
    path.write_text(
        yaml.safe_dump(
            {"protocol": str(protocol), "metrics": {"legal": {"speaker_counts": [2, 5]}}}
        )
    )
    assert main(["evaluate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "metrics.legal.speaker_counts: [5] exceed the population" in err[0]
