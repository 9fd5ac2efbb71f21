"""`unmask submit`: evaluate an anonymizer on an Unmask server and gate CI on the verdict.

(Integrators' CI runs the same gate from the `unmask-client` package alone: `unmask-submit`,
unmask_client/submit.py.)

Reads ``UNMASK_URL`` and ``UNMASK_TOKEN`` (a token with the ``submit`` and ``read`` scopes; in
GitHub Actions with ``id-token: write`` and no ``UNMASK_TOKEN``, a short-lived token exchanged for
the run's OpenID Connect ID token, unmask_client/oidc.py), submits a built-in anonymizer, a
container image or a pre-anonymized archive, starts a job on a protocol, shows its progress,
prints the result table and checks the thresholds.

Exit codes (docs/ci.md):

- 0: the job succeeded and every threshold passed (or ``--no-wait``: the job was queued);
- 1: the job succeeded but a threshold failed (or a thresholded metric is missing);
- 2: bad input or usage (missing URL/token, bad option, the API refused the request with 4xx
  other than auth, e.g. an unknown protocol or an invalid parameter);
- 3: the job failed or was cancelled, the API was unreachable or answered 401/403/5xx, or the
  wait timed out.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.measure import Measurement

from cli.client import (
    Thresholds,
    UnmaskApiError,
    UnmaskClient,
    UnmaskConfigError,
    check_thresholds,
)
from cli.result_table import rows_table
from cli.verdict import print_verdict
from services.vocab import HEADLINE_SCENARIOS, RunState
from unmask_client.submit import (
    EXIT_BAD_INPUT,
    EXIT_JOB_OR_API_FAILED,
    EXIT_PASSED,
    EXIT_THRESHOLDS_FAILED,
    exit_for_status,
    parse_param,
    require_trustworthy,
    write_json,
)

err = Console(stderr=True)
out = Console()


def _parse_param(text: str, flag: str = "--param") -> tuple[str, Any]:
    """:func:`unmask_client.submit.parse_param`, its refusal as bad input."""
    try:
        return parse_param(text, flag)
    except ValueError as exc:
        raise UnmaskConfigError(str(exc)) from None


def _finite_seconds(value: float) -> float:
    """A ``--poll`` / ``--timeout``: a finite number of seconds, not below 0."""
    if not math.isfinite(value) or value < 0:
        raise typer.BadParameter(f"{value} is not a number of seconds (0 or more)")
    return value


TIMEOUT_OPTION = typer.Option(
    6 * 3600.0, "--timeout", help="Longest wait, seconds.", callback=_finite_seconds
)
POLL_OPTION = typer.Option(
    10.0, "--poll", help="Seconds between status polls.", callback=_finite_seconds
)


def _parse_override(text: str) -> dict[str, Any]:
    """``training.epochs=3`` -> ``{"training": {"epochs": 3}}``."""
    path, value = _parse_param(text, "--override")
    result: dict[str, Any] = {}
    cursor = result
    parts = path.split(".")
    for part in parts[:-1]:
        cursor = cursor.setdefault(part, {})
    cursor[parts[-1]] = value
    return result


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def print_results_table(
    results: list[dict[str, Any]], title: str, console: Console | None = None
) -> None:
    """Seed-aggregated metrics per scenario and back-end (stdout, or ``console``).

    On a terminal the table fits the terminal's width. Elsewhere (a CI log, a pipe: 80 columns
    by default) it is printed at its natural width, so no header or number is cut to "0.0…"."""
    console = console or out
    table = rows_table(results, title)
    if console.is_terminal:
        console.print(table)
        return
    natural = Measurement.get(console, console.options.update(max_width=10_000), table)
    width = console.width
    console.width = max(width, natural.maximum)  # print() never exceeds the console's width
    try:
        console.print(table)
    finally:
        console.width = width


class _ProgressPrinter:
    """One line per change of job state or stage (CI logs are not terminals)."""

    def __init__(self) -> None:
        self.last: str | None = None

    def __call__(self, job: dict[str, Any]) -> None:
        running = [s for s in job.get("stages", []) if s["state"] == RunState.RUNNING]
        done = sum(1 for s in job.get("stages", []) if s["state"] == RunState.SUCCEEDED)
        total = len(job.get("stages", []))
        stage = running[0] if running else None
        note = ""
        if stage is not None:
            lines = [line for line in (stage.get("log_tail") or "").splitlines() if line]
            note = f" {stage['name']} {stage['progress'] * 100:.0f}%"
            if lines:
                note += f" | {lines[-1][:80]}"
        line = f"job {job['id']}: {job['state']} ({done}/{total} stages){note}"
        if line != self.last:
            err.print(line, highlight=False, markup=False, soft_wrap=True)
            self.last = line


def _exit_for_api_error(exc: UnmaskApiError) -> int:
    return exit_for_status(exc.status)


def _submit_archive(
    client: UnmaskClient, name: str, archive: Path, protocol_id: int, visibility: str
) -> dict[str, Any]:
    """Upload an archive file, or a folder packed into a temporary tar first."""
    if not archive.is_dir():
        return client.submit_archive(name, archive, protocol_id, visibility=visibility)
    from services.anonymizers.archive_members import pack_folder

    with tempfile.TemporaryDirectory(prefix="unmask-archive-") as tmp:
        packed = pack_folder(archive, Path(tmp) / f"{archive.name}.tar")
        return client.submit_archive(name, packed, protocol_id, visibility=visibility)


def _finite_bound(value: float | None) -> float | None:
    """A threshold: a finite number (a NaN bound fails every comparison, so the gate would run
    the whole job and then fail it; an infinite one checks nothing)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


# The privacy thresholds `unmask submit` gates on (each optional; ``Thresholds``).
MIN_EER_OPTION = typer.Option(
    None, "--min-eer", help="Require EER % >= this.", callback=_finite_bound
)
MAX_SRD_MEAND_OPTION = typer.Option(
    None,
    "--max-srd-meand",
    help="Require SRD mean disclosure (bits) <= this.",
    callback=_finite_bound,
)
MAX_SRD_IDR_OPTION = typer.Option(
    None, "--max-srd-idr", help="Require SRD identification rate % <= this.", callback=_finite_bound
)
MIN_CLLR_OPTION = typer.Option(
    None, "--min-cllr", help="Require min Cllr (bits) >= this.", callback=_finite_bound
)
MAX_LINKABILITY_OPTION = typer.Option(
    None, "--max-linkability", help="Require linkability <= this.", callback=_finite_bound
)
MAX_WER_INCREASE_OPTION = typer.Option(
    None,
    "--max-wer-increase",
    help="Require the WER increase (points) <= this, and usable speech (utility).",
    callback=_finite_bound,
)
MAX_LINKABILITY_TOP1_OPTION = typer.Option(
    None,
    "--max-linkability-top1",
    help="Require the legal top-1 linkability % (headline N, L) <= this.",
    callback=_finite_bound,
)
MAX_SINGLING_OUT_OPTION = typer.Option(
    None,
    "--max-singling-out",
    help="Require the legal singling out % (headline N, L) <= this.",
    callback=_finite_bound,
)


def _parse_inputs(
    sources: tuple[str | None, str | None, Path | None], param: list[str], override: list[str]
) -> tuple[tuple[str | None, dict[str, Any], str | None, Path | None], dict[str, Any]]:
    """The submission's source (``builtin``, its parameters, ``image``, ``archive``: exactly one
    given) and the merged config overrides, from the options; ``UnmaskConfigError`` if bad."""
    builtin, image, archive = sources
    if len([s for s in sources if s is not None]) != 1:
        raise UnmaskConfigError("give exactly one of --builtin, --image, --archive")
    params = dict(_parse_param(p) for p in param)
    overrides: dict[str, Any] = {}
    for text in override:
        _merge(overrides, _parse_override(text))
    return (builtin, params, image, archive), overrides


def _create_submission(
    client: UnmaskClient,
    protocol_id: int,
    source: tuple[str | None, dict[str, Any], str | None, Path | None],
    name: str | None,
    visibility: str,
    wait_s: tuple[float, float],
) -> dict[str, Any]:
    """The submission of the one source given: a built-in (``builtin``, ``params``), a container
    ``image`` or an ``archive``; an archive is waited for (``wait_s``: timeout and poll in
    seconds) until the server accepted it, ``--no-wait`` or not: jobs need an accepted one."""
    builtin, params, image, archive = source
    timeout_s, poll_s = wait_s
    if builtin is not None:
        label = name or f"{builtin} {json.dumps(params, sort_keys=True)}"
        return client.submit_builtin(label, builtin, params, visibility=visibility)
    if image is not None:
        return client.submit_container(name or image, image, visibility=visibility)
    assert archive is not None
    submission = _submit_archive(client, name or archive.name, archive, protocol_id, visibility)
    err.print(f"submission {submission['id']}: validating the archive", markup=False)
    return client.wait_until_accepted(submission["id"], timeout_s=timeout_s, poll_s=poll_s)


def _gate(
    results: list[Any],
    trust: Any,
    thresholds: Thresholds,
    where: tuple[str, str | None],
    trustworthy_required: bool,
) -> Any:
    """The verdict on ``results`` for the thresholds at ``where`` (scenario, back-end or None for
    every one), with the report's trust check when ``trustworthy_required``; prints each check."""
    scenario, backend = where
    verdict = check_thresholds(results, thresholds, scenario=scenario, backend=backend)
    if trustworthy_required:
        require_trustworthy(verdict, trust)
    for line in verdict.checked:
        out.print(f"  pass  {line}", highlight=False, markup=False, soft_wrap=True)
    for line in verdict.failures:
        out.print(f"  FAIL  {line}", highlight=False, markup=False, soft_wrap=True)
    return verdict


def _start_job(
    client: UnmaskClient,
    submission: dict[str, Any],
    protocol: dict[str, Any],
    overrides: dict[str, Any],
    key_and_phase: tuple[str | None, str | None],
) -> dict[str, Any]:
    """Queue the job of ``submission`` on ``protocol`` (with the idempotency key and phase,
    ``key_and_phase``) and say where to follow it."""
    idempotency_key, phase = key_and_phase
    job = client.create_job(
        submission["id"],
        protocol["id"],
        config_overrides=overrides,
        idempotency_key=idempotency_key,
        phase=phase,
    )
    err.print(
        f"submission {submission['id']} ({submission['name']}), job {job['id']} on "
        f"protocol {protocol['name']} v{protocol['version']}: {client.url}/jobs/{job['id']}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    return job


def _job_failed(job: dict[str, Any], json_out: Path | None) -> int:
    """Report a job that ended without success (and write the JSON without results)."""
    err.print(
        f"job {job['id']} {job['state']}: {job.get('error_message') or ''}",
        markup=False,
        soft_wrap=True,
    )
    if not _wrote_json(json_out, job, [], None):
        return EXIT_BAD_INPUT
    return EXIT_JOB_OR_API_FAILED


def _print_verdict_line(verdict: Any, *, gated: bool) -> int:
    """The last line (PASS, FAIL, or nothing to gate on when no threshold was given) and the
    exit code."""
    if not gated:
        out.print("no thresholds given: nothing to gate on")
    elif verdict.passed:
        out.print("verdict: PASS")
    else:
        out.print("verdict: FAIL (thresholds not met)")
    return EXIT_PASSED if verdict.passed else EXIT_THRESHOLDS_FAILED


def submit_command(
    protocol: str = typer.Option(
        ..., "--protocol", "-p", help="Protocol name (latest version), name@VERSION or id."
    ),
    builtin: str | None = typer.Option(None, "--builtin", help="Built-in anonymizer name."),
    param: list[str] = typer.Option(
        [], "--param", help="Built-in parameter KEY=VALUE (JSON value), repeatable."
    ),
    image: str | None = typer.Option(
        None, "--image", help="Container image pinned by digest: name@sha256:<64 hex>."
    ),
    archive: Path | None = typer.Option(
        None,
        "--archive",
        help="Pre-anonymized audio for the protocol: an archive, or a folder (packed here; "
        "the Unmask layout or the VoicePrivacy <set><suffix>/wav/<utt>.wav).",
    ),
    name: str | None = typer.Option(None, "--name", help="Submission name (default: derived)."),
    public: bool = typer.Option(False, "--public", help="List it on the public leaderboard."),
    override: list[str] = typer.Option(
        [], "--override", help="Config override PATH=VALUE, e.g. training.epochs=3; repeatable."
    ),
    phase: str | None = typer.Option(
        None, "--phase", help="The protocol's phase to submit to (default: the one open now)."
    ),
    idempotency_key: str | None = typer.Option(
        None, "--idempotency-key", help="Retrying with the same key returns the same job."
    ),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="--no-wait: print the job id."),
    timeout_s: float = TIMEOUT_OPTION,
    poll_s: float = POLL_OPTION,
    min_eer: float | None = MIN_EER_OPTION,
    max_srd_meand: float | None = MAX_SRD_MEAND_OPTION,
    max_srd_idr: float | None = MAX_SRD_IDR_OPTION,
    min_cllr: float | None = MIN_CLLR_OPTION,
    max_linkability: float | None = MAX_LINKABILITY_OPTION,
    max_wer_increase: float | None = MAX_WER_INCREASE_OPTION,
    max_linkability_top1: float | None = MAX_LINKABILITY_TOP1_OPTION,
    max_singling_out: float | None = MAX_SINGLING_OUT_OPTION,
    scenario: str = typer.Option(
        HEADLINE_SCENARIOS[0], "--scenario", help="Scenario the thresholds apply to."
    ),
    backend: str | None = typer.Option(
        None, "--backend", help="Back-end the thresholds apply to (default: every one)."
    ),
    json_out: Path | None = typer.Option(
        None, "--json", help="Write job, results and verdict as JSON here."
    ),
    require_trustworthy: bool = typer.Option(
        False,
        "--require-trustworthy",
        help="Fail unless the report's trust check passed (see docs/evaluation.md).",
    ),
) -> int:
    """Submit an anonymizer, wait for its evaluation and check privacy thresholds."""
    thresholds = Thresholds(
        min_eer,
        max_srd_meand,
        max_srd_idr,
        min_cllr,
        max_linkability,
        max_wer_increase,
        max_linkability_top1=max_linkability_top1,
        max_singling_out=max_singling_out,
    )
    try:
        source, overrides = _parse_inputs((builtin, image, archive), param, override)
        visibility = "public" if public else "private"
        with UnmaskClient.from_env() as client:
            found = client.find_protocol(protocol)
            submission = _create_submission(
                client, found["id"], source, name, visibility, (timeout_s, poll_s)
            )
            job = _start_job(client, submission, found, overrides, (idempotency_key, phase))
            if not wait:
                out.print(job["id"])
                return EXIT_PASSED
            job = client.wait_for_job(
                job["id"], timeout_s=timeout_s, poll_s=poll_s, on_update=_ProgressPrinter()
            )
            if job["state"] != RunState.SUCCEEDED:
                return _job_failed(job, json_out)
            answer = client.results(job["id"])
            results, trust = answer["results"], answer.get("trust")
    except UnmaskConfigError as exc:
        err.print(f"unmask submit: {exc}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_BAD_INPUT
    except UnmaskApiError as exc:
        err.print(f"unmask submit: {exc}", highlight=False, markup=False, soft_wrap=True)
        return _exit_for_api_error(exc)
    print_results_table(results, f"job {job['id']}: {submission['name']} on {found['name']}")
    out.print()
    print_verdict(out, results, trust, where=f"{client.url}/jobs/{job['id']}")
    verdict = _gate(results, trust, thresholds, (scenario, backend), require_trustworthy)
    if not _wrote_json(json_out, job, results, verdict):
        return EXIT_BAD_INPUT
    privacy_gated = any(bound is not None for bound in thresholds.bounds().values())
    gated = privacy_gated or max_wer_increase is not None or require_trustworthy
    return _print_verdict_line(verdict, gated=gated)


def _wrote_json(path: Path | None, job: dict[str, Any], results: list[Any], verdict: Any) -> bool:
    """:func:`unmask_client.submit.write_json`; False, with one line on stderr, when the file
    cannot be written."""
    problem = write_json(path, job, results, verdict)
    if problem is not None:
        err.print(problem, highlight=False, markup=False, soft_wrap=True)
    return problem is None


def run_standalone(argv: list[str] | None = None) -> int:
    """``python -m cli.submit ARGS``: the command without the rest of the CLI (and its imports),
    for CI runners that only install httpx, typer and rich (docs/ci.md)."""
    import click
    from typer._click import exceptions as typer_click_exceptions

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(submit_command)
    try:
        result = app(args=argv, prog_name="unmask submit", standalone_mode=False)
    except (click.exceptions.Exit, typer.Exit) as exc:
        return int(exc.exit_code)
    except (click.UsageError, typer_click_exceptions.UsageError) as exc:
        print(f"unmask submit: {exc.format_message()}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return int(result) if isinstance(result, int) else EXIT_PASSED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run_standalone())
