"""Every `unmask` command, given bad input, exits 2 with ONE line on stderr and no traceback.

The commands are discovered from the typer app in cli/main.py, so a new command is walked
automatically: first with a generic bad invocation (every required parameter given a file of
random bytes), then with the curated cases of ``CASES`` (garbage files, directories where a
file belongs, an empty config, a missing container engine, a wrong ``--model``). A discovered
command without curated cases fails the test, so nobody forgets to add them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import typer.main

from cli.main import app, main
from services.settings import get_settings


def _commands() -> list[tuple[str, ...]]:
    """Every leaf command of the app, as its word path (``("corpus", "import")``)."""
    root = typer.main.get_command(app)
    ctx = typer.Context(root)  # type: ignore[arg-type]
    found: list[tuple[str, ...]] = []

    def walk(cmd: object, path: tuple[str, ...]) -> None:
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), (*path, name))
        else:
            found.append(path)

    walk(root, ())
    return found


def _required(path: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    """(name, option strings) of the command's required parameters ([] opts = an argument)."""
    root = typer.main.get_command(app)
    ctx = typer.Context(root)  # type: ignore[arg-type]
    cmd: object = root
    for word in path:
        cmd = cmd.get_command(ctx, word)  # type: ignore[attr-defined]
    out = []
    for p in cmd.params:  # type: ignore[attr-defined]
        if p.required:
            out.append((p.name, [] if p.param_type_name == "argument" else list(p.opts)))
    return out


@pytest.fixture(scope="module")
def tiny_protocol(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A real 6-speaker protocol and its anonymized trials (for a wrong ``--model``)."""
    root = tmp_path_factory.mktemp("tiny")
    assert (
        main(["corpus", "synth", "--out", str(root / "c"), "--speakers", "6", "--utterances", "4"])
        == 0
    )
    args = ["--attacker-speakers", "2", "--eval-speakers", "2", "--target-speakers", "2"]
    proto = root / "c" / "protocol.json"
    assert (
        main(
            [
                "corpus",
                "protocol",
                str(root / "c" / "manifest.jsonl"),
                "--out",
                str(proto),
                *args,
                "--enrollments",
                "2",
                "--trials",
                "2",
            ]
        )
        == 0
    )
    anon = root / "anon"
    assert (
        main(
            [
                "anonymize",
                "--anonymizer",
                "pitch",
                "--protocol",
                str(proto),
                "--out",
                str(anon),
                "--set",
                "trial",
            ]
        )
        == 0
    )
    return {
        "protocol": str(proto),
        "anon": str(anon),
        "manifest": str(root / "c" / "manifest.jsonl"),
    }


@pytest.fixture()
def bad(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_protocol: dict[str, str]
) -> Iterator[dict[str, str]]:
    """Bad inputs on disk, and an environment that reaches no real service."""
    rng = np.random.default_rng(0)
    files = {
        "garbage": tmp_path / "garbage.bin",
        "empty": tmp_path / "empty.yaml",
        "comments": tmp_path / "comments.yaml",
        "dir": tmp_path / "a-directory",
        "npy": tmp_path / "emb.npy",
        "missing": tmp_path / "does-not-exist.yaml",
        "badcfg": tmp_path / "bad.yaml",
    }
    files["garbage"].write_bytes(rng.bytes(4096))
    files["empty"].write_text("")
    files["comments"].write_text("# nothing but a comment\n")
    files["dir"].mkdir()
    np.save(files["npy"], rng.normal(size=(4, 3)))
    files["container"] = tmp_path / "container.yaml"
    files["container"].write_text("anonymizer:\n  kind: container\n  image: example@sha256:00\n")
    files["sizes"] = tmp_path / "sizes.yaml"
    files["sizes"].write_text("synthetic:\n  n_speakers: 12\n  utts_per_speaker: 6\n")
    files["badcfg"].write_text(
        "anonymizer:\n  name: no-such-anonymizer\nseeds: []\nscenarios: [bogus]\n"
    )
    monkeypatch.setenv("UNMASK_DATA_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("UNMASK_DATABASE_URL", f"sqlite:///{tmp_path / 'no-schema.db'}")
    monkeypatch.setenv("UNMASK_CONTAINER_ENGINE_URL", f"unix://{tmp_path / 'no-engine.sock'}")
    monkeypatch.setenv("UNMASK_URL", "http://127.0.0.1:9")  # nothing listens on port 9
    monkeypatch.setenv("UNMASK_TOKEN", "unmask_bad")
    get_settings.cache_clear()
    yield {**{k: str(v) for k, v in files.items()}, **tiny_protocol}
    get_settings.cache_clear()


# Curated bad invocations per command; "{garbage}" etc. are filled from the fixture above.
CASES: dict[tuple[str, ...], list[list[str]]] = {
    ("anonymize",): [
        ["anonymize", "--anonymizer", "pitch", "--protocol", "{garbage}", "--out", "{dir}/o"],
        ["anonymize", "--anonymizer", "nope", "--protocol", "{garbage}", "--out", "{dir}/o"],
        ["anonymize", "--anonymizer", "pitch", "--protocol", "{dir}", "--out", "{dir}/o"],
    ],
    ("evaluate",): [
        ["evaluate", "{garbage}"],
        ["evaluate", "{empty}"],
        ["evaluate", "{comments}"],
        ["evaluate", "{dir}"],
        ["evaluate", "{missing}"],
        ["evaluate", "{badcfg}"],
        ["evaluate", "{container}"],
        ["evaluate", "{sizes}"],
    ],
    ("demo",): [["demo", "--out", "{garbage}"]],
    ("export",): [
        ["export", "{dir}", "--out", "{dir}/vpc"],
        ["export", "{garbage}", "--out", "{dir}/vpc"],
        ["export", "{dir}", "--out", "{dir}/vpc", "--format", "csv"],
    ],
    # (submit's exit 3 = the server failed or is unreachable: not bad input, not walked here)
    ("submit",): [
        ["submit", "--protocol", "p", "--builtin", "pitch", "--override", "{garbage}"],
        ["submit", "--protocol", "p", "--builtin", "pitch", "--image", "x"],
        ["submit", "--protocol", "p", "--builtin", "pitch", "--param", "no-equals-sign"],
    ],
    ("phases",): [["phases", "--protocol", "Not A Name!"]],
    ("admin", "protocol", "register"): [
        ["admin", "protocol", "register", "p", "{garbage}"],
        ["admin", "protocol", "register", "p", "{dir}"],
    ],
    ("admin", "protocol", "list"): [["admin", "protocol", "list", "--no-such-option"]],
    ("admin", "phase", "add"): [
        ["admin", "phase", "add", "dev", "-p", "p", "--starts-at", "tomorrow"],
        ["admin", "phase", "add", "dev", "-p", "Not A Name!"],
    ],
    ("admin", "phase", "update"): [["admin", "phase", "update", "dev", "-p", "Not A Name!"]],
    ("admin", "phase", "list"): [["admin", "phase", "list", "-p", "Not A Name!"]],
    ("admin", "phase", "delete"): [["admin", "phase", "delete", "dev", "-p", "Not A Name!"]],
    ("rerun-outdated",): [["rerun-outdated", "--protocol", "{garbage}"]],
    ("corpus", "import"): [
        ["corpus", "import", "{garbage}", "--out", "{dir}/m.jsonl", "--layout", "csv"],
        ["corpus", "import", "{garbage}", "--out", "{dir}/m.jsonl", "--layout", "jsonl"],
        ["corpus", "import", "{dir}", "--out", "{dir}/m.jsonl", "--layout", "librispeech"],
        ["corpus", "import", "{dir}", "--out", "{dir}/m.jsonl", "--layout", "folder"],
        ["corpus", "import", "{dir}", "--out", "{dir}/m.jsonl", "--layout", "kaldi"],
    ],
    ("corpus", "synth"): [["corpus", "synth", "--out", "{garbage}", "--speakers", "1"]],
    ("corpus", "protocol"): [
        ["corpus", "protocol", "{garbage}", "--out", "{dir}/p.json"],
        ["corpus", "protocol", "{manifest}", "--out", "{dir}/p.json", "--vpc-lists", "{dir}"],
        ["corpus", "protocol", "{dir}", "--out", "{dir}/p.json"],
    ],
    ("corpus", "validate"): [
        ["corpus", "validate", "{garbage}"],
        ["corpus", "validate", "{dir}"],
    ],
    ("admin", "create-team"): [["admin", "create-team", "Not A Slug!"]],
    ("admin", "create-token"): [["admin", "create-token", "--team", "nobody"]],
    ("admin", "revoke-token"): [["admin", "revoke-token", "999"]],
    ("container", "check"): [["container", "check", "example@sha256:abc"]],
    ("analyses", "size-study"): [
        ["analyses", "size-study", "--embeddings", "{garbage}", "--out", "{dir}/o"],
        ["analyses", "size-study", "--embeddings", "{npy}", "--out", "{dir}/o"],
        ["analyses", "size-study", "--embeddings", "{dir}", "--out", "{dir}/o"],
    ],
    ("analyses", "srd"): [
        ["analyses", "srd", "--manifest", "{garbage}", "--out", "{dir}/o"],
        ["analyses", "srd", "--manifest", "{dir}", "--out", "{dir}/o"],
        [
            "analyses",
            "srd",
            "--manifest",
            "{anon}/trial/manifest.jsonl",
            "--out",
            "{dir}/o",
            "--embeddings",
            "x={npy}",
            "--representation",
            "embeddings",
        ],
        [
            "analyses",
            "srd",
            "--manifest",
            "{anon}/trial/manifest.jsonl",
            "--out",
            "{dir}/o",
            "--embeddings",
            "x={garbage}",
            "--representation",
            "embeddings",
        ],
    ],
    ("analyses", "prerestore"): [
        [
            "analyses",
            "prerestore",
            "--model",
            "{garbage}",
            "--protocol",
            "{garbage}",
            "--out",
            "{dir}/o",
        ],
        # a wrong file as --model: random bytes, then a JSON file
        [
            "analyses",
            "prerestore",
            "--model",
            "{garbage}",
            "--protocol",
            "{protocol}",
            "--anonymized-dir",
            "{anon}",
            "--out",
            "{dir}/o",
        ],
        [
            "analyses",
            "prerestore",
            "--model",
            "{protocol}",
            "--protocol",
            "{protocol}",
            "--anonymized-dir",
            "{anon}",
            "--out",
            "{dir}/o",
        ],
    ],
}


def _check_one_line(code: int, err: str, argv: list[str]) -> None:
    lines = err.strip().splitlines()
    assert code == 2, f"{argv}: exit {code}, stderr {err!r}"
    assert len(lines) == 1, f"{argv}: stderr has {len(lines)} lines:\n{err}"
    # "unmask: ", or the command's words: "unmask submit: ", "unmask admin phase add: ".
    prefixes = ["unmask: "] + [f"unmask {' '.join(argv[:n])}: " for n in (1, 2, 3)]
    assert lines[0].startswith(tuple(prefixes)), f"{argv}: {lines[0]!r}"
    assert "Traceback" not in err


def test_every_command_has_curated_bad_input() -> None:
    missing = sorted(set(_commands()) - set(CASES))
    assert not missing, f"add bad-input cases to CASES for: {missing}"
    stale = sorted(set(CASES) - set(_commands()))
    assert not stale, f"CASES names commands that do not exist: {stale}"


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p))
def test_generic_bad_input(
    path: tuple[str, ...], bad: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Every required parameter given a file of random bytes (or the command with nothing)."""
    argv = list(path)
    for _name, opts in _required(path):
        argv += [opts[0], bad["garbage"]] if opts else [bad["garbage"]]
    if argv == list(path):
        argv += ["--no-such-option"]
    capsys.readouterr()
    code = main(argv)
    _check_one_line(code, capsys.readouterr().err, argv)


@pytest.mark.parametrize(
    "argv",
    [case for cases in CASES.values() for case in cases],
    ids=lambda a: " ".join(x.split("/")[-1] for x in a),
)
def test_curated_bad_input(
    argv: list[str], bad: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    filled = [a.format(**bad) for a in argv]
    capsys.readouterr()
    code = main(filled)
    _check_one_line(code, capsys.readouterr().err, filled)


def test_the_default_token_key_with_a_server_database_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("UNMASK_DATABASE_URL", "postgresql+psycopg://u@127.0.0.1:9/unmask")
    monkeypatch.setenv("UNMASK_ALLOW_DEV_TOKEN_HMAC_KEY", "0")
    monkeypatch.delenv("UNMASK_TOKEN_HMAC_KEY", raising=False)
    get_settings.cache_clear()
    try:
        assert main(["admin", "create-team", "lab"]) == 2
    finally:
        get_settings.cache_clear()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("unmask: UNMASK_TOKEN_HMAC_KEY: the default")
