"""The Kaldi importer reads audio only under the toolkit root (or folders the operator allows),
never opens what a ``wav.scp`` names outside it, and streams its tables: a 100 000-line
``wav.scp`` of missing files keeps 100 problems (the rest counted) in bounded memory."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from cli.main import main
from services.corpus.importers import import_corpus
from services.corpus.validation import MAX_KEPT_PROBLEMS
from services.errors import CorpusError

OUTSIDE = "../" * 40 + "etc/passwd"  # climbs from any tmp folder up to /etc/passwd


def _wav(path: Path, seconds: float = 0.5) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tone = 0.1 * np.sin(np.linspace(0, 800 * np.pi, int(16000 * seconds)))
    sf.write(str(path), tone.astype(np.float32), 16000)
    return path


def _folder(root: Path, scp: dict[str, str]) -> Path:
    """``root/data/set`` (toolkit root ``root``): one speaker ``s1`` (f) per utterance."""
    folder = root / "data" / "set"
    folder.mkdir(parents=True)
    (folder / "wav.scp").write_text("".join(f"{u} {p}\n" for u, p in scp.items()))
    (folder / "utt2spk").write_text("".join(f"{u} s1\n" for u in scp))
    (folder / "spk2gender").write_text("s1 f\n")
    return folder


class _Looked:
    """``os.path.isfile`` that records every path it was asked about."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.real = os.path.isfile

    def __call__(self, path: str) -> bool:
        self.paths.append(os.path.abspath(path))
        return self.real(path)


def test_paths_outside_the_toolkit_root_are_refused_and_never_looked_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "toolkit"
    _wav(root / "corpus" / "ok.wav")
    folder = _folder(
        root,
        {
            "ok": "corpus/ok.wav",
            "up": OUTSIDE,
            "abs": "/etc/hostname",
            "dots": "corpus/" + "../" * 4 + "x.wav",
        },
    )
    looked = _Looked()
    monkeypatch.setattr(os.path, "isfile", looked)
    report = import_corpus("kaldi", folder, skip_invalid=True)
    monkeypatch.undo()
    assert [u.utt_id for u in report.manifest] == ["ok"]
    problems = {p.row: p.message for p in report.problems}
    assert set(problems) == {2, 3, 4}
    for row, value in ((2, OUTSIDE), (3, "/etc/hostname"), (4, "corpus/" + "../" * 4 + "x.wav")):
        assert f"{value!r} lies outside {root}" in problems[row], problems[row]
        assert "--allow-audio-under" in problems[row]
    assert looked.paths and all(p.startswith(f"{root}{os.sep}") for p in looked.paths), looked.paths
    with pytest.raises(CorpusError, match=r"3 problems: .*wav.scp:2: audio file .* lies outside"):
        import_corpus("kaldi", folder)


def test_a_folder_the_operator_allows_is_read(tmp_path: Path) -> None:
    elsewhere = _wav(tmp_path / "disk2" / "a.wav")
    folder = _folder(tmp_path / "toolkit", {"a": str(elsewhere)})
    with pytest.raises(CorpusError, match="lies outside"):
        import_corpus("kaldi", folder)
    report = import_corpus("kaldi", folder, allow_audio_under=[tmp_path / "disk2"])
    assert [Path(u.path) for u in report.manifest] == [elsewhere.resolve()]
    out = tmp_path / "m.jsonl"
    args = ["corpus", "import", "--layout", "kaldi", str(folder), "--out", str(out)]
    assert main(args) == 2
    assert main([*args, "--allow-audio-under", str(tmp_path / "disk2")]) == 0
    assert out.is_file()
    # A sibling whose name starts like the allowed folder is not inside it.
    (folder / "wav.scp").write_text(f"a {_wav(tmp_path / 'disk2x' / 'a.wav')}\n")
    with pytest.raises(CorpusError, match="lies outside"):
        import_corpus("kaldi", folder, allow_audio_under=[tmp_path / "disk2"])


def test_symbolic_links_inside_the_toolkit_root_are_followed(tmp_path: Path) -> None:
    disk = _wav(tmp_path / "disk" / "LibriSpeech" / "a.wav").parent
    root = tmp_path / "toolkit"
    root.mkdir()
    (root / "corpora").symlink_to(disk, target_is_directory=True)
    folder = _folder(root, {"a": "corpora/a.wav"})
    manifest = import_corpus("kaldi", folder).manifest
    assert [Path(u.path) for u in manifest] == [(disk / "a.wav").resolve()]


def test_allow_audio_under_is_for_the_kaldi_layout_only(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="kaldi layout only"):
        import_corpus("folder", tmp_path, allow_audio_under=[tmp_path])


@pytest.mark.slow
def test_a_100k_line_wav_scp_of_missing_files_keeps_100_problems_in_bounded_memory(
    tmp_path: Path,
) -> None:
    lines = 100_000
    folder = tmp_path / "toolkit" / "data" / "big"
    folder.mkdir(parents=True)
    with (folder / "wav.scp").open("w") as scp, (folder / "utt2spk").open("w") as spk:
        for i in range(lines):
            scp.write(f"utt{i:07d} wav/utt{i:07d}.wav\n")
            spk.write(f"utt{i:07d} spk{i % 500:03d}\n")
    (folder / "spk2gender").write_text("".join(f"spk{s:03d} f\n" for s in range(500)))
    tracemalloc.start()
    try:
        report = import_corpus("kaldi", folder, skip_invalid=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(report.manifest) == 0
    assert len(report.problems) == MAX_KEPT_PROBLEMS
    assert report.problem_count == lines
    assert report.problems[0].row == 1 and "not found" in report.problems[0].message
    # The utt2spk table (100 000 ids) is what remains, 10.5 MiB; wav.scp and the problems are
    # streamed. Held whole, every line and every problem made a peak of 66 MiB.
    assert peak < 30 * 1024**2, f"peak {peak / 1024**2:.0f} MiB"
    with pytest.raises(CorpusError, match=f"^{lines} problems: .*; ... and {lines - 20} more$"):
        import_corpus("kaldi", folder)


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity"])
def test_a_duration_that_is_not_finite_names_its_utt2dur_line(tmp_path: Path, value: str) -> None:
    _wav(tmp_path / "toolkit" / "corpus" / "a.wav")
    _wav(tmp_path / "toolkit" / "corpus" / "b.wav")
    folder = _folder(tmp_path / "toolkit", {"a": "corpus/a.wav", "b": "corpus/b.wav"})
    (folder / "utt2dur").write_text(f"a 0.5\nb {value}\n")
    with pytest.raises(CorpusError, match=r"utt2dur:2: duration .* is not a finite number"):
        import_corpus("kaldi", folder, skip_invalid=True)


def test_absolute_paths_under_a_linked_toolkit_roots_real_folder_are_inside(
    tmp_path: Path,
) -> None:
    real = tmp_path / "disk" / "toolkit"
    audio = _wav(real / "corpus" / "a.wav")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "toolkit").symlink_to(real, target_is_directory=True)
    _folder(real, {"a": str(audio)})
    # The operator names the toolkit through its link; the table names the real folder.
    folder = tmp_path / "home" / "toolkit" / "data" / "set"
    manifest = import_corpus("kaldi", folder).manifest
    assert [Path(u.path) for u in manifest] == [audio.resolve()]
