"""The overestimation alarm's enrollment check (archive submissions): an archive whose enrollment
was left un-anonymized is flagged; one anonymized throughout is not."""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.pipeline.trust import assess_trust, measure_enrollment_leak
from services.settings import Settings


def _unit_rows(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    x = rng.normal(size=(n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_leak_is_one_for_untouched_enrollment_and_near_zero_when_anonymized_alike() -> None:
    rng = np.random.default_rng(0)
    orig_enr, orig_tri = _unit_rows(rng, 40), _unit_rows(rng, 40)
    # The "anonymizer": a fixed rotation-like mix that keeps some of the original direction.
    mix = np.eye(16) * 0.6 + rng.normal(scale=0.3, size=(16, 16))
    anon_tri = orig_tri @ mix
    leaky = measure_enrollment_leak(orig_enr, orig_enr.copy(), orig_tri, anon_tri)
    assert leaky["leak"] == pytest.approx(1.0)
    assert leaky["enrollment_similarity"] == pytest.approx(1.0)
    clean = measure_enrollment_leak(orig_enr, orig_enr @ mix, orig_tri, anon_tri)
    assert clean["leak"] is not None and abs(clean["leak"]) < 0.15
    assert clean["trial_similarity"] < 0.95


def test_leak_is_undefined_when_nothing_was_anonymized_and_shapes_must_pair() -> None:
    rng = np.random.default_rng(1)
    x, y = _unit_rows(rng, 10), _unit_rows(rng, 10)
    assert measure_enrollment_leak(x, x, y, y)["leak"] is None
    with pytest.raises(ValueError, match="paired"):
        measure_enrollment_leak(x, x[:5], y, y)


def test_trust_flags_a_leak_above_the_setting_only() -> None:
    settings = Settings(trust_max_enrollment_leak=0.2)
    flagged = assess_trust({"enrollment_leak": {"leak": 0.9}}, settings)
    assert [r.code for r in flagged.reasons] == ["enrollment_unanonymized"]
    assert flagged.reasons[0].value == pytest.approx(0.9)
    assert assess_trust({"enrollment_leak": {"leak": 0.1}}, settings).trustworthy
    assert assess_trust({"enrollment_leak": {"leak": None}}, settings).trustworthy


def _archive(
    protocol: Any, manifest: Any, path: Path, *, anonymize_enrollment: bool
) -> dict[str, float]:
    """A zip for ``protocol``: every set through a fixed VTLN warp, enrollment optionally left
    as the original audio (the mistake the alarm catches); returns utt id -> duration (s)."""
    from services.anonymizers.archive_request import expected_from_protocol
    from services.anonymizers.base import AnonymizationItem
    from services.anonymizers.contract import output_stem
    from services.anonymizers.registry import build_anonymizer
    from services.audio import read_audio, write_audio

    warp = build_anonymizer("vtln", {"warp": "power", "alpha": 0.25, "jitter": 0.0})
    by_id = {u.utt_id: u for u in manifest.utterances}
    durations = {}
    staging = path.parent / (path.stem + "-files")
    with zipfile.ZipFile(path, "w") as zf:
        for set_name, ids in expected_from_protocol(protocol).items():
            items = []
            for utt_id in ids:
                u = by_id[utt_id]
                wav, sr = read_audio(manifest.resolve(u))
                durations[utt_id] = u.duration_s
                items.append(AnonymizationItem(utt_id, wav, sr, u.speaker_id, u.gender))
            keep = set_name == "enrollment" and not anonymize_enrollment
            outputs = [i.waveform for i in items] if keep else warp.anonymize(items, seed=0)
            for item, out in zip(items, outputs, strict=True):
                member = f"{set_name}/{output_stem(item.utt_id)}.wav"
                file = staging / member
                file.parent.mkdir(parents=True, exist_ok=True)
                write_audio(file, out)
                zf.write(file, member)
    return durations


@pytest.mark.slow
def test_archive_with_original_enrollment_is_not_trustworthy(tmp_path: Path) -> None:
    from services.anonymizers.archive import validate_archive
    from services.anonymizers.archive_request import expected_from_protocol
    from services.pipeline.config import EvaluationConfig
    from services.pipeline.evaluation import EvaluationRun, run_evaluation
    from tests.support.configs import tiny_config

    stages = tmp_path / "stages"
    base = tiny_config(
        scenarios=["ignorant"],
        backends=["cosine"],
        training={"epochs": 2, "target_classifier": "off"},
        metrics={"bootstrap_resamples": 0},
    )
    corpus_run = EvaluationRun(
        EvaluationConfig.model_validate(base), tmp_path / "c", stages_dir=stages
    )
    protocol, manifest, _ = corpus_run.corpus_stage()
    (protocol_file,) = stages.glob("corpus/*/protocol.json")

    leaks = {}
    for label, anonymize_enrollment in (("leaky", False), ("clean", True)):
        zip_path = tmp_path / f"{label}.zip"
        durations = _archive(
            protocol, manifest, zip_path, anonymize_enrollment=anonymize_enrollment
        )
        folder = tmp_path / f"{label}-validated"
        report = validate_archive(
            zip_path, expected_from_protocol(protocol), folder, original_durations_s=durations
        )
        assert report.ok, report.problems
        cfg = EvaluationConfig.model_validate(
            {
                **base,
                "name": label,
                "protocol": str(protocol_file),
                "anonymizer": {"kind": "archive", "archive": str(folder)},
            }
        )
        result = run_evaluation(cfg, tmp_path / label, stages_dir=stages)
        block = result["enrollment_leak"]
        leaks[label] = block["leak"]
        codes = [r["code"] for r in result["trust"]["reasons"]]
        assert ("enrollment_unanonymized" in codes) == (label == "leaky"), (label, block, codes)
    assert leaks["leaky"] > 0.5
    assert leaks["clean"] < 0.2
