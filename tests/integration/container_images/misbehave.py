"""A test anonymizer image entrypoint that misbehaves on purpose: ``misbehave.py MODE``.

Every mode first reads the job (contract v1). ``copy`` modes write each input as its output.
probe: copy, and record what the sandbox looks like in metadata.json.
network: try to reach the outside; copy, and record the error in metadata.json (exit 3 if a
  connection succeeded). memory: allocate far beyond the limit. sleep: sleep for an hour.
escape: try to write outside the output folder, then leave a symlink as an output.
omit: copy all but the last utterance. exit: print a message and exit 3.
wrongrate: write 8 kHz WAVs. flood: write one file into the output folder as fast as possible
  until a write fails, and report how far it got.
"""

import json
import os
import shutil
import socket
import sys
import time
import wave
from pathlib import Path

mode = sys.argv[1]
job = json.loads(Path(os.environ["UNMASK_JOB_FILE"]).read_text())
inp, out = Path(job["input_dir"]), Path(job["output_dir"])
utts = job["utterances"]
meta = {}


def copy(items):
    for u in items:
        shutil.copyfile(inp / u["file"], out / u["output"])


def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return f"{type(exc).__name__}: errno {exc.errno}"


def cgroup(v2_name, *v1_names):
    """A cgroup file's value: cgroup v2's ``v2_name``, else v1's files joined by a space."""
    root = Path("/sys/fs/cgroup")
    if (root / v2_name).exists():
        return (root / v2_name).read_text().strip()
    if v1_names and all((root / n).exists() for n in v1_names):
        return " ".join((root / n).read_text().strip() for n in v1_names)
    return None


def mount_options(target):
    """The options of the mount at ``target`` (mount options + super options), from mountinfo."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == target:
            return sorted(set(fields[5].split(",")) | set(fields[-1].split(",")))
    return None


def run_from_tmp():
    """Try to execute a file in /tmp (in a child): 'ok' or the error."""
    script = Path("/tmp/run.sh")
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    try:
        os.posix_spawn(str(script), [str(script)], {})
    except OSError as exc:
        return f"{type(exc).__name__}: errno {exc.errno}"
    os.wait()
    return "ok"


if mode == "probe":
    status = Path("/proc/self/status").read_text()
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    meta = {
        "seccomp": fields.get("Seccomp", "").strip(),
        "pids_max": cgroup("pids.max", "pids/pids.max"),
        "cpu_max": cgroup("cpu.max", "cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us"),
        "tmp_mount": mount_options("/tmp"),
        "shm_mount": mount_options("/dev/shm"),
        "exec_tmp": run_from_tmp(),
        "uid": os.getuid(),
        "gid": os.getgid(),
        "cap_eff": fields["CapEff"].strip(),
        "no_new_privs": fields.get("NoNewPrivs", "").strip(),
        "env": sorted(os.environ),
        "interfaces": sorted(
            line.split(":")[0].strip()
            for line in Path("/proc/net/dev").read_text().splitlines()[2:]
        ),
        "sockets": [
            p
            for p in ("/run/unmask-podman.sock", "/var/run/docker.sock", "/run/podman/podman.sock")
            if os.path.exists(p)
        ],
        "write_root": attempt(lambda: Path("/evil").write_text("x")),
        "write_input": attempt(lambda: (inp / "evil").write_text("x")),
        "write_tmp": attempt(lambda: Path("/tmp/ok").write_text("x")),
        "memory_max": Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if Path("/sys/fs/cgroup/memory.max").exists()
        else Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").read_text().strip()
        if Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists()
        else None,
    }
    copy(utts)
elif mode == "network":
    results = {}
    for host, port in (("1.1.1.1", 53), ("8.8.8.8", 443), ("10.0.2.2", 80)):
        try:
            socket.create_connection((host, port), timeout=3).close()
            results[f"{host}:{port}"] = "connected"
        except OSError as exc:
            results[f"{host}:{port}"] = f"errno {exc.errno}"
    try:
        socket.getaddrinfo("deb.debian.org", 80)
        results["dns"] = "resolved"
    except OSError as exc:
        results["dns"] = f"failed: {exc}"
    print(results)
    meta = {"network": results}
    if any(v in ("connected", "resolved") for v in results.values()):
        sys.exit(3)
    copy(utts)
elif mode == "memory":
    blocks = []
    while True:
        blocks.append(bytearray(64 * 1024 * 1024))
        print(f"allocated {len(blocks) * 64} MiB", flush=True)
elif mode == "sleep":
    print("sleeping", flush=True)
    time.sleep(3600)
elif mode == "escape":
    for target in ("/evil", str(inp / "evil"), "/unmask/evil"):
        print(target, attempt(lambda t=target: Path(t).write_text("x")), flush=True)
    copy(utts[1:])
    os.symlink(str(inp / utts[0]["file"]), out / utts[0]["output"])
elif mode == "omit":
    copy(utts[:-1])
elif mode == "exit":
    print("model weights not found: /opt/model.bin", file=sys.stderr, flush=True)
    sys.exit(3)
elif mode == "flood":
    written, chunk = 0, b"\0" * (1 << 20)
    try:
        with open(out / "flood.bin", "wb", buffering=0) as f:
            while written < (1 << 34):
                written += f.write(chunk)
        print(f"flood wrote {written} bytes", flush=True)
    except OSError as exc:
        print(f"flood stopped at {written} bytes: errno {exc.errno}", flush=True)
elif mode == "wrongrate":
    for u in utts:
        with wave.open(str(inp / u["file"])) as r, wave.open(str(out / u["output"]), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(8000)
            w.writeframes(r.readframes(r.getnframes())[::2])
if meta:
    (out / "metadata.json").write_text(json.dumps(meta))
