"""`unmask analyses size-study` and `srd --embeddings` read what `unmask evaluate` writes.

The stage store is built in the layout the pipeline writes (embed stages with embeddings.npy,
utt_ids.json and DONE.json naming the embedded set; anonymize stages with their manifest), with
embeddings that separate speakers, so the commands' EERs and identification rates can be checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from cli.main import main
from services.pipeline.stage_embeddings import read_embed_stage

N_SPEAKERS = 8
PER_SET = 4


def _store(root: Path) -> dict[str, Path]:
    """stages/anonymize/{enr,tri} manifests and stages/embed/{e,t} embeddings."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(N_SPEAKERS, 16)) * 3
    folders: dict[str, Path] = {}
    for set_name, anon_key, embed_key in (("enrollment", "enr", "e"), ("trial", "tri", "t")):
        anon = root / "stages" / "anonymize" / anon_key
        (anon / "audio").mkdir(parents=True)
        rows, ids, emb = [], [], []
        for s in range(N_SPEAKERS):
            for k in range(PER_SET):
                utt = f"spk{s}-{set_name}{k}"
                rows.append(
                    {
                        "utt_id": utt,
                        "speaker_id": f"spk{s}",
                        "gender": "fm"[s % 2],
                        "path": f"wav/{utt}.wav",
                        "duration_s": 2.0,
                    }
                )
                ids.append(utt)
                wav = anon / "audio" / "wav" / f"{utt}.wav"
                wav.parent.mkdir(exist_ok=True)
                sf.write(str(wav), 0.1 * np.sin(np.arange(32_000) / (5 + s)), 16_000)
                emb.append(centres[s] + rng.normal(size=16))
        (anon / "audio" / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (anon / "DONE.json").write_text(
            json.dumps(
                {"inputs": {"set": set_name}, "outputs": {"manifest": "audio/manifest.jsonl"}}
            )
        )
        embed = root / "stages" / "embed" / embed_key
        embed.mkdir(parents=True)
        np.save(embed / "embeddings.npy", np.array(emb))
        (embed / "utt_ids.json").write_text(json.dumps(ids))
        (embed / "DONE.json").write_text(json.dumps({"inputs": {"data": f"anonymize:{anon_key}"}}))
        folders[set_name] = embed
        folders[f"{set_name}-manifest"] = anon / "audio" / "manifest.jsonl"
    return folders


def test_read_embed_stage_resolves_speakers_genders_and_role(tmp_path: Path) -> None:
    folders = _store(tmp_path)
    stage = read_embed_stage(folders["trial"] / "embeddings.npy")
    assert stage.embeddings.shape == (N_SPEAKERS * PER_SET, 16)
    assert stage.role == "trial"
    assert stage.speaker_ids[: PER_SET + 1] == ["spk0"] * PER_SET + ["spk1"]
    assert stage.genders[0] == "f" and stage.genders[PER_SET] == "m"


def test_size_study_on_evaluate_stages(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folders = _store(tmp_path)
    out = tmp_path / "size"
    argv = ["analyses", "size-study", "--embeddings", str(folders["enrollment"])]
    argv += ["--embeddings", str(folders["trial"]), "--out", str(out), "--samples", "2"]
    argv += ["--speakers", "4,all", "--enrollment", "1,4", "--trials", "1,4"]
    assert main([*argv, "--trial-enrollment", "4"]) == 0, capsys.readouterr().err
    result = json.loads((out / "size_study.json").read_text())
    rows = result["sweeps"]["speakers"]
    assert [r["n_speakers"] for r in rows] == [4, N_SPEAKERS]
    # Well separated speakers: far better than chance.
    assert all(r["eer_mean_percent"] < 25 for r in rows)


def test_srd_on_an_evaluate_stage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folders = _store(tmp_path)
    out = tmp_path / "srd"
    argv = ["analyses", "srd", "--manifest", str(folders["trial-manifest"]), "--out", str(out)]
    argv += ["--embeddings", f"semi={folders['trial']}", "--representation", "embeddings"]
    assert main([*argv, "--resamples", "0"]) == 0, capsys.readouterr().err
    result = json.loads((out / "srd_representations.json").read_text())
    assert result["representations"]["semi"]["empirical"]["identification_rate_percent"] > 50


def test_a_stage_without_its_set_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = _store(tmp_path)
    (tmp_path / "stages" / "anonymize" / "tri" / "DONE.json").unlink()
    argv = ["analyses", "size-study", "--embeddings", str(folders["trial"])]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not in the store" in err[0]
