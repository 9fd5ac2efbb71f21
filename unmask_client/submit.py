"""``unmask-submit`` / ``python -m unmask_client.submit``: the CI gate of ``unmask submit`` with
only the ``unmask-client`` distribution installed (httpx, attrs, python-dateutil; no numpy).

Submits a built-in anonymizer, a container image or a pre-anonymized archive file, starts a job
on a protocol, prints one line per change of its progress (stderr), waits for it, prints the
seed-aggregated results as a plain table (never cut to a terminal's width) and checks the
thresholds. The thresholds name their metric and direction themselves (``--min-eer``: the
metric ``eer_percent`` must be at least the bound), so no metric catalogue is needed here;
``tests/unit/test_client_submit_cli.py`` checks them against the server's catalogue.

Reads ``UNMASK_URL`` and ``UNMASK_TOKEN``; in GitHub Actions with ``id-token: write`` and no
``UNMASK_TOKEN``, a short-lived token exchanged for the run's ID token
(:mod:`unmask_client.oidc`). Exit codes as ``unmask submit`` (docs/ci.md): 0 passed (or
``--no-wait``: queued), 1 a threshold failed or its metric is missing, 2 bad input or a 4xx
other than 401/403, 3 the job failed, stalled or the API was unreachable / answered
401/403/5xx.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from unmask_client.api_client.models import JobOut, JobOutState, StageOutState, SubmissionOut
from unmask_client.oidc import GitHubOidcTokenSource, OidcExchangeError, github_oidc_available
from unmask_client.wrapper import Client, UnmaskError

# The exit codes of both CI gates, this one and ``unmask submit`` (cli/submit.py reads them).
EXIT_PASSED = 0
EXIT_THRESHOLDS_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_JOB_OR_API_FAILED = 3

AGGREGATE_SEED = -1
"""The seed of a result row that aggregates a metric over training seeds."""
UTILITY_SCENARIO = "utility"
UTILITY_BACKEND = "-"
WER_INCREASE_KEY = "wer_increase_percent"
USABLE_SPEECH_KEY = "usable_speech"


@dataclass(frozen=True)
class ThresholdSpec:
    """One threshold option: ``--<flag> X`` requires ``metric`` ``op`` X (``">="`` where higher
    is better for the anonymizer's maker)."""

    flag: str
    metric: str
    op: str
    label: str


THRESHOLD_SPECS: tuple[ThresholdSpec, ...] = (
    ThresholdSpec("min-eer", "eer_percent", ">=", "EER (%)"),
    ThresholdSpec("max-srd-meand", "srd_mean_disclosure_bits", "<=", "SRD MeanD (bits)"),
    ThresholdSpec("max-srd-idr", "srd_identification_rate_percent", "<=", "SRD IdR (%)"),
    ThresholdSpec("min-cllr", "min_cllr_bits", ">=", "min Cllr (bits)"),
    ThresholdSpec("max-linkability", "linkability", "<=", "Linkability D_sys"),
    ThresholdSpec("max-linkability-top1", "linkability_top1_percent", "<=", "Top-1 link (%)"),
    ThresholdSpec("max-singling-out", "singling_out_percent", "<=", "Singling out (%)"),
)
SCENARIO_ORDER: tuple[str, ...] = ("original", "ignorant", "lazy-informed", "semi-informed")
"""The evaluation's order of scenarios in the table (unknown ones follow alphabetically)."""
TABLE_METRICS: tuple[str, ...] = tuple(spec.metric for spec in THRESHOLD_SPECS)
"""The columns of the printed table (the thresholded metrics; ``--json`` has every row)."""


@dataclass
class Verdict:
    """Outcome of :func:`check_thresholds`: ``failures`` lists every violated check."""

    scenario: str
    backends: list[str]
    passed: bool
    failures: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)


def _mean_over_seeds(aggregate: float | None, per_seed: Sequence[float | None]) -> float | None:
    if aggregate is not None and math.isfinite(aggregate):
        return aggregate
    present = [v for v in per_seed if v is not None and math.isfinite(v)]
    return sum(present) / len(present) if present else None


def aggregate_rows(
    results: Sequence[Mapping[str, Any]],
) -> dict[tuple[str, str], dict[str, float | None]]:
    """``{(scenario, backend): {metric: value}}`` from the API's long-format result rows: the
    aggregate row (seed -1) where present, else the mean of the per-seed rows. With several
    attackers the back-end is spelled ``<attacker>/<backend>`` (each one is checked)."""
    aggregate: dict[tuple[str, str, str, str], float | None] = {}
    per_seed: dict[tuple[str, str, str, str], list[float | None]] = {}
    for row in results:
        attacker = str(row.get("attacker") or "baseline")
        key = (attacker, str(row["scenario"]), str(row["backend"]), str(row["metric"]))
        value = None if row.get("value") is None else float(row["value"])
        if row["seed"] == AGGREGATE_SEED:
            aggregate[key] = value
        else:
            per_seed.setdefault(key, []).append(value)
    by_attacker: dict[tuple[str, str, str], dict[str, float | None]] = {}
    for key in dict.fromkeys([*aggregate, *per_seed]):
        value = _mean_over_seeds(aggregate.get(key), per_seed.get(key, []))
        by_attacker.setdefault(key[:3], {})[key[3]] = value
    several = len({k[0] for k in by_attacker if k[1] != UTILITY_SCENARIO}) > 1
    out: dict[tuple[str, str], dict[str, float | None]] = {}
    for (attacker, scenario, backend), values in by_attacker.items():
        zoo = several and scenario != UTILITY_SCENARIO
        out[(scenario, f"{attacker}/{backend}" if zoo else backend)] = values
    return out


def check_thresholds(
    results: Sequence[Mapping[str, Any]],
    bounds: Mapping[str, float | None],
    *,
    scenario: str = "semi-informed",
    backend: str | None = None,
    max_wer_increase: float | None = None,
    labels: Mapping[str, str] | None = None,
) -> Verdict:
    """Check ``bounds`` (threshold flag -> bound, :data:`THRESHOLD_SPECS`; None or absent: not
    checked) on the ``scenario`` rows: every back-end must pass (the attacker uses whichever
    works best); a thresholded metric that is missing fails.

    The one threshold check: ``unmask submit`` (cli/client.py) calls it too, with ``labels``
    (metric key -> the name its lines give the metric) from the platform's catalogue; by
    default each spec's own label."""
    names = {spec.metric: spec.label for spec in THRESHOLD_SPECS} | dict(labels or {})
    table = aggregate_rows(results)
    backends = sorted(b for s, b in table if s == scenario and (backend is None or b == backend))
    specs = [(s, bound) for s in THRESHOLD_SPECS if (bound := bounds.get(s.flag)) is not None]
    verdict = Verdict(scenario=scenario, backends=backends, passed=True)
    if not backends and specs:
        which = f" and back-end {backend!r}" if backend else ""
        verdict.failures.append(f"no results for scenario {scenario!r}{which}")
    for spec, bound in specs if backends else []:
        for name in backends:
            value = table[(scenario, name)].get(spec.metric)
            where = f"{names[spec.metric]} [{scenario}, {name}]"
            if value is None:
                verdict.failures.append(f"{where}: missing (required {spec.op} {bound:g})")
                continue
            ok = value >= bound if spec.op == ">=" else value <= bound
            line = f"{where} = {value:.4g} ({'ok' if ok else 'FAIL'}: required {spec.op} {bound:g})"
            (verdict.checked if ok else verdict.failures).append(line)
    if max_wer_increase is not None:
        values = table.get((UTILITY_SCENARIO, UTILITY_BACKEND), {})
        increase, usable = values.get(WER_INCREASE_KEY), values.get(USABLE_SPEECH_KEY)
        where = "WER increase [utility]"
        if increase is None:
            verdict.failures.append(
                f"{where}: missing (required <= {max_wer_increase:g} points; the protocol "
                "measures no WER)"
            )
        else:
            ok = increase <= max_wer_increase
            line = (
                f"{where} = {increase:.4g} points ({'ok' if ok else 'FAIL'}: required <= "
                f"{max_wer_increase:g})"
            )
            (verdict.checked if ok else verdict.failures).append(line)
        if usable is not None and usable < 0.5:
            verdict.failures.append("usable speech [utility]: NO (the degenerate-output guard)")
        elif usable is not None:
            verdict.checked.append("usable speech [utility]: yes")
    verdict.passed = not verdict.failures
    return verdict


def format_table(results: Sequence[Mapping[str, Any]]) -> str:
    """The seed-aggregated thresholded metrics per scenario and back-end, as plain columns at
    their natural width (a CI log never cuts a number)."""
    table = aggregate_rows(results)
    header = ["scenario", "back-end", *(s.label for s in THRESHOLD_SPECS)]
    lines = [header]
    for scenario, backend in sorted(
        (k for k in table if k[0] != UTILITY_SCENARIO), key=lambda k: (_rank(k[0]), k)
    ):
        values = table[(scenario, backend)]
        cells = [_number(values.get(metric)) for metric in TABLE_METRICS]
        lines.append([scenario, backend, *cells])
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in lines
    )


def _rank(scenario: str) -> int:
    return SCENARIO_ORDER.index(scenario) if scenario in SCENARIO_ORDER else len(SCENARIO_ORDER)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def exit_for_status(status: int | None) -> int:
    """The exit code for an API error of HTTP ``status`` (None: the API was not reached): bad
    input for a 4xx other than 401/403, else the API failed."""
    if status is not None and 400 <= status < 500 and status not in (401, 403):
        return EXIT_BAD_INPUT
    return EXIT_JOB_OR_API_FAILED


def parse_param(text: str, flag: str = "--param") -> tuple[str, Any]:
    """``KEY=VALUE`` of a ``--param`` or ``--override`` (``flag``, named in the error): VALUE as
    JSON (finite numbers only) or, when it is not JSON, as text; ``ValueError`` without ``=`` or
    a key, or for a non-finite number."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise ValueError(f"{flag} {text!r}: expected KEY=VALUE (VALUE as JSON or text)")

    def finite(number: str) -> float:
        value = float(number)
        if not math.isfinite(value):
            raise ValueError(
                f"{flag} {text!r}: {number} is not a finite number (JSON has no other)"
            )
        return value

    try:
        return key, json.loads(raw, parse_float=finite, parse_constant=finite)
    except json.JSONDecodeError:
        return key, raw


def _merge_override(base: dict[str, Any], text: str) -> None:
    """``training.epochs=3`` merged into ``base`` as ``{"training": {"epochs": 3}}``."""
    path, value = parse_param(text, "--override")
    parts = path.split(".")
    cursor = base
    for part in parts[:-1]:
        if not isinstance(cursor.get(part), dict):
            cursor[part] = {}
        cursor = cursor[part]
    cursor[parts[-1]] = value


def client_from_env(environ: Mapping[str, str]) -> Client:
    """A client for ``UNMASK_URL`` with ``UNMASK_TOKEN``, or, without one in a GitHub Actions
    job allowed to mint ID tokens, with tokens exchanged for them (renewed while it waits)."""
    url = environ.get("UNMASK_URL", "")
    token = environ.get("UNMASK_TOKEN", "")
    if token or not url or not github_oidc_available(environ):
        return Client(url, token)
    source = GitHubOidcTokenSource(url, environ)
    client = Client(url, source.token())
    client.http.event_hooks["request"].append(source.authorize)
    return client


class _Exit(Exception):
    """A usage error already reported on stderr."""

    def __init__(self, code: int) -> None:
        self.code = code


class _Parser(argparse.ArgumentParser):
    """Usage errors: one line on stderr and exit 2 (as ``unmask submit``)."""

    stream: TextIO | None = None

    def error(self, message: str) -> Any:
        print(f"unmask submit: {message}", file=self.stream or sys.stderr)
        raise _Exit(EXIT_BAD_INPUT)


def _seconds(minimum: float, *, inclusive: bool) -> Any:
    """An argparse type: a finite number of seconds at least (or above) ``minimum``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not math.isfinite(value) or value < minimum or (value == minimum and not inclusive):
            relation = "at least" if inclusive else "above"
            raise argparse.ArgumentTypeError(f"{text!r}: expected seconds {relation} {minimum:g}")
        return value

    return parse


def _finite(text: str) -> float:
    """An argparse type for a threshold: a finite number (a NaN bound fails every comparison, so
    the gate would run the whole job and then fail it; an infinite one checks nothing)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def build_parser() -> _Parser:
    parser = _Parser(
        prog="unmask-submit",
        description="Submit an anonymizer, wait for its evaluation and check privacy thresholds.",
    )
    parser.add_argument("--protocol", "-p", required=True, help="name, name@VERSION or id")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--builtin", help="built-in anonymizer name")
    source.add_argument("--image", help="container image pinned by digest: name@sha256:<64 hex>")
    source.add_argument("--archive", help="pre-anonymized audio of the protocol (an archive file)")
    parser.add_argument("--param", action="append", default=[], help="KEY=VALUE, repeatable")
    parser.add_argument("--name", help="submission name (default: derived)")
    parser.add_argument("--public", action="store_true", help="list it on the public leaderboard")
    parser.add_argument("--override", action="append", default=[], help="PATH=VALUE, repeatable")
    parser.add_argument("--phase", help="the protocol's phase (default: the one open now)")
    parser.add_argument("--idempotency-key", help="retrying with the same key: the same job")
    parser.add_argument("--wait", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--timeout",
        type=_seconds(0, inclusive=False),
        default=30 * 60.0,
        help="seconds without heartbeat, progress or state change before giving up",
    )
    parser.add_argument(
        "--poll", type=_seconds(0, inclusive=True), default=10.0, help="seconds between polls"
    )
    for spec in THRESHOLD_SPECS:
        parser.add_argument(
            f"--{spec.flag}", type=_finite, help=f"require {spec.label} {spec.op} this"
        )
    parser.add_argument("--max-wer-increase", type=_finite, help="WER increase (points) <= this")
    parser.add_argument("--scenario", default="semi-informed", help="scenario checked")
    parser.add_argument("--backend", help="back-end checked (default: every one)")
    parser.add_argument("--json", dest="json_out", help="write job, results and verdict here")
    parser.add_argument("--require-trustworthy", action="store_true")
    return parser


def _submit_named(
    client: Client, args: argparse.Namespace, params: dict[str, Any], visibility: str
) -> SubmissionOut:
    """A built-in anonymizer (``--builtin``) or a container image (``--image``)."""
    if args.builtin is not None:
        label = args.name or f"{args.builtin} {json.dumps(params, sort_keys=True)}"
        return client.submit_builtin(label, args.builtin, params, visibility=visibility)
    return client.submit_container(args.name or args.image, args.image, visibility=visibility)


def _progress(job: JobOut, last: list[str], err: TextIO) -> None:
    stages = job.stages
    running = [s for s in stages if s.state == StageOutState.RUNNING]
    done = sum(1 for s in stages if s.state == StageOutState.SUCCEEDED)
    note = f" {running[0].name} {running[0].progress * 100:.0f}%" if running else ""
    line = f"job {job.id}: {job.state} ({done}/{len(stages)} stages){note}"
    if not last or line != last[-1]:
        print(line, file=err, flush=True)
        last.append(line)


def main(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The command; returns its exit code."""
    out, err = out or sys.stdout, err or sys.stderr
    env = os.environ if environ is None else environ
    parser = build_parser()
    parser.stream = err
    try:
        args = parser.parse_args(argv)
    except _Exit as exc:
        return exc.code
    bounds = {s.flag: getattr(args, s.flag.replace("-", "_")) for s in THRESHOLD_SPECS}
    try:
        params = dict(parse_param(p) for p in args.param)
        overrides: dict[str, Any] = {}
        for text in args.override:
            _merge_override(overrides, text)
    except ValueError as exc:
        print(f"unmask submit: {exc}", file=err)
        return EXIT_BAD_INPUT
    visibility = "public" if args.public else "private"
    if not env.get("UNMASK_URL") or not (env.get("UNMASK_TOKEN") or github_oidc_available(env)):
        print(
            "unmask submit: set UNMASK_URL and UNMASK_TOKEN (or run in GitHub Actions with "
            "`permissions: id-token: write`)",
            file=err,
        )
        return EXIT_BAD_INPUT
    try:
        with client_from_env(env) as client:
            protocol = client.find_protocol(args.protocol)
            if args.builtin is not None or args.image is not None:
                try:
                    submission = _submit_named(client, args, params, visibility)
                except ValueError as exc:  # the generated models refuse it before sending
                    print(f"unmask submit: {exc}", file=err)
                    return EXIT_BAD_INPUT
            else:
                if not os.path.isfile(args.archive):
                    print(f"unmask submit: archive {args.archive} is not a file", file=err)
                    return EXIT_BAD_INPUT
                submission = client.submit_archive(
                    args.name or os.path.basename(args.archive),
                    args.archive,
                    protocol.id,
                    visibility=visibility,
                )
                # Jobs need an accepted submission: --no-wait skips the job's wait, not this.
                submission = client.wait_until_accepted(submission.id, poll_s=args.poll)
            job = client.create_job(
                submission.id,
                protocol.id,
                config_overrides=overrides,
                idempotency_key=args.idempotency_key,
                phase=args.phase,
            )
            print(
                f"submission {submission.id} ({submission.name}), job {job.id} on protocol "
                f"{protocol.name} v{protocol.version}: {client.url}/jobs/{job.id}",
                file=err,
            )
            if not args.wait:
                print(job.id, file=out)
                return EXIT_PASSED
            seen: list[str] = []
            job = client.wait_for_job(
                job.id,
                poll_s=args.poll,
                stall_timeout_s=args.timeout,
                on_update=lambda j: _progress(j, seen, err),
            )
            if job.state != JobOutState.SUCCEEDED:
                print(f"job {job.id} {job.state}: {job.error_message or ''}", file=err)
                if problem := write_json(args.json_out, job.to_dict(), [], None):
                    print(problem, file=err)
                    return EXIT_BAD_INPUT
                return EXIT_JOB_OR_API_FAILED
            answer = client.results(job.id)
            results = [r.to_dict() for r in answer.results]
            trust = answer.trust.to_dict()
    except (UnmaskError, OidcExchangeError) as exc:
        print(f"unmask submit: {exc}", file=err)
        return exit_for_status(getattr(exc, "status", None))
    print(f"job {job.id}: {submission.name} on {protocol.name}", file=out)
    print(format_table(results), file=out)
    verdict = check_thresholds(
        results,
        bounds,
        scenario=args.scenario,
        backend=args.backend,
        max_wer_increase=args.max_wer_increase,
    )
    if args.require_trustworthy:
        require_trustworthy(verdict, trust)
    for line in verdict.checked:
        print(f"  pass  {line}", file=out)
    for line in verdict.failures:
        print(f"  FAIL  {line}", file=out)
    if problem := write_json(args.json_out, job.to_dict(), results, verdict):
        print(problem, file=err)
        return EXIT_BAD_INPUT
    gated = any(b is not None for b in bounds.values()) or args.max_wer_increase is not None
    if not gated and not args.require_trustworthy:
        print("no thresholds given: nothing to gate on", file=out)
    else:
        print("verdict: PASS" if verdict.passed else "verdict: FAIL (thresholds not met)", file=out)
    return EXIT_PASSED if verdict.passed else EXIT_THRESHOLDS_FAILED


def require_trustworthy(verdict: Verdict, trust: Any) -> None:
    """``--require-trustworthy``: fail ``verdict`` unless the report's trust check (``trust``,
    the results' ``trust`` object; anything but a mapping: no check) passed."""
    trustworthy = trust.get("trustworthy") if isinstance(trust, Mapping) else None
    if trustworthy is True:
        verdict.checked.append("report trust check: passed")
    else:
        state = "failed" if trustworthy is False else "unknown (the report has no check)"
        verdict.failures.append(f"report trust check: {state} (--require-trustworthy)")
    verdict.passed = not verdict.failures


def write_json(
    path: str | os.PathLike[str] | None,
    job: dict[str, Any],
    results: list[Any],
    verdict: Verdict | None,
) -> str | None:
    """``--json``: write the job, its results and the verdict (None: the job did not succeed) to
    ``path`` (None: nothing to write). Returns None, or the one line saying why the file could
    not be written."""
    if path is None:
        return None
    document = {
        "job": job,
        "results": results,
        "verdict": None
        if verdict is None
        else {
            "passed": verdict.passed,
            "scenario": verdict.scenario,
            "backends": verdict.backends,
            "failures": verdict.failures,
            "checked": verdict.checked,
        },
    }
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, default=str)
    except OSError as exc:
        return f"unmask submit: --json {path}: {exc.strerror or exc}"
    return None


def run() -> None:
    """The ``unmask-submit`` console script."""
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    run()
