"""F0 extraction through the process pool: no cold-cache compile race, a dead worker is retried.

pYIN runs on librosa's Numba functions compiled with ``cache=True``; workers compiling them at once
on a cold cache could leave cache files that make every later pYIN call segfault
(https://github.com/numba/numba/issues/10128). These tests run in fresh interpreters with
``NUMBA_CACHE_DIR`` pointing at an empty folder, so they never touch the installed package's cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from services.attacks import f0 as f0_module
from services.attacks.f0 import F0ExtractionError, f0_tracks, pyin_track
from services.audio import SAMPLE_RATE_HZ

REPO = Path(__file__).resolve().parents[2]

POOL_RUN = """
import sys
import numpy as np
from services.attacks.f0 import f0_tracks
t = np.arange(SR) / SR
waves = [(0.4 * np.sin(2 * np.pi * f * t)).astype(np.float32) for f in (110.0, 150.0, 190.0, 230.0)]
tracks = f0_tracks(waves, workers=4)
print(" ".join(f"{np.nanmedian(tr):.1f}" for tr in tracks))
""".replace("SR", str(SAMPLE_RATE_HZ))

PYIN_AFTER = """
import numpy as np
from services.attacks.f0 import pyin_track
t = np.arange(SR) / SR
print(f"{np.nanmedian(pyin_track((0.4 * np.sin(2 * np.pi * 150.0 * t)).astype(np.float32))):.1f}")
""".replace("SR", str(SAMPLE_RATE_HZ))


def _python(code: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(cache),
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
    }
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_pool_on_a_cold_numba_cache_leaves_pyin_working(tmp_path: Path) -> None:
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    for run in range(3):  # the first on an empty cache, then on what the runs before wrote
        done = _python(POOL_RUN, cache)
        assert done.returncode == 0, f"pool run {run}: rc {done.returncode}: {done.stderr[-2000:]}"
        medians = [float(v) for v in done.stdout.split()]
        assert medians == pytest.approx([110.0, 150.0, 190.0, 230.0], rel=0.03)
    assert any(cache.rglob("*.nbi")), "Numba wrote its cache where NUMBA_CACHE_DIR points"
    after = _python(PYIN_AFTER, cache)  # the crash was here: a pure tone, a fresh process
    assert after.returncode == 0, f"pYIN after the pool runs: rc {after.returncode}"
    assert float(after.stdout) == pytest.approx(150.0, rel=0.03)


def _tones() -> list[np.ndarray]:
    t = np.arange(SAMPLE_RATE_HZ // 2) / SAMPLE_RATE_HZ
    return [(0.4 * np.sin(2 * np.pi * f * t)).astype(np.float32) for f in (120.0, 170.0, 220.0)]


PARENT_PID = os.getpid()
REAL_TRACK = f0_module._timed_track


def _dies_in_workers(job):  # type: ignore[no-untyped-def]
    if os.getpid() != PARENT_PID:
        os._exit(9)  # as a segfault or the OOM killer would: no exception, no cleanup
    return REAL_TRACK(job)


def _always_fails(job):  # type: ignore[no-untyped-def]
    if os.getpid() != PARENT_PID:
        os._exit(9)
    raise MemoryError("cannot allocate the pitch grid")


def test_a_dying_worker_is_retried_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f0_module, "_timed_track", _dies_in_workers)
    waves = _tones()
    tracks = f0_tracks(waves, workers=2)
    expected = [pyin_track(w) for w in waves]
    for got, want in zip(tracks, expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_failing_retry_is_one_line_naming_the_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f0_module, "_timed_track", _always_fails)
    with pytest.raises(F0ExtractionError) as info:
        f0_tracks(_tones(), workers=2)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("F0 extraction (pYIN): a worker process died")
    assert "MemoryError: cannot allocate the pitch grid" in message
