"""Benchmark: speed beside other busy processes, the old thread policy against the current one.

One ECAPA-TDNN training step (fbank front end, channels 256/768, 192-dim embeddings, AAM
classifier head, Adam; batch 16 crops of 3 s at 16 kHz, 80 mels) timed in a fresh child process
per cell, with 0, 1 and 2 busy processes (``while True: pass``) started beside it. Policies:

- ``old``: what Unmask did before: torch's default threads (every CPU), OpenMP's default wait
  (libgomp spins a while at each barrier).
- ``new``: the current entry-point rule (``services.threads``): ``OMP_WAIT_POLICY=PASSIVE`` and
  ``OMP_NUM_THREADS`` = the CPUs this process may really use, set before torch loads.
- ``1thread``: one thread, default wait (the old workaround).
- ``late``: ``OMP_WAIT_POLICY=PASSIVE`` set *after* ``import torch`` (shows that it has no
  effect: the runtime read its environment when it loaded).
- ``setafter``: the old policy, then ``torch.set_num_threads(1)`` after import.

Ratios are against the same policy's idle cell and against ``old`` at the same load, all
measured in this one run. ``--quick-example`` also times ``unmask evaluate
examples/configs/quick-pitch.yaml`` (fresh stage store each time) idle and beside one busy
process, per policy (minutes each).

    .venv/bin/python benchmarks/contention.py --steps 3
    .venv/bin/python benchmarks/contention.py --policies old new 1thread late --busy 0 1 2
    .venv/bin/python benchmarks/contention.py --quick-example --policies old new --busy 0 1

The machine's load average is printed before and after: another process's load is contention
too, so an idle baseline is only idle on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ("old", "new", "1thread", "late", "setafter")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MKL_NUM_THREADS")


def clean_env() -> dict[str, str]:
    """The environment without thread settings (nothing of the caller's leaks into a cell)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in THREAD_VARIABLES and not k.startswith("UNMASK_")
    }
    env["PYTHONPATH"] = str(ROOT)
    return env


def policy_env(policy: str) -> dict[str, str]:
    """The child's environment for ``policy`` (the ``new`` child sets its own, as the CLI does)."""
    env = clean_env()
    if policy == "1thread":
        env["OMP_NUM_THREADS"] = "1"
    if policy == "old":
        env["UNMASK_OMP_WAIT_POLICY"] = "unset"
    return env


def child_step(policy: str, steps: int, batch: int, seconds: float) -> None:
    """In the child: set up threads per ``policy``, then time ``steps`` training steps (after one
    warm-up step); prints one JSON line."""
    if policy == "new":
        from services.settings import prepare_thread_environment

        prepare_thread_environment()
    import torch

    if policy == "late":
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    if policy == "setafter":
        torch.set_num_threads(1)
    if policy == "new":
        from services.settings import apply_thread_settings

        apply_thread_settings()
    from services.attacker.models import CosineHead, SpeakerEncoder
    from services.attacker.presets import ModelPreset

    torch.manual_seed(0)
    preset = ModelPreset(
        name="contention",
        architecture="ecapa",
        channels=(256, 256, 256, 256, 768),
        embedding_dim=192,
    )
    encoder = SpeakerEncoder(preset)
    head = CosineHead(preset.embedding_dim, 40)
    params = list(encoder.parameters()) + list(head.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-3)
    wavs = torch.randn(batch, int(seconds * 16_000)) * 0.1
    labels = torch.randint(0, 40, (batch,))
    times: list[float] = []
    for step in range(steps + 1):
        start = time.perf_counter()
        optimizer.zero_grad()
        logits = head(encoder(wavs))
        loss = torch.nn.functional.cross_entropy(logits * 30.0, labels)
        loss.backward()
        optimizer.step()
        if step > 0:
            times.append(time.perf_counter() - start)
    print(
        json.dumps(
            {
                "policy": policy,
                "threads": torch.get_num_threads(),
                "wait": os.environ.get("OMP_WAIT_POLICY", "default"),
                "median_s": statistics.median(times),
                "times": times,
            }
        )
    )


def start_busy(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` processes that each keep one CPU busy (pure Python loop)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.kill()
    for process in processes:
        process.wait()


def run_cell(policy: str, busy: int, args: argparse.Namespace) -> dict[str, object]:
    """One child process timing the step beside ``busy`` busy processes."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        policy,
        "--steps",
        str(args.steps),
        "--batch",
        str(args.batch),
        "--seconds",
        str(args.seconds),
    ]
    busy_processes = start_busy(busy)
    try:
        time.sleep(0.5)  # let the busy loops start
        out = subprocess.run(
            command, env=policy_env(policy), capture_output=True, text=True, check=True
        )
    finally:
        stop(busy_processes)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run_quick_example(policy: str, busy: int) -> float:
    """Wall seconds of the quick example (fresh stage store) under ``policy`` beside ``busy``."""
    env = policy_env(policy)
    if policy == "late" or policy == "setafter":
        raise SystemExit(f"--quick-example: policy {policy} applies to the step only")
    with tempfile.TemporaryDirectory(prefix="unmask-contention-") as tmp:
        env["UNMASK_DATA_DIR"] = tmp
        command = [
            sys.executable,
            "-m",
            "cli.main",
            "evaluate",
            str(ROOT / "examples/configs/quick-pitch.yaml"),
            "--out",
            str(Path(tmp) / "out"),
        ]
        busy_processes = start_busy(busy)
        try:
            start = time.perf_counter()
            subprocess.run(command, env=env, cwd=ROOT, capture_output=True, check=True)
            return time.perf_counter() - start
        finally:
            stop(busy_processes)


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def table(
    results: dict[tuple[str, int], float], policies: list[str], busy: list[int], unit: str
) -> str:
    """Rows: policy x busy; columns: time, ratio to the policy's idle cell, ratio to old."""
    lines = [f"{'policy':<10} {'busy':>4} {unit:>10} {'x idle':>7} {'x old':>7}"]
    for policy in policies:
        for n in busy:
            value = results.get((policy, n))
            if value is None:
                continue
            idle = results.get((policy, 0))
            old = results.get(("old", n))
            x_idle = f"{value / idle:7.2f}" if idle else "      -"
            x_old = f"{value / old:7.2f}" if old else "      -"
            lines.append(f"{policy:<10} {n:>4} {value:>10.2f} {x_idle} {x_old}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=POLICIES, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=3, help="timed steps per cell (+1 warm-up)")
    parser.add_argument("--batch", type=int, default=16, help="crops per step")
    parser.add_argument("--seconds", type=float, default=3.0, help="crop length (s)")
    parser.add_argument("--policies", nargs="+", choices=POLICIES, default=["old", "new"])
    parser.add_argument("--busy", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument(
        "--quick-example",
        action="store_true",
        help="also time the quick example (examples/configs/quick-pitch.yaml) per policy, "
        "idle and beside one busy process (minutes per cell)",
    )
    args = parser.parse_args()
    if args.child:
        child_step(args.child, args.steps, args.batch, args.seconds)
        return
    if 0 not in args.busy:
        parser.error("--busy must include 0 (the idle cell every ratio is taken against)")
    print(f"before: {load_line()}", flush=True)
    steps: dict[tuple[str, int], float] = {}
    info: dict[str, str] = {}
    for n in args.busy:
        for policy in args.policies:
            result = run_cell(policy, n, args)
            steps[(policy, n)] = float(result["median_s"])  # type: ignore[arg-type]
            info[policy] = (
                f"{result['threads']} thread(s), OMP_WAIT_POLICY {result['wait']} (environment)"
            )
            print(f"  {policy} beside {n}: {steps[(policy, n)]:.2f} s/step", flush=True)
    print(f"after steps: {load_line()}")
    print(
        f"\nECAPA-TDNN training step (batch {args.batch} x {args.seconds:g} s, 80 mels, "
        f"channels 256/768), median of {args.steps} steps after 1 warm-up"
    )
    for policy in args.policies:
        print(f"  {policy}: {info[policy]}")
    print(table(steps, args.policies, args.busy, "s/step"))
    if args.quick_example:
        examples: dict[tuple[str, int], float] = {}
        cells = [n for n in args.busy if n <= 1]
        for n in cells:
            for policy in args.policies:
                examples[(policy, n)] = run_quick_example(policy, n)
                print(f"  quick example {policy} beside {n}: {examples[(policy, n)]:.0f} s")
        print(f"after quick example: {load_line()}")
        print("\nquick example (examples/configs/quick-pitch.yaml, fresh stage store), wall s")
        print(table(examples, args.policies, cells, "wall s"))


if __name__ == "__main__":
    main()
