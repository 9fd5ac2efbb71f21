"""What the pages say to a person, as plain functions: durations, a phase's visibility wording,
the leaderboard's short trust line, the compare page's verdict sentence and scenario order, the
submission page's verdict line, and the CLI's result table in a CI log (no terminal, 80
columns). The browser tests (tests/browser) look at the same pages in Chromium."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

from rich.console import Console

from api.pages.challenge_html import hidden_phase_names, phase_visibility_text
from api.pages.compare import verdict_sentence
from api.pages.leaderboard_html import trust_summary
from api.pages.rendering import fmt_duration
from api.pages.submissions import scenario_order, verdict_line
from cli.submit import print_results_table
from services.metrics import catalogue
from services.platform.comparison import Comparison, MetricComparison, Side
from services.storage.models import Phase

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)


def test_durations_read_as_people_say_them() -> None:
    assert fmt_duration(270.4) == "4 min 30 s"
    assert fmt_duration(0.4) == "0.4 s"  # a short run is never "0 s"
    assert fmt_duration(42) == "42 s"
    assert fmt_duration(120) == "2 min"
    assert fmt_duration(7500) == "2 h 05 min"
    assert fmt_duration(None) == "—"


def _phase(visibility: str, reveal_at: dt.datetime | None, phase_id: int = 1) -> Phase:
    return Phase(
        id=phase_id,
        name=f"p{phase_id}",
        starts_at=NOW - dt.timedelta(days=3),
        visibility=visibility,
        reveal_at=reveal_at,
    )


def test_a_phase_says_hidden_until_or_revealed_at() -> None:
    past, future = NOW - dt.timedelta(days=1), NOW + dt.timedelta(days=1)
    assert phase_visibility_text(_phase("public", None), NOW) == "public"
    assert phase_visibility_text(_phase("hidden", future), NOW) == (
        "hidden until 2026-06-02 12:00 UTC"
    )
    assert phase_visibility_text(_phase("hidden", past), NOW) == (
        "revealed at 2026-05-31 12:00 UTC"
    )
    assert phase_visibility_text(_phase("hidden", None), NOW) == "hidden, no reveal date"
    phases = [_phase("hidden", future, 1), _phase("hidden", past, 2), _phase("public", None, 3)]
    assert hidden_phase_names(phases, NOW) == {1: "p1"}


def test_the_trust_cell_line_is_the_first_reasons_gist() -> None:
    reasons = [
        {"code": "attacker_too_weak", "message": "attacker too weak: EER 11.7 % (above 10 %)"},
        {"code": "under_trained", "message": "attacker possibly under-trained: VER_S 67 %"},
    ]
    assert trust_summary(reasons) == "attacker too weak (+1 more)"
    assert trust_summary(reasons[1:]) == "attacker possibly under-trained"
    assert trust_summary([]) == "not trustworthy"
    long = trust_summary([{"code": "x", "message": "a" * 80}])
    assert len(long) <= 32 and long.endswith("…")
    assert trust_summary([{"code": "only_a_code"}]) == "only_a_code"


def _metric(
    scenario: str, a: float, b: float, interval: tuple[float, float] | None = None
) -> MetricComparison:
    better = "equal" if a == b else ("b" if b > a else "a")
    return MetricComparison(
        metric=catalogue.EER.key,
        label="EER %",
        unit="%",
        scenario=scenario,
        backend="cosine",
        a=a,
        b=b,
        difference=b - a,
        better=better,
        higher_is_better=True,
        digits=1,
        paired_interval=interval,
    )


def _comparison(*metrics: MetricComparison, notes: dict[str, str] | None = None) -> Comparison:
    return Comparison(
        protocol_id=1,
        a=Side(1, "pitch shift", "lab", 10),
        b=Side(2, "voice conversion", "lab", 11),
        metrics=list(metrics),
        paired_notes=notes or {},
    )


def test_the_compare_verdict_reads_the_headline_attacker_first() -> None:
    comparison = _comparison(
        _metric("ignorant", 6.0, 14.0, (1.0, 2.0)),
        _metric("original", 5.0, 5.5),
        _metric("semi-informed", 18.4, 41.2, (15.0, 30.5)),
    )
    assert comparison.headline is not None and comparison.headline.scenario == "semi-informed"
    assert [m.scenario for m in comparison.privacy_headline_first] == [
        "semi-informed",
        "ignorant",
        "original",
    ]
    assert verdict_sentence(comparison) == (
        "voice conversion (b) is more private than pitch shift (a) by 22.8 EER points against "
        "the semi-informed attacker (cosine), 95 % CI of b − a +15.0 to +30.5."
    )


def test_the_compare_verdict_says_when_the_interval_includes_zero_or_is_missing() -> None:
    noisy = _comparison(_metric("semi-informed", 30.0, 28.0, (-5.0, 1.5)))
    text = verdict_sentence(noisy) or ""
    assert text.startswith("pitch shift (a) is more private than voice conversion (b) by 2.0")
    assert "the interval includes 0, so the difference may be chance" in text
    note = "no paired interval: job a and b kept no per-trial scores"
    unpaired = _comparison(
        _metric("semi-informed", 30.0, 30.0), notes={"semi-informed|cosine": note}
    )
    assert verdict_sentence(unpaired) == (
        "voice conversion (b) and pitch shift (a) are equally private against the "
        f"semi-informed attacker (cosine) ({note})."
    )
    assert verdict_sentence(_comparison(_metric("original", 5.0, 6.0))) is None


def test_scenarios_follow_the_evaluations_order() -> None:
    order = scenario_order({"scenarios": ["original", "semi-informed", "ignorant"]})
    assert order[:3] == ("original", "semi-informed", "ignorant")
    assert "lazy-informed" in order  # any other scenario after the listed ones
    assert scenario_order(None)[0] == "original"  # the config schema's order


def _aggregate(scenario: str, backend: str, eer: float) -> tuple[tuple[str, str], dict[str, Any]]:
    return (scenario, backend), {catalogue.EER.key: eer, "n_seeds": 1.0}


def test_the_submission_verdict_is_the_strongest_headline_attacker() -> None:
    tables = {
        "aggregate": [
            _aggregate("original", "plda", 3.0),
            _aggregate("semi-informed", "cosine", 34.8),
            _aggregate("semi-informed", "plda", 30.1),
        ],
        "per_seed": [
            (
                ("semi-informed", "plda", 0),
                dict(zip(catalogue.EER.interval or (), (25.0, 35.5), strict=True)),
            )
        ],
    }
    line = verdict_line(tables, {"trustworthy": False})
    assert line is not None
    assert line["privacy"] == (
        "EER 30.1 % (95 % CI 25.0–35.5) for the semi-informed attacker (plda); 50 % = chance, "
        "higher = more private; 3.0 % on original speech"
    )
    assert line["state"] == "warn" and "NOT TRUSTWORTHY" in line["attacker"]
    assert (
        verdict_line({"aggregate": [_aggregate("original", "plda", 3.0)], "per_seed": []}, {})
        is None
    )


def _wide_rows() -> list[dict[str, Any]]:
    rows = []
    for scenario in ("original", "ignorant", "semi-informed"):
        for metric in catalogue.table_metrics():
            for key, value in ((metric.key, 12.345678), (f"{metric.key}_std", 1.2345)):
                rows.append(
                    {
                        "scenario": scenario,
                        "backend": "cosine",
                        "seed": -1,
                        "metric": key,
                        "value": value,
                    }
                )
    return rows


def test_the_cli_table_in_a_ci_log_never_truncates_numbers() -> None:
    """No terminal, 80 columns (a CI log): the table is printed at its natural width."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, force_terminal=False, color_system=None)
    assert not console.is_terminal
    print_results_table(_wide_rows(), "job 1: pitch on demo", console)
    text = buffer.getvalue()
    assert "…" not in text, text
    for metric in catalogue.table_metrics():
        assert metric.label in text
        assert metric.format(12.345678) in text
    assert max(len(line) for line in text.splitlines()) > 80  # wider than the log's default


def test_the_legal_plot_follows_the_measured_population_not_the_papers(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """The paper's reference curves run to 20,000 speakers; the plot's x axis follows the
    measured N (references drawn up to ``LEGAL_REFERENCE_SPAN`` times it), with legible text."""
    from matplotlib.figure import Figure

    from services import plotting

    figures: list[Figure] = []
    monkeypatch.setattr(plotting, "save_figure", lambda fig, stem: figures.append(fig) or [])
    points = [
        {"n": n, "mean_percent": 50.0, "interval_percent": [40.0, 60.0], "chance_percent": 100 / n}
        for n in (2, 3, 4)
    ]
    curves = [
        {"metric": metric, "conversation_length": 1, "points": points}
        for metric in ("linkability_top1", "singling_out")
    ]
    paper_n = list(range(20, 20_001, 100))
    references = [
        (metric, 1, paper_n, [80.0] * len(paper_n), "paper, L=1")
        for metric in ("linkability_top1", "singling_out")
    ]
    plotting.plot_legal_curves(curves, references, tmp_path / "legal", "Legal metrics")
    (fig,) = figures
    top = 4 * plotting.LEGAL_REFERENCE_SPAN
    for ax in fig.axes[:2]:
        low, high = ax.get_xlim()
        assert low < 2 and 20 <= high <= top * 1.25, (low, high)
        reference = next(line for line in ax.get_lines() if line.get_label() == "paper, L=1")
        assert max(reference.get_xdata()) <= top  # type: ignore[arg-type]
        assert ax.xaxis.label.get_fontsize() >= 10
