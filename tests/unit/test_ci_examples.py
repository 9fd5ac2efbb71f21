"""The CI examples (GitHub composite action, GitLab job) install the `unmask-client` package
alone and only use options its `unmask-submit` command has (the flags of `unmask submit`)."""

from __future__ import annotations

import re
from pathlib import Path

import typer
import yaml

from cli.submit import run_standalone, submit_command
from unmask_client import submit as client_submit

ROOT = Path(__file__).resolve().parents[2]


def _submit_options() -> set[str]:
    """The options of the client package's `unmask-submit`, which the examples run."""
    parser = client_submit.build_parser()
    return {opt for action in parser._actions for opt in action.option_strings}


def _cli_submit_options() -> set[str]:
    app = typer.Typer()
    app.command()(submit_command)
    command = typer.main.get_command(app)
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}


def test_the_client_command_has_the_flags_of_unmask_submit_for_the_common_path() -> None:
    # Not in the client's command: none (each flag of `unmask submit` is there too).
    missing = (
        _cli_submit_options() - _submit_options() - {"--install-completion", "--show-completion"}
    )
    assert not missing, missing


def test_examples_install_the_client_package_alone_and_run_its_command() -> None:
    action = (ROOT / "examples/github-action/action.yml").read_text()
    gitlab = (ROOT / "examples/gitlab-ci.yml").read_text()
    for text in (action, gitlab):
        assert "clients/python" in text and "unmask-submit" in text
        assert "cli.submit" not in text and "PYTHONPATH" not in text
        (install,) = [line for line in text.splitlines() if "pip install" in line]
        command = install.split("#")[0].strip().rstrip('"')
        assert command.endswith("clients/python"), install  # that one package, nothing else
    pyproject = (ROOT / "clients/python/pyproject.toml").read_text()
    assert 'unmask-submit = "unmask_client.submit:run"' in pyproject


def _flags(script: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", script))


def test_github_action_is_a_composite_action_using_only_known_options() -> None:
    action = yaml.safe_load((ROOT / "examples/github-action/action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert {"url", "token", "protocol", "min-eer", "max-srd-meand"} <= set(action["inputs"])
    assert all(action["inputs"][name]["required"] for name in ("url", "protocol"))
    # No token: the run's OpenID Connect ID token is exchanged (a trusted submitter).
    assert action["inputs"]["token"]["required"] is False
    script = next(s["run"] for s in action["runs"]["steps"] if s.get("id") == "submit")
    used = _flags(script) - {"--quiet"}
    assert used and used <= _submit_options(), used - _submit_options()
    for step in action["runs"]["steps"]:  # inputs reach the shell through env, not inlined
        assert "${{ inputs." not in step.get("run", "")


def test_gitlab_job_uses_only_known_options() -> None:
    job = yaml.safe_load((ROOT / "examples/gitlab-ci.yml").read_text())["unmask-privacy-gate"]
    script = " ".join(job["script"])
    used = _flags(script)
    assert "--min-eer" in used and used <= _submit_options(), used - _submit_options()
    assert job["allow_failure"]["exit_codes"] == [3]


def test_standalone_entry_point_reports_usage_errors_with_exit_code_2() -> None:
    assert run_standalone(["--no-such-option"]) == client_submit.EXIT_BAD_INPUT
    assert (
        run_standalone(["--protocol", "p"]) == client_submit.EXIT_BAD_INPUT
    )  # no anonymizer given
