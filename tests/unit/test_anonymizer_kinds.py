"""Anonymizer kinds: one module each, one registry that the config, the API, storage and the
pipeline read (services/anonymizers/kinds/)."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest

from services.anonymizers.kinds.archive import ArchiveAnonymizerConfig
from services.anonymizers.kinds.builtin import BuiltinAnonymizerConfig, BuiltinSpec
from services.anonymizers.kinds.container import ContainerAnonymizerConfig, ContainerSpec
from services.anonymizers.kinds.registry import (
    KIND_NAMES,
    KINDS,
    kind_of,
    submitted_kinds,
)
from services.errors import ConfigError, InvalidFieldError
from services.pipeline.config import EvaluationConfig, parse_config
from services.platform.hashing import canonical_json_hash
from services.settings import Settings
from services.storage.models import (
    SUBMISSION_KIND_VALUES,
    Submission,
    submission_content_columns,
)

ROOT = Path(__file__).resolve().parents[2]
DIGEST = "sha256:" + "a" * 64


def test_every_kind_declares_its_parts() -> None:
    assert KIND_NAMES == ("builtin", "archive", "container", "service")
    for kind in KINDS:
        # The config model's kind is the kind's name, and nothing else.
        annotation = kind.config_model.model_fields["kind"].annotation
        assert typing.get_args(annotation) == (kind.name,), kind.name
        assert kind_of(kind.name) is kind
        assert set(kind.content_fields) <= set(kind.columns)
        assert (kind.submission_field is None) == (kind.submission_model is None)


def test_storage_admits_exactly_the_registered_kinds_and_their_columns() -> None:
    assert SUBMISSION_KIND_VALUES == KIND_NAMES
    table_columns = {c.key for c in Submission.__table__.columns}
    content = set(submission_content_columns())
    for kind in KINDS:
        assert set(kind.columns) <= table_columns, kind.name
        # A kind's columns define what was evaluated: frozen once accepted.
        assert set(kind.columns) <= content, kind.name


def test_the_config_union_is_built_from_the_registry() -> None:
    annotation = EvaluationConfig.model_fields["anonymizer"].annotation
    assert set(typing.get_args(annotation)) == {k.config_model for k in KINDS}
    assert parse_config({}).anonymizer == BuiltinAnonymizerConfig(name="pitch")
    assert isinstance(
        parse_config({"anonymizer": {"name": "vtln"}}).anonymizer, BuiltinAnonymizerConfig
    )
    archive = parse_config({"anonymizer": {"kind": "archive", "archive": "/x"}}).anonymizer
    assert isinstance(archive, ArchiveAnonymizerConfig) and archive.archive == Path("/x")
    image = f"lab/anon@{DIGEST}"
    container = parse_config({"anonymizer": {"kind": "container", "image": image}}).anonymizer
    assert isinstance(container, ContainerAnonymizerConfig) and container.image == image


def test_configs_stored_by_the_single_model_still_load() -> None:
    """Job configs were stored with every kind's fields at their defaults."""
    old = {"name": "pitch", "params": {}, "archive": None, "image": None}
    builtin = parse_config({"anonymizer": {**old, "kind": "builtin", "name": "mcadams"}})
    assert builtin.anonymizer.model_dump() == {"kind": "builtin", "name": "mcadams", "params": {}}
    archive = parse_config({"anonymizer": {**old, "kind": "archive", "archive": "k"}})
    assert archive.anonymizer.model_dump(mode="json") == {"kind": "archive", "archive": "k"}
    # A field another kind owns, set to a real value, is still an error naming it.
    with pytest.raises(ConfigError, match=r"anonymizer\.image: Extra inputs"):
        parse_config({"anonymizer": {"kind": "builtin", "image": "x"}})
    with pytest.raises(ConfigError, match="does not match any of the expected tags"):
        parse_config({"anonymizer": {"kind": "nope"}})
    with pytest.raises(ConfigError, match="unknown anonymizer kind 'nope'"):
        kind_of("nope")


def test_submission_columns_config_section_and_shown_fields() -> None:
    settings = Settings(container_registries=["ghcr.io"])
    builtin = kind_of("builtin")
    columns = builtin.submission_columns(
        BuiltinSpec(name="pitch", params={"semitones": 2}), settings
    )
    assert columns == {"builtin_name": "pitch", "builtin_params": {"semitones": 2}}
    assert builtin.config_section(columns) == {
        "kind": "builtin",
        "name": "pitch",
        "params": {"semitones": 2},
    }
    with pytest.raises(InvalidFieldError) as caught:
        builtin.submission_columns(BuiltinSpec(name="pitch", params={"semitone": 2}), settings)
    assert caught.value.field == "body.builtin.params"
    assert str(caught.value).startswith("body.builtin.params: ")

    container = kind_of("container")
    spec = ContainerSpec(image=f"ghcr.io/lab/anon:v1@{DIGEST}")
    columns = container.submission_columns(spec, settings)
    assert columns == {"container_image": "ghcr.io/lab/anon:v1", "container_digest": DIGEST}
    assert container.config_section(columns)["image"] == spec.image
    assert container.public_fields(columns) == {"container_image": spec.image}
    with pytest.raises(ValueError, match="registry"):
        container.submission_columns(ContainerSpec(image=f"quay.io/x@{DIGEST}"), settings)

    archive = kind_of("archive")
    stored = {"archive_blob_key": "archives/a", "archive_sha256": "b" * 64, "protocol_id": 3}
    assert archive.config_section(stored) == {"kind": "archive", "archive": "archives/a"}
    assert archive.public_fields(stored) == {"archive_sha256": "b" * 64, "archive_protocol_id": 3}
    with pytest.raises(ValueError, match="archive_sha256"):
        archive.normalize_columns({"archive_blob_key": "archives/a", "archive_sha256": "B" * 64})


def test_content_hashes_are_those_of_the_stored_rows() -> None:
    """Equal content, equal hash, as before the kinds were modules (stored rows keep theirs)."""
    cases = {
        "builtin": ({"builtin_name": "pitch", "builtin_params": None}, {"builtin_params": {}}),
        "archive": ({"archive_blob_key": "k", "archive_sha256": "c" * 64}, {}),
        "container": ({"container_image": "i", "container_digest": DIGEST}, {}),
    }
    expected = {
        "builtin": {"kind": "builtin", "builtin_name": "pitch", "builtin_params": {}},
        "archive": {"kind": "archive", "archive_sha256": "c" * 64},
        "container": {"kind": "container", "container_digest": DIGEST},
    }
    for name, (columns, normalized) in cases.items():
        kind = kind_of(name)
        stored = kind.normalize_columns(columns)
        for key, value in normalized.items():
            assert stored[key] == value
        content = {"kind": name} | {c: stored[c] for c in kind.content_fields}
        assert canonical_json_hash(content) == canonical_json_hash(expected[name])


def test_the_api_union_and_enum_come_from_the_registry() -> None:
    from api.schemas.submissions import (
        SUBMISSION_CREATE_MODELS,
        SubmissionKind,
        SubmissionKindName,
    )

    assert [k.value for k in SubmissionKind] == list(KIND_NAMES)
    assert typing.get_args(SubmissionKindName) == KIND_NAMES
    assert (
        list(SUBMISSION_CREATE_MODELS)
        == [k.name for k in submitted_kinds()]
        == [
            "builtin",
            "container",
            "service",
        ]
    )
    for kind in submitted_kinds():
        model = SUBMISSION_CREATE_MODELS[kind.name]
        assert model.__name__ == f"{kind.title}SubmissionCreate"
        assert kind.submission_field is not None
        assert model.model_fields[kind.submission_field].annotation is kind.submission_model


_KIND_LITERAL = re.compile(r"""\.kind\s*[!=]=\s*["'](builtin|archive|container)["']""")


def test_no_kind_is_switched_on_outside_its_module() -> None:
    """Code outside services/anonymizers/kinds/ asks the kind (flags, methods), never compares
    ``kind`` with a kind's name."""
    offenders = []
    for package in ("services", "api", "cli", "workers"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(("services/anonymizers/kinds/", "unmask_client/api_client/")):
                continue
            text = path.read_text()
            ast.parse(text)  # only Python sources
            offenders += [f"{rel}: {m.group(0)}" for m in _KIND_LITERAL.finditer(text)]
    assert offenders == []
