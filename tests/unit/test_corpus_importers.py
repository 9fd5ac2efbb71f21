"""Importers of LibriSpeech / LibriTTS folder layouts on tiny fake trees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from services.audio import SAMPLE_RATE_HZ, read_audio
from services.corpus.importers import import_corpus, parse_speaker_file
from services.corpus.loaders import read_manifest, write_manifest
from services.corpus.validation import DurationFilter
from services.errors import CorpusError

SPEAKERS_TXT = """\
; This is a comment
;ID  |SEX| SUBSET           |MINUTES| NAME
19   | F | train-clean-100  | 25.19 | Kara Shallenberg
60   | M | train-clean-100  | 20.18 | |CBW|Simon
"""


def _tone(path: Path, seconds: float, sr: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(round(seconds * sr)) / sr
    sf.write(str(path), 0.1 * np.sin(2 * np.pi * 200 * t), sr)


def _librispeech(root: Path) -> Path:
    (root / "SPEAKERS.TXT").parent.mkdir(parents=True, exist_ok=True)
    (root / "SPEAKERS.TXT").write_text(SPEAKERS_TXT)
    sub = root / "train-clean-100"
    for spk, chapter, durs in (("19", "198", [2.5, 3.0]), ("60", "121082", [4.0])):
        folder = sub / spk / chapter
        lines = []
        for i, d in enumerate(durs):
            utt = f"{spk}-{chapter}-{i:04d}"
            _tone(folder / f"{utt}.flac", d, 16_000)
            lines.append(f"{utt} WORDS OF {utt}")
        (folder / f"{spk}-{chapter}.trans.txt").write_text("\n".join(lines) + "\n")
    return root


def _libritts(root: Path, speaker_file: str = "speakers.tsv") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if speaker_file == "speakers.tsv":
        (root / "speakers.tsv").write_text(
            "READER\tGENDER\tSUBSET\tNAME\n14\tF\ttrain-other-500\tKriss\n16\tM\ttrain-other-500\tX\n"
        )
    else:
        (root / "SPEAKERS.txt").write_text(
            ";ID |SEX| SUBSET |MINUTES| NAME\n14 | F | x | 1 | a\n16 | M | x | 1 | b\n"
        )
    sub = root / "train-other-500"
    for spk, chapter, dur in (("14", "208", 2.5), ("16", "122", 3.5)):
        stem = f"{spk}_{chapter}_000001_000000"
        _tone(sub / spk / chapter / f"{stem}.wav", dur, 24_000)
        (sub / spk / chapter / f"{stem}.normalized.txt").write_text(f"Text of {stem}.\n")
    return root


def test_speaker_file_formats(tmp_path: Path) -> None:
    p = tmp_path / "SPEAKERS.TXT"
    p.write_text(SPEAKERS_TXT + "77 | X | dev | 1 | odd\n")
    genders, problems = parse_speaker_file(p)
    assert genders == {"19": "f", "60": "m"}
    assert len(problems) == 1
    assert problems[0].row == 5
    assert "unknown gender 'X'" in str(problems[0])


def test_librispeech_import(tmp_path: Path) -> None:
    root = _librispeech(tmp_path / "LibriSpeech")
    report = import_corpus("librispeech", root)
    m = report.manifest
    assert report.problems == []
    assert [u.utt_id for u in m] == ["19-198-0000", "19-198-0001", "60-121082-0000"]
    assert m.speaker_gender() == {"19": "f", "60": "m"}
    u = m.utterances[1]
    assert u.text == "WORDS OF 19-198-0001"
    assert u.chapter_id == "198"
    assert u.duration_s == pytest.approx(3.0)
    assert u.original_sample_rate == 16_000
    assert m.resolve(u) == (root / "train-clean-100/19/198/19-198-0001.flac").resolve()


def test_librispeech_subset_folder_finds_speakers_in_parent(tmp_path: Path) -> None:
    root = _librispeech(tmp_path / "LibriSpeech")
    m = import_corpus("librispeech", root / "train-clean-100").manifest
    assert len(m) == 3


def test_librispeech_duration_filter_and_problems(tmp_path: Path) -> None:
    root = _librispeech(tmp_path / "LibriSpeech")
    # A speaker missing from SPEAKERS.TXT and an unreadable file.
    _tone(root / "train-clean-100/99/1/99-1-0000.flac", 3.0, 16_000)
    bad = root / "train-clean-100/19/198/19-198-0002.flac"
    bad.write_bytes(b"garbage")
    with pytest.raises(CorpusError) as err:
        import_corpus("librispeech", root)
    msg = str(err.value)
    assert "2 problems" in msg
    assert f"{bad}: unreadable audio" in msg
    assert "speaker '99' (1 files) is not in the speaker file" in msg
    report = import_corpus(
        "librispeech", root, skip_invalid=True, duration_filter=DurationFilter(min_s=2.8)
    )
    assert [u.utt_id for u in report.manifest] == ["19-198-0001", "60-121082-0000"]
    assert len(report.problems) == 2


def test_filter_emptying_a_speaker_is_a_problem(tmp_path: Path) -> None:
    root = _librispeech(tmp_path / "LibriSpeech")
    with pytest.raises(CorpusError, match="speaker '60' has no utterance left"):
        import_corpus("librispeech", root, duration_filter=DurationFilter(max_s=3.5))


@pytest.mark.parametrize("speaker_file", ["speakers.tsv", "SPEAKERS.txt"])
def test_libritts_import_records_rate_and_resamples(tmp_path: Path, speaker_file: str) -> None:
    root = _libritts(tmp_path / "LibriTTS", speaker_file)
    for layout in ("libritts", "librispeech-tts"):
        m = import_corpus(layout, root).manifest
        assert [u.utt_id for u in m] == ["14_208_000001_000000", "16_122_000001_000000"]
        assert m.speaker_gender() == {"14": "f", "16": "m"}
        u = m.utterances[0]
        assert u.text == "Text of 14_208_000001_000000."
        assert u.original_sample_rate == 24_000
        assert u.duration_s == pytest.approx(2.5)
        wav, sr = read_audio(m.resolve(u))
        assert sr == 24_000
        assert len(wav) == pytest.approx(2.5 * SAMPLE_RATE_HZ, abs=1)


def test_imported_manifest_round_trips(tmp_path: Path) -> None:
    m = import_corpus("libritts", _libritts(tmp_path / "LibriTTS")).manifest
    out = tmp_path / "out" / "m.csv"
    write_manifest(m, out)
    back = read_manifest(out)
    assert [back.resolve(u) for u in back] == [m.resolve(u) for u in m]
    assert [u.model_dump(exclude={"path"}) for u in back] == [
        u.model_dump(exclude={"path"}) for u in m
    ]


def test_bad_layout_and_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="unknown layout"):
        import_corpus("timit", tmp_path)
    with pytest.raises(CorpusError, match="corpus folder not found"):
        import_corpus("librispeech", tmp_path / "nope")
    with pytest.raises(CorpusError, match="no speaker file"):
        import_corpus("libritts", tmp_path)
