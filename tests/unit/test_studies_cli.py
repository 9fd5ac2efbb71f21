"""`unmask analyses size-study` on a study .npz file."""

from __future__ import annotations

import json

import numpy as np

from cli.main import main
from services.scoring.synthetic import make_synthetic_speakers
from services.studies.dataset_size import EmbeddingTable
from services.studies.io import load_embedding_tables, save_embedding_table


def test_size_study_command_writes_json_and_plots(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    pop = make_synthetic_speakers(20, 8, np.random.default_rng(0), 1.0, 4.0)
    files = []
    for ts in (3, 4):
        x, s, g = pop.sample(8, np.random.default_rng(ts))
        path = tmp_path / f"seed{ts}.npz"
        save_embedding_table(path, EmbeddingTable(x, s, g), ts)
        files += ["--embeddings", str(path)]
    assert sorted(load_embedding_tables([tmp_path / "seed3.npz", tmp_path / "seed4.npz"])) == [3, 4]
    out = tmp_path / "out"
    code = main(
        [
            "analyses",
            "size-study",
            *files,
            "--out",
            str(out),
            "--sweep",
            "trials",
            "--trials",
            "1,3",
            "--trial-enrollment",
            "4",
            "--samples",
            "2",
        ]
    )
    assert code == 0
    result = json.loads((out / "size_study.json").read_text())
    assert [r["size"] for r in result["sweeps"]["trials"]] == [1, 3]
    assert result["sweeps"]["trials"][0]["repetitions"] == 4
    assert (out / "size_study_trials.png").is_file()
    assert "sweep: trials" in capsys.readouterr().out


def test_size_study_command_rejects_bad_input(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.npz"
    np.savez(bad, embeddings=np.zeros((2, 2)))
    assert main(["analyses", "size-study", "--embeddings", str(bad), "--out", str(tmp_path)]) == 2
    assert "missing array(s) speaker_ids" in capsys.readouterr().err
