"""Build the eSpeak NG corpus: N voices x M utterances in the LibriSpeech layout at 16 kHz.

    python scripts/build_espeak_corpus.py --voices 72 --utterances 16 --seed 0 OUT
    unmask corpus import --layout librispeech OUT --out OUT/manifest.jsonl

Needs the Debian package ``espeak-ng`` (scripts/ensure_espeak.sh). What it renders:
``services/corpus/espeak.py``; the recipe: docs/data.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.corpus.espeak import build_espeak_corpus
from services.errors import ConfigError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the corpus folder to write")
    parser.add_argument("--voices", type=int, default=72, help="speakers (default 72)")
    parser.add_argument("--utterances", type=int, default=16, help="per speaker (default 16)")
    parser.add_argument("--seed", type=int, default=0, help="voices and sentences (default 0)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        voices = build_espeak_corpus(args.out, args.voices, args.utterances, seed=args.seed)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    n = len(voices) * args.utterances
    print(
        f"{len(voices)} voices x {args.utterances} utterances = {n} files in {args.out} "
        f"({time.perf_counter() - start:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
