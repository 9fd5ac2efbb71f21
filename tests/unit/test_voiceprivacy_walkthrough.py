"""docs/data.md "From the VoicePrivacy Challenge", run as written on a tiny VoicePrivacy tree.

The tree (``tests.support.voiceprivacy``: synthetic speech in the challenge's ``data/`` layout,
an anonymized copy with the suffix ``_b1``) stands for a maker's toolkit folder. The page's
``bash`` block runs line by line through this checkout's CLI; its evaluation config is the
page's ``yaml`` block with what a CPU test must change: the attackers are ``vpc2024``'s recipe
on the ``tiny`` model for one epoch, and the pretrained ASR is a tiny random wav2vec 2.0 CTC
folder the test saves. Then the counts the issue promises are checked: the trial counts in
results.json equal the lists', per list, per gender and pooled, and the export has one row per
list and scenario.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_utility_asr_huggingface import save_tiny_ctc

from services.attacker.recipes import zoo_specs
from support.voiceprivacy import build_vpc_tree

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "data.md"


def _section() -> str:
    text = PAGE.read_text()
    start = text.index("## From the VoicePrivacy Challenge")
    return text[start : text.index("### On a GPU machine", start)]


def _block(kind: str) -> str:
    (block,) = re.findall(rf"^```{kind}\n(.*?)^```", _section(), flags=re.S | re.M)
    return str(block)


@pytest.mark.slow  # about a minute on 2 cores: two tiny recognizers, embeddings, utility
def test_the_walkthrough_runs_as_written(tmp_path: Path) -> None:
    tree = build_vpc_tree(tmp_path, suffix="_b1")
    config = yaml.safe_load(_block("yaml"))
    (vpc2024,) = zoo_specs("vpc2024")
    tiny = {"preset": "tiny", "epochs": 1, "batch_size": 8, "crop_seconds": 1.5}
    config["attackers"] = [{**vpc2024.model_dump(), "training": {**vpc2024.training, **tiny}}]
    save_tiny_ctc(tmp_path / "asr", favour="A")
    config["utility"]["asr"]["pretrained_path"] = str(tmp_path / "asr")
    config["metrics"] = {"bootstrap_resamples": 10}
    (tmp_path / "vpc-eval.yaml").write_text(yaml.safe_dump(config))

    env = {**os.environ, "PYTHONPATH": str(REPO), "UNMASK_NUM_THREADS": "1"}
    env.pop("UNMASK_VPC2026_SSL_MODEL", None)
    cli = f"{shlex.quote(sys.executable)} -m cli.main"
    for line in _block("bash").splitlines():
        command = line.split("#")[0].strip()
        if not command:
            continue
        done = subprocess.run(
            ["bash", "-c", re.sub(r"^unmask\b", cli, command)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"

    result = json.loads((tmp_path / "unmask-vpc" / "run" / "results.json").read_text())
    rows = result["rows"]
    assert {r["scenario"] for r in rows} == set(config["scenarios"])
    expected_tar = sum(t for t, _ in tree.trial_counts.values())
    expected_non = sum(n for _, n in tree.trial_counts.values())
    for r in rows:
        lists = r["trial_lists"]
        assert {k: (v["n_target"], v["n_nontarget"]) for k, v in lists.items()} == (
            tree.trial_counts
        )
        assert (r["n_target"], r["n_nontarget"]) == (expected_tar, expected_non)
        for g in ("f", "m"):
            counts = [c for name, c in tree.trial_counts.items() if name.endswith(f"_{g}")]
            assert r["n_trials_per_gender"][g] == {
                "n_target": sum(t for t, _ in counts),
                "n_nontarget": sum(n for _, n in counts),
            }
    wer = result["utility"]["wer"]
    assert wer["n_utterances"] == sum(
        len(ids) for name, ids in tree.folders.items() if "_trials_" in name
    )

    # The VoicePrivacy 2024 toolkit's layout (services/pipeline/vpc_export.py): the semi-informed
    # attacker's AA rows in exp/asv_anon<suffix>, the original-speech model's rows in exp/asv_orig.
    out = tmp_path / "unmask-vpc" / "results" / "exp"
    with (out / "asv_anon_b1" / "results_b1.csv").open() as f:
        anon = list(csv.DictReader(f))
    semi = {(a["dataset"], a["split"], a["gender"]): a for a in anon}
    assert len(semi) == len(anon) == len(tree.trial_counts)
    assert set(semi) == {("libri", s, g) for s in ("dev", "test") for g in ("f", "m")}
    assert {(a["enrollment"], a["trial"]) for a in anon} == {("anon", "anon")}
    row = next(r for r in rows if r["scenario"] == "semi-informed")
    assert float(semi[("libri", "dev", "f")]["EER"]) == pytest.approx(
        row["trial_lists"]["libri_dev_trials_f"]["eer_percent"], abs=1e-3
    )
    with (out / "asv_orig" / "results_b1.csv").open() as f:
        orig = list(csv.DictReader(f))
    if "ignorant" in config["scenarios"]:
        assert ("original", "anon") in {(a["enrollment"], a["trial"]) for a in orig}
    with (out / "asr" / "results_b1.csv").open() as f:
        asr = list(csv.DictReader(f))
    assert [a["asr"] for a in asr] == ["original", "anon"]
    assert float(asr[0]["WER"]) == pytest.approx(wer["wer_original_percent"], abs=1e-3)
    note = (out.parent / "UNMASK.md").read_text()
    assert "vpc2024" in note
