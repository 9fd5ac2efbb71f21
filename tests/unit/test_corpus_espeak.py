"""The eSpeak NG corpus builder (services/corpus/espeak.py, scripts/build_espeak_corpus.py): a
tiny corpus built with the documented command and read back by the LibriSpeech importer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from services.audio import read_audio
from services.corpus.espeak import draw_voices, espeak_path
from services.corpus.importers import import_librispeech
from services.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]

needs_espeak = pytest.mark.skipif(
    espeak_path() is None,
    reason="espeak-ng is not installed (make services installs it: scripts/ensure_espeak.sh)",
)


def test_voices_are_distinct_seeded_and_both_genders() -> None:
    voices = draw_voices(12, seed=3)
    assert len({v.voice for v in voices}) == 12
    assert {v.gender for v in voices} == {"F", "M"}
    assert draw_voices(12, seed=3) == voices and draw_voices(12, seed=4) != voices
    with pytest.raises(ConfigError, match="n_voices"):
        draw_voices(0)


@needs_espeak
def test_the_documented_command_builds_a_corpus_the_librispeech_importer_reads(
    tmp_path: Path,
) -> None:
    docs = (ROOT / "docs" / "data.md").read_text()
    command = "python scripts/build_espeak_corpus.py --voices 4 --utterances 3 --seed 0 OUT"
    assert command in docs
    out = tmp_path / "espeak"
    args = command.replace("OUT", str(out)).split()[1:]
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "4 voices x 3 utterances = 12 files" in done.stdout
    manifest, problems = import_librispeech(out)
    assert not problems
    assert len(manifest.utterances) == 12
    assert len({u.speaker_id for u in manifest.utterances}) == 4
    assert {u.gender for u in manifest.utterances} == {"f", "m"}
    first = manifest.utterances[0]
    assert first.text and first.text.startswith("THE ")
    assert first.original_sample_rate == 16000 and first.duration_s > 1.0
    path = manifest.resolve(first)
    audio, _ = read_audio(path)
    assert audio.size > 16000 and np.abs(audio).max() > 0.05  # a second of audible speech
    # Deterministic: the same arguments give the same audio.
    again = tmp_path / "again"
    subprocess.run(
        [sys.executable, *command.replace("OUT", str(again)).split()[1:]],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    np.testing.assert_array_equal(read_audio(again / path.relative_to(out))[0], audio)


def test_a_missing_espeak_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from services.corpus import espeak

    monkeypatch.setattr(espeak, "espeak_path", lambda: None)
    with pytest.raises(ConfigError, match="apt-get install espeak-ng"):
        espeak.build_espeak_corpus(tmp_path, 2, 1)
