"""Benchmark: ROCCH EER (`compute_eer`) against a simple reference and SpeechBrain's EER scan.

Compared, on the same scores (10 % targets ~ N(2, 1), non-targets ~ N(0, 1)):

- ``compute_eer``: sort + one searchsorted + compiled PAV on label runs (services.metrics).
- reference: the plain BOSARIS recipe, a stable sort then a Python stack PAV and
  ``rocch2eer`` segment by segment (what the fast code must equal).
- SpeechBrain scan, vectorized: SpeechBrain's definition (candidate thresholds = distinct scores
  and midpoints, FRR = P(target <= t), FAR = P(non-target > t), pick the t minimising
  |FAR - FRR|, EER = (FAR + FRR) / 2), evaluated with searchsorted instead of a loop.
- SpeechBrain ``speechbrain.utils.metric_stats.EER`` itself (a Python loop over 2n thresholds,
  O(n^2)), run on the sizes it can handle.

Everything runs on one core. Usage: .venv/bin/python benchmarks/eer.py [--quick]
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from services.metrics import compute_eer  # noqa: E402

Scores = NDArray[np.float64]


def reference_rocch_eer(tar: Scores, non: Scores) -> float:
    """BOSARIS rocch + rocch2eer, written plainly (Python loops over scores and segments)."""
    scores = np.concatenate((tar, non))
    labels = np.concatenate((np.ones(tar.size), np.zeros(non.size)))
    ordered = labels[np.argsort(scores, kind="stable")].tolist()  # targets first among ties
    sums: list[float] = []
    counts: list[int] = []
    for label in ordered:
        sums.append(label)
        counts.append(1)
        while len(sums) > 1 and sums[-2] / counts[-2] >= sums[-1] / counts[-1]:
            s, c = sums.pop(), counts.pop()
            sums[-1] += s
            counts[-1] += c
    pmiss, pfa = [0.0], [1.0]
    miss, fa = 0.0, float(non.size)
    for s, c in zip(sums, counts, strict=True):
        miss += s
        fa -= c - s
        pmiss.append(miss / tar.size)
        pfa.append(fa / non.size)
    eer = 0.0
    for i in range(len(pfa) - 1):
        xy = np.array([[pfa[i], pmiss[i]], [pfa[i + 1], pmiss[i + 1]]])
        if np.min(np.abs(xy[0] - xy[1])) == 0:
            continue
        eer = max(eer, 1.0 / np.linalg.solve(xy, np.ones(2)).sum())
    return 100.0 * eer


def speechbrain_scan_eer(tar: Scores, non: Scores) -> float:
    """SpeechBrain's nearest-threshold EER definition, vectorized with searchsorted."""
    thresholds = np.unique(np.concatenate((tar, non)))
    thresholds = np.sort(np.concatenate((thresholds, (thresholds[:-1] + thresholds[1:]) / 2)))
    frr = np.searchsorted(np.sort(tar), thresholds, side="right") / tar.size
    far = (non.size - np.searchsorted(np.sort(non), thresholds, side="right")) / non.size
    best = int(np.argmin(np.abs(far - frr)))
    return 100.0 * float(far[best] + frr[best]) / 2.0


def speechbrain_eer(tar: Scores, non: Scores) -> float:
    import torch
    from speechbrain.utils.metric_stats import EER

    eer, _ = EER(torch.from_numpy(tar), torch.from_numpy(non))
    return 100.0 * eer


def warm_up_speechbrain() -> None:
    """Import torch / SpeechBrain before timing anything."""
    import torch

    torch.set_num_threads(1)
    speechbrain_eer(np.array([1.0, 2.0]), np.array([0.0, 1.5]))


def timed(
    function: Callable[[Scores, Scores], float], tar: Scores, non: Scores, repeats: int
) -> tuple[float, float]:
    """(best wall time in seconds, EER in percent)."""
    best, value = np.inf, np.nan
    for _ in range(repeats):
        start = time.perf_counter()
        value = function(tar, non)
        best = min(best, time.perf_counter() - start)
    return best, value


def scores_of_size(n: int, seed: int = 0) -> tuple[Scores, Scores]:
    rng = np.random.default_rng(seed)
    n_tar = n // 10
    return rng.normal(2.0, 1.0, n_tar), rng.normal(0.0, 1.0, n - n_tar)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (seconds)")
    args = parser.parse_args()
    sizes = [3 * 10**3, 10**5] if args.quick else [10**4, 10**5, 10**6, 10**7]
    reference_max = 10**5 if args.quick else 10**7
    speechbrain_max = 10**4  # O(n^2): about 10 s at 10^4 scores

    header = (
        f"{'n scores':>10} | {'compute_eer':>11} | {'reference':>11} {'ratio':>7} | "
        f"{'SB scan (vec)':>13} {'ratio':>6} | {'SpeechBrain':>11} {'ratio':>7} | "
        f"{'EER %':>8} {'ref EER %':>9} {'SB EER %':>8}"
    )
    warm_up_speechbrain()
    print(header)
    print("-" * len(header))
    for n in sizes:
        tar, non = scores_of_size(n)
        repeats = 3 if n <= 10**6 else 2
        t_fast, eer_fast = timed(lambda a, b: compute_eer(a, b).eer_percent, tar, non, repeats)
        t_scan, eer_scan = timed(speechbrain_scan_eer, tar, non, repeats)
        ref_cells = f"{'-':>11} {'-':>7}"
        eer_ref_cell = f"{'-':>9}"
        if n <= reference_max:
            t_ref, eer_ref = timed(reference_rocch_eer, tar, non, 1)
            ref_cells = f"{1e3 * t_ref:>8.1f} ms {t_ref / t_fast:>6.1f}x"
            eer_ref_cell = f"{eer_ref:>9.4f}"
            assert abs(eer_ref - eer_fast) < 1e-9, (eer_ref, eer_fast)
        sb_cells = f"{'-':>11} {'-':>7}"
        if n <= speechbrain_max:
            t_sb, eer_sb = timed(speechbrain_eer, tar, non, 1)
            sb_cells = f"{1e3 * t_sb:>8.0f} ms {t_sb / t_fast:>6.0f}x"
            assert abs(eer_sb - eer_scan) < 1e-3, (eer_sb, eer_scan)
        print(
            f"{n:>10.0e} | {1e3 * t_fast:>8.1f} ms | {ref_cells} | {1e3 * t_scan:>10.1f} ms "
            f"{t_scan / t_fast:>5.1f}x | {sb_cells} | {eer_fast:>8.4f} {eer_ref_cell} "
            f"{eer_scan:>8.4f}"
        )
    print(
        "ratio = time of the other method / time of compute_eer (one core, best of repeats).\n"
        "SB EER % is SpeechBrain's definition (nearest threshold, (FAR + FRR) / 2); "
        "SpeechBrain's own EER agrees with the vectorized scan where both ran."
    )


if __name__ == "__main__":
    main()
