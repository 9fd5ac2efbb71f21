"""The ``unmask-client`` distribution's own CI gate (``unmask_client.submit``) against the
platform's definitions: its threshold flags name catalogued metrics in the catalogue's direction,
and its seed aggregation and verdicts agree with ``unmask submit``'s."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from cli.client import Thresholds
from cli.client import check_thresholds as cli_check_thresholds
from cli.result_table import aggregate_attacker_rows
from services.metrics import catalogue
from services.vocab import SCENARIO_ORDER
from support.fake_api import JOB_ID, PROTOCOL, SUBMISSION, job_json, polled_job
from unmask_client import submit


@pytest.mark.parametrize("spec", submit.THRESHOLD_SPECS, ids=lambda s: s.flag)
def test_each_threshold_names_a_catalogued_metric_in_its_direction(
    spec: submit.ThresholdSpec,
) -> None:
    metric = catalogue.metric(spec.metric)
    assert spec.op == (">=" if metric.higher_is_better else "<=")
    assert spec.flag.startswith("min-" if metric.higher_is_better else "max-")
    # `unmask submit` has the same flag, as a field of its thresholds.
    field = spec.flag.replace("-", "_")
    bounds = Thresholds(**{field: 1.0}).bounds()
    assert {flag: bound for flag, bound in bounds.items() if bound is not None} == {spec.flag: 1.0}


def test_every_privacy_field_of_unmask_submit_is_a_threshold_flag() -> None:
    fields = {f.name for f in dataclasses.fields(Thresholds)} - {"max_wer_increase"}
    assert fields == {spec.flag.replace("-", "_") for spec in submit.THRESHOLD_SPECS}


def test_utility_keys_are_the_catalogues() -> None:
    assert submit.UTILITY_SCENARIO == catalogue.UTILITY_SCENARIO
    assert submit.UTILITY_BACKEND == catalogue.UTILITY_BACKEND
    assert submit.WER_INCREASE_KEY == catalogue.WER_INCREASE.key
    assert submit.USABLE_SPEECH_KEY == catalogue.USABLE_SPEECH.key
    assert submit.AGGREGATE_SEED == catalogue.AGGREGATE_SEED
    assert submit.SCENARIO_ORDER == SCENARIO_ORDER


ROWS = [
    # an attacker zoo: two attackers, two seeds without an aggregate row for one metric
    {"attacker": "a", "scenario": "semi-informed", "backend": "cosine", "seed": -1,
     "metric": "eer_percent", "value": 31.0},
    {"attacker": "a", "scenario": "semi-informed", "backend": "cosine", "seed": 0,
     "metric": "eer_percent", "value": 99.0},
    {"attacker": "b", "scenario": "semi-informed", "backend": "cosine", "seed": 0,
     "metric": "eer_percent", "value": 20.0},
    {"attacker": "b", "scenario": "semi-informed", "backend": "cosine", "seed": 1,
     "metric": "eer_percent", "value": 30.0},
    {"attacker": "b", "scenario": "semi-informed", "backend": "cosine", "seed": 1,
     "metric": "srd_mean_disclosure_bits", "value": None},
    {"scenario": "utility", "backend": "-", "seed": -1, "metric": "wer_increase_percent",
     "value": 4.0},
    {"scenario": "utility", "backend": "-", "seed": -1, "metric": "usable_speech", "value": 0.0},
]  # fmt: skip


def test_aggregation_and_verdicts_agree_with_unmask_submit() -> None:
    # The platform's seed aggregation (catalogue.aggregate_over_seeds), each attacker of the zoo
    # spelled into the back-end (the utility rows keep theirs).
    platform = {
        (scenario, backend if scenario == "utility" else f"{attacker}/{backend}"): values
        for (attacker, scenario, backend), values in aggregate_attacker_rows(ROWS).items()
    }
    assert submit.aggregate_rows(ROWS) == platform
    for bounds in ({"min-eer": 25.0}, {"min-eer": 20.0, "max-srd-meand": 0.1}, {}):
        ours = submit.check_thresholds(ROWS, bounds, max_wer_increase=5.0)
        fields = {k.replace("-", "_"): v for k, v in bounds.items()}
        theirs = cli_check_thresholds(ROWS, Thresholds(**fields, max_wer_increase=5.0))
        assert (ours.passed, ours.backends) == (theirs.passed, theirs.backends)
        assert len(ours.failures) == len(theirs.failures)
        assert len(ours.checked) == len(theirs.checked)
    verdict = submit.check_thresholds(ROWS, {"min-eer": 26.0})
    assert verdict.backends == ["a/cosine", "b/cosine"]  # each attacker is checked
    # b has no aggregate row: the mean of its seeds (20, 30) fails 26; a's aggregate row wins.
    assert verdict.failures == ["EER (%) [semi-informed, b/cosine] = 25 (FAIL: required >= 26)"]


def test_unmask_submit_names_the_metrics_as_the_catalogue() -> None:
    # The one check (unmask_client.submit), with the catalogue's labels in `unmask submit`'s lines.
    verdict = cli_check_thresholds(ROWS, Thresholds(min_eer=26.0, max_srd_meand=0.1))
    assert verdict.checked == ["EER % [semi-informed, a/cosine] = 31 (ok: required >= 26)"]
    assert verdict.failures == [
        "EER % [semi-informed, b/cosine] = 25 (FAIL: required >= 26)",
        "SRD MeanD (bits) [semi-informed, a/cosine]: missing (required <= 0.1)",
        "SRD MeanD (bits) [semi-informed, b/cosine]: missing (required <= 0.1)",
    ]
    labels = {"eer_percent": "EER %"}
    assert submit.check_thresholds(ROWS, {"min-eer": 26.0}, labels=labels).failures == [
        "EER % [semi-informed, b/cosine] = 25 (FAIL: required >= 26)"
    ]


@pytest.mark.parametrize("gate", ["cli", "client"])
def test_the_utility_bound_is_checked_without_rows_of_the_scenario(gate: str) -> None:
    """A WER gate on a scenario (or back-end) without rows still reads the utility rows: the
    unusable speech of ROWS fails it, whichever command gates."""
    if gate == "cli":
        verdict = cli_check_thresholds(ROWS, Thresholds(max_wer_increase=5.0), scenario="none")
    else:
        verdict = submit.check_thresholds(ROWS, {}, scenario="none", max_wer_increase=5.0)
    assert verdict.backends == [] and not verdict.passed
    assert verdict.checked == ["WER increase [utility] = 4 points (ok: required <= 5)"]
    assert verdict.failures == ["usable speech [utility]: NO (the degenerate-output guard)"]


def test_the_table_is_plain_and_never_cuts_a_number() -> None:
    text = submit.format_table(ROWS)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["scenario", "back-end"]
    assert lines[1].split()[:3] == ["semi-informed", "a/cosine", "31"]
    assert lines[2].split()[:3] == ["semi-informed", "b/cosine", "25"]
    assert "utility" not in text and "…" not in text


def test_usage_errors_exit_2_with_one_line() -> None:
    err = io.StringIO()
    assert submit.main(["--protocol", "p"], {}, io.StringIO(), err) == 2
    assert err.getvalue().count("\n") == 1 and "--builtin" in err.getvalue()
    err = io.StringIO()
    assert submit.main(["-p", "p", "--builtin", "pitch"], {}, io.StringIO(), err) == 2
    assert "UNMASK_URL" in err.getvalue()
    err = io.StringIO()
    env = {"UNMASK_URL": "http://127.0.0.1:9", "UNMASK_TOKEN": "t"}
    argv = ["-p", "p", "--builtin", "pitch", "--param", "oops"]
    assert submit.main(argv, env, io.StringIO(), err) == 2
    assert "KEY=VALUE" in err.getvalue()


def test_overrides_nest_by_dots() -> None:
    merged: dict[str, object] = {}
    submit._merge_override(merged, "training.epochs=3")
    submit._merge_override(merged, "training.lr=0.1")
    submit._merge_override(merged, "seeds=[0,1]")
    assert merged == {"training": {"epochs": 3, "lr": 0.1}, "seeds": [0, 1]}


def _fake_api(
    monkeypatch: pytest.MonkeyPatch, state: str, *, real_create_job: bool = False
) -> None:
    """``client_from_env`` answers a protocol, a submission and a job in ``state``
    (:func:`support.fake_api.polled_job`)."""
    from types import SimpleNamespace

    import httpx

    from unmask_client.api_client.models import JobOut
    from unmask_client.wrapper import Client

    handler = polled_job(state)

    def client_from_env(environ: object) -> Client:
        client = Client("http://api.test", "unm_x", transport=httpx.MockTransport(handler))
        protocol = SimpleNamespace(**PROTOCOL)
        submission = SimpleNamespace(**SUBMISSION)
        monkeypatch.setattr(client, "find_protocol", lambda name: protocol)
        monkeypatch.setattr(client, "submit_builtin", lambda *a, **k: submission)
        job = JobOut.from_dict(job_json(JOB_ID, "queued"))
        if not real_create_job:
            monkeypatch.setattr(client, "create_job", lambda *a, **k: job)
        return client

    monkeypatch.setattr(submit, "client_from_env", client_from_env)


ENV = {"UNMASK_URL": "http://api.test", "UNMASK_TOKEN": "t"}


@pytest.mark.parametrize("flag", ["--poll", "--timeout"])
@pytest.mark.parametrize("value", ["-1", "nan"])
def test_a_bad_wait_time_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, flag: str, value: str
) -> None:
    _fake_api(monkeypatch, "running")
    err = io.StringIO()
    argv = ["-p", "p", "--builtin", "pitch", "--poll", "0", flag, value]
    assert submit.main(argv, ENV, io.StringIO(), err) == 2
    assert err.getvalue().count("\n") == 1 and flag in err.getvalue()


def test_a_json_file_that_cannot_be_written_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _fake_api(monkeypatch, "failed")
    err = io.StringIO()
    target = f"{tmp_path}/no/such/folder/out.json"
    argv = ["-p", "p", "--builtin", "pitch", "--poll", "0", "--json", target]
    assert submit.main(argv, ENV, io.StringIO(), err) == 2
    assert err.getvalue().splitlines()[-1].startswith("unmask submit: --json")
    assert "Traceback" not in err.getvalue()


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_override_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    _fake_api(monkeypatch, "succeeded", real_create_job=True)
    err = io.StringIO()
    argv = ["-p", "p", "--builtin", "pitch", "--no-wait", "--override", f"training.lr={value}"]
    assert submit.main(argv, ENV, io.StringIO(), err) == 2
    assert err.getvalue().count("\n") == 1 and "training.lr" in err.getvalue()


@pytest.mark.parametrize("text", ["oops", "=1", "lr=NaN"])
def test_both_gates_refuse_a_bad_param_with_the_same_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    # `unmask submit` refuses it before it needs the server (its client from the environment).
    from cli import submit as cli_submit

    monkeypatch.setenv("UNMASK_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("UNMASK_TOKEN", "t")
    argv = ["-p", "p", "--builtin", "pitch", "--param", text]
    assert cli_submit.run_standalone(argv) == submit.EXIT_BAD_INPUT
    err = io.StringIO()
    assert submit.main(argv, ENV, io.StringIO(), err) == submit.EXIT_BAD_INPUT
    line = capsys.readouterr().err.replace("\n", "")
    assert line == err.getvalue().replace("\n", "")
    assert f"--param {text!r}" in line  # names the flag and the value it refuses


def test_a_bad_override_is_named_as_an_override() -> None:
    err = io.StringIO()
    argv = ["-p", "p", "--builtin", "pitch", "--override", "oops"]
    assert submit.main(argv, ENV, io.StringIO(), err) == submit.EXIT_BAD_INPUT
    assert "--override 'oops': expected KEY=VALUE" in err.getvalue()


@pytest.mark.parametrize(
    ("trust", "passed", "line"),
    [
        ({"trustworthy": True}, True, "report trust check: passed"),
        ({"trustworthy": False}, False, "report trust check: failed (--require-trustworthy)"),
        (None, False, "report trust check: unknown (the report has no check) "
         "(--require-trustworthy)"),
    ],
)  # fmt: skip
def test_require_trustworthy_gates_on_the_reports_trust_check(
    trust: object, passed: bool, line: str
) -> None:
    verdict = submit.Verdict(scenario="semi-informed", backends=[], passed=True)
    submit.require_trustworthy(verdict, trust)
    assert verdict.passed is passed
    assert line in (verdict.checked if passed else verdict.failures)


def test_api_errors_map_to_the_documented_exit_codes() -> None:
    assert submit.exit_for_status(404) == submit.EXIT_BAD_INPUT
    for status in (None, 401, 403, 500):
        assert submit.exit_for_status(status) == submit.EXIT_JOB_OR_API_FAILED


@pytest.mark.parametrize("flag", ["--min-eer", "--max-linkability", "--max-wer-increase"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_both_gates_refuse_a_non_finite_threshold_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    # A NaN bound fails every comparison: the gate would run the job, then fail it (exit 1).
    from cli import submit as cli_submit

    _fake_api(monkeypatch, "succeeded")
    monkeypatch.setenv("UNMASK_URL", "http://127.0.0.1:9")  # `unmask submit` refuses it first
    monkeypatch.setenv("UNMASK_TOKEN", "t")
    argv = ["-p", "p", "--builtin", "pitch", "--poll", "0", f"{flag}={value}"]
    assert cli_submit.run_standalone(argv) == submit.EXIT_BAD_INPUT
    cli_err = capsys.readouterr().err
    err = io.StringIO()
    assert submit.main(argv, ENV, io.StringIO(), err) == submit.EXIT_BAD_INPUT
    for line in (cli_err, err.getvalue()):
        assert line.count("\n") == 1 and flag in line and "finite" in line


def test_an_archive_with_no_wait_is_accepted_before_its_job_is_queued(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Jobs need an accepted submission (409 while validating): ``--no-wait`` skips the job's
    wait, never the archive's validation."""
    from types import SimpleNamespace

    import httpx

    from unmask_client.api_client.models import JobOut
    from unmask_client.wrapper import Client

    archive = tmp_path / "anon.tar"
    archive.write_bytes(b"x")
    status = {"value": "validating"}

    def create_job(*args: object, **kwargs: object) -> JobOut:
        if status["value"] != "accepted":
            raise AssertionError("409: submission 2 is validating")
        return JobOut.from_dict(job_json(JOB_ID, "queued"))

    def wait_until_accepted(submission_id: int, **kwargs: object) -> object:
        status["value"] = "accepted"
        return SimpleNamespace(**SUBMISSION)

    def client_from_env(environ: object) -> Client:
        client = Client("http://api.test", "unm_x", transport=httpx.MockTransport(polled_job("x")))
        monkeypatch.setattr(client, "find_protocol", lambda name: SimpleNamespace(**PROTOCOL))
        monkeypatch.setattr(client, "submit_archive", lambda *a, **k: SimpleNamespace(**SUBMISSION))
        monkeypatch.setattr(client, "wait_until_accepted", wait_until_accepted)
        monkeypatch.setattr(client, "create_job", create_job)
        return client

    monkeypatch.setattr(submit, "client_from_env", client_from_env)
    out = io.StringIO()
    argv = ["-p", "p", "--archive", str(archive), "--poll", "0", "--no-wait"]
    assert submit.main(argv, ENV, out, io.StringIO()) == 0
    assert out.getvalue().strip() == str(JOB_ID)
