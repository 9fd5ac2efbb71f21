"""pYIN's Numba compile cost: which way keeps a process pool off a cold Numba cache.

librosa compiles pYIN's Numba functions with ``cache=True``; workers compiling them at once on a
cold cache race on the cache files (https://github.com/numba/numba/issues/10128). Three ways
out, priced by two measurements in fresh interpreters on an empty ``NUMBA_CACHE_DIR``: the cold
compile (empty cache) and the cache load (the cache the first run wrote).

- warm in the parent (what ``services.attacks.f0`` does): one cold compile per installation, then
  one cache load per process that runs pYIN; forked workers inherit the compiled code (0 s).
- a cache folder per worker: every worker of every pool pays a cold compile.
- no cache: every process that runs pYIN pays a cold compile.

    .venv/bin/python benchmarks/f0_numba_cache.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WARM = "from services.attacks.f0 import warm_pyin; warm_pyin()"
IMPORT_ONLY = "import librosa, numba; from services.attacks import f0"


def _seconds(code: str, cache: Path) -> float:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measurement")
    args = parser.parse_args()
    cold, load, imports = [], [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp)
            imports.append(_seconds(IMPORT_ONLY, cache))
            cold.append(_seconds(WARM, cache) - imports[-1])
            load.append(_seconds(WARM, cache) - imports[-1])
    c, ld = statistics.median(cold), statistics.median(load)
    print(f"pYIN Numba functions, median of {args.repeats} fresh interpreters (import excluded)")
    print(f"{'measurement':<44}{'s':>8}")
    print(f"{'cold compile (empty cache)':<44}{c:>8.2f}")
    print(f"{'load from the cache':<44}{ld:>8.2f}")
    print()
    print(f"{'strategy: added per process running pYIN':<44}{'s':>8}{'x load':>8}")
    for name, cost in (
        ("warm in the parent, shared cache", ld),
        ("cache folder per worker", c),
        ("no cache", c),
    ):
        print(f"{name:<44}{cost:>8.2f}{cost / ld:>8.1f}")


if __name__ == "__main__":
    main()
