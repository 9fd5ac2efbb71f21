"""Time and peak memory of the Kaldi importer on a large ``wav.scp`` of missing files.

    .venv/bin/python benchmarks/kaldi_import.py [--lines 300000]

Input: one data folder of ``--lines`` utterances (500 speakers) whose audio files do not exist,
the worst case of a mistyped corpus path. Compared in the same run with the straightforward way,
the importer as it was before it streamed its tables: the whole ``wav.scp`` and ``utt2spk`` read
into lists and maps first, every path looked up with ``pathlib`` in the three folders, and every
problem kept. Peak memory is the Python heap (tracemalloc, a separate run from the timing).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.corpus.importers import import_corpus
from services.corpus.validation import ManifestProblem


def write_folder(root: Path, lines: int) -> Path:
    """``root/data/big``: ``lines`` utterances of 500 speakers, no audio file."""
    folder = root / "data" / "big"
    folder.mkdir(parents=True)
    with (folder / "wav.scp").open("w") as scp, (folder / "utt2spk").open("w") as spk:
        for i in range(lines):
            scp.write(f"utt{i:07d} wav/utt{i:07d}.wav\n")
            spk.write(f"utt{i:07d} spk{i % 500:03d}\n")
    (folder / "spk2gender").write_text("".join(f"spk{s:03d} f\n" for s in range(500)))
    return folder


def reference(folder: Path) -> int:
    """The straightforward import: whole tables in memory, every problem kept; the count."""

    def table(name: str) -> dict[str, tuple[int, str]]:
        rows = (folder / name).read_text(encoding="utf-8").splitlines()
        pairs = enumerate((r.partition(" ") for r in rows), start=1)
        return {k: (n, v.strip()) for n, (k, _, v) in pairs}

    scp, speakers = table("wav.scp"), table("utt2spk")
    problems: list[ManifestProblem] = []
    for utt, (n, value) in scp.items():
        assert utt in speakers
        bases = (folder, folder.parent, folder.parent.parent)
        if not any((base / value).is_file() for base in bases):
            problems.append(ManifestProblem(str(folder / "wav.scp"), n, f"{value!r} not found"))
    return len(problems)


def streamed(folder: Path) -> int:
    """The importer (``services.corpus.kaldi``); the problem count."""
    return import_corpus("kaldi", folder, skip_invalid=True).problem_count


def measure(fn: Callable[[Path], int], folder: Path) -> tuple[float, float, int]:
    """(seconds, peak MiB, problems) of ``fn(folder)``."""
    started = time.perf_counter()
    count = fn(folder)
    seconds = time.perf_counter() - started
    tracemalloc.start()
    fn(folder)
    peak = tracemalloc.get_traced_memory()[1] / 1024**2
    tracemalloc.stop()
    return seconds, peak, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_folder(Path(tmp), args.lines)
        ref = measure(reference, folder)
        new = measure(streamed, folder)
    print(f"{'way':<22}{'lines':>9}{'s':>8}{'peak MiB':>10}{'problems':>10}")
    for name, (seconds, peak, count) in (("reference (whole)", ref), ("importer (streamed)", new)):
        print(f"{name:<22}{args.lines:>9}{seconds:>8.2f}{peak:>10.1f}{count:>10}")
    print(f"ratio reference/importer: time {ref[0] / new[0]:.1f}x, memory {ref[1] / new[1]:.1f}x")


if __name__ == "__main__":
    main()
