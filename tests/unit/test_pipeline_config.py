"""Evaluation config validation: every bad field gets one clear error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main
from services.errors import ConfigError
from services.pipeline.config import EvaluationConfig, load_config, parse_config


def test_defaults_are_valid_and_hash_is_stable() -> None:
    a, b = EvaluationConfig(), parse_config({})
    assert a.content_hash() == b.content_hash()
    assert parse_config({"seeds": [1]}).content_hash() != a.content_hash()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"scenarios": ["omniscient"]}, "scenarios.0"),
        ({"training": {"epochs": 0}}, "training.epochs"),
        ({"training": {"preset": "huge"}}, "training.preset"),
        ({"backends": ["cosine", "cosine"]}, "backends"),
        ({"seeds": []}, "seeds"),
        ({"anonymizer": {"kind": "container"}}, "image"),
        ({"nonsense": 1}, "nonsense"),
    ],
)
def test_bad_field_is_named(data: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(data, "cfg.yaml")
    assert field in str(err.value)
    assert str(err.value).startswith("cfg.yaml: ")


def test_yaml_loading_and_relative_protocol(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("name: x\nprotocol: proto.json\nseeds: [0, 1]\n")
    cfg = load_config(p)
    assert cfg.protocol_file == (tmp_path / "proto.json").resolve()
    assert cfg.seeds == [0, 1]
    # ``protocol:`` is the field's former name: both spellings name the same file.
    p.write_text("name: x\nprotocol_file: proto.json\n")
    assert load_config(p).protocol_file == cfg.protocol_file
    assert "protocol_file" in cfg.model_dump(mode="json") and "protocol" not in cfg.model_dump()
    p.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")


def test_cli_bad_config_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("training:\n  epochs: -3\n")
    assert main(["evaluate", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "training.epochs" in err[0]


def test_docs_config_reference_is_current() -> None:
    from services.pipeline.config_reference import BEGIN, END, config_reference_markdown

    doc = (Path(__file__).resolve().parents[2] / "docs" / "evaluation.md").read_text()
    embedded = doc.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert embedded == config_reference_markdown().strip(), (
        "docs/evaluation.md is stale: regenerate with python -m services.pipeline.config_reference"
    )


@pytest.mark.parametrize(
    "path",
    sorted((Path(__file__).resolve().parents[2] / "examples" / "configs").glob("*.yaml")),
    ids=lambda p: p.name,
)
def test_example_configs_are_valid(path: Path) -> None:
    cfg = load_config(path)
    assert cfg.name == path.stem  # the docs refer to each example by its file and run name


def test_former_names_merge_as_the_current_ones() -> None:
    """A protocol's ``init:`` and a job's ``start:`` are one field: merged key by key after
    bringing former names to the current ones; both spellings at once are refused."""
    from services.pipeline.config import with_current_names

    data = with_current_names({"protocol": "p.json", "training": {"init": "scratch", "epochs": 2}})
    assert data == {"protocol_file": "p.json", "training": {"start": "scratch", "epochs": 2}}
    with pytest.raises(ConfigError, match=r"body\.training\.init: give start or its former name"):
        with_current_names({"training": {"init": "scratch", "start": "original"}}, "body")
