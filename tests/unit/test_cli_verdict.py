"""The verdict block (cli/verdict.py): the strongest attacker's EER with its interval, the
original-speech reference and the trust check, from long-format rows or a results.json."""

from __future__ import annotations

from typing import Any

from cli.verdict import document_rows, verdict_lines
from services.metrics import catalogue

EER = catalogue.EER
LOW, HIGH = EER.interval or ("", "")


def _row(scenario: str, backend: str, seed: int, metric: str, value: float) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "backend": backend,
        "seed": seed,
        "metric": metric,
        "value": value,
    }


def _one_seed(scenario: str, backend: str, eer: float) -> list[dict[str, Any]]:
    return [
        _row(scenario, backend, 0, EER.key, eer),
        _row(scenario, backend, 0, LOW, eer - 2),
        _row(scenario, backend, 0, HIGH, eer + 2),
    ]


ROWS = (
    _one_seed("original", "cosine", 3.0)
    + _one_seed("ignorant", "cosine", 45.0)
    + _one_seed("semi-informed", "cosine", 25.0)
    + _one_seed("semi-informed", "plda", 21.0)
)


def test_the_headline_is_the_strongest_attacker_and_back_end() -> None:
    text = "\n".join(verdict_lines(ROWS, {"trustworthy": True, "reasons": []}, where="out/"))
    assert (
        "privacy:   EER 21.0 % (95 % CI 19.0-23.0) for the semi-informed attacker (plda, 1 seed)"
        in text
    )
    assert "50 % = chance, higher = more private" in text
    assert "reference: EER 3.0 % (95 % CI 1.0-5.0) on original speech (cosine, 1 seed)" in text
    assert "attacker:  trustworthy" in text and "results:   out/" in text


def test_without_an_informed_attacker_the_ignorant_one_heads() -> None:
    rows = [r for r in ROWS if r["scenario"] != "semi-informed"]
    assert "for the ignorant attacker" in "\n".join(verdict_lines(rows, None))


def test_an_untrustworthy_verdict_says_why_and_an_unknown_one_says_so() -> None:
    reason = {"code": "ver_s_high", "message": "attacker possibly under-trained: VER_S 60 %"}
    lines = verdict_lines(ROWS, {"trustworthy": False, "reasons": [reason]})
    assert "  attacker:  NOT TRUSTWORTHY, the EER may overestimate privacy:" in lines
    assert "             - attacker possibly under-trained: VER_S 60 %" in lines
    assert any("not checked" in line for line in verdict_lines(ROWS, None))


def test_the_verdict_states_its_precision_and_the_challenger() -> None:
    challenger = {
        "attacker": "ge2e",
        "eer_percent": 18.5,
        "difference_points": -2.5,
        "interval_points": [-6.0, 1.0],
        "n_speakers": 24,
        "stronger": False,
    }
    trust = {"trustworthy": True, "reasons": [], "challenger": challenger}
    text = "\n".join(verdict_lines(ROWS, trust))
    # The headline (plda, 21.0 %, interval 19.0-23.0) spans 4 points.
    assert "precision: the interval spans 4.0 points (1 seed, 24 evaluation speakers)" in text
    assert "more seeds and more evaluation speakers narrow it" in text
    assert "challenger: EER 18.5 % by ge2e" in text
    assert "not stronger beyond the interval (difference -2.5 points" in text
    stronger = {**trust, "challenger": {**challenger, "stronger": True}}
    assert "STRONGER than the verdict's attacker" in "\n".join(verdict_lines(ROWS, stronger))
    assert not any("challenger:" in line for line in verdict_lines(ROWS, None))


def test_several_seeds_show_the_spread() -> None:
    rows = [
        _row("semi-informed", "cosine", seed, EER.key, value)
        for seed, value in ((0, 20.0), (1, 24.0))
    ]
    rows += [_row("semi-informed", "cosine", -1, EER.key, 22.0)]
    rows += [_row("semi-informed", "cosine", -1, EER.std_key, 2.83)]
    assert "EER 22.0 % ± 2.8 over 2 seeds" in "\n".join(verdict_lines(rows, None))


def test_a_results_document_gives_the_same_rows() -> None:
    document = {
        "rows": [
            {
                "scenario": "semi-informed",
                "backend": "cosine",
                "seed": 0,
                EER.key: 30.0,
                "eer_ci95_percent": [27.0, 33.0],
            },
        ],
        "summary": [],
    }
    text = "\n".join(verdict_lines(document_rows(document), None))
    assert "EER 30.0 % (95 % CI 27.0-33.0) for the semi-informed attacker (cosine, 1 seed)" in text


def _zoo_rows() -> list[dict[str, Any]]:
    rows = []
    for attacker, eer in (("baseline", 21.0), ("augmented", 14.0)):
        for r in _one_seed("semi-informed", "plda", eer) + _one_seed("original", "cosine", 3.0):
            rows.append({**r, "attacker": attacker})
    return rows


def test_a_zoo_verdict_names_the_worst_case_attacker() -> None:
    trust = {
        "trustworthy": True,
        "reasons": [],
        "attacker": "augmented",
        "other_attackers": {"baseline": [{"code": "ver_s_high", "message": "m"}]},
    }
    text = "\n".join(verdict_lines(_zoo_rows(), trust))
    assert (
        "EER 14.0 % (95 % CI 12.0-16.0) for the semi-informed attacker "
        "(attacker augmented, plda, 1 seed)" in text
    )
    assert "the worst case of 2 attackers: augmented" in text
    assert "trustworthy (augmented, the worst-case attacker)" in text
    assert "(attacker baseline alone would not pass: ver_s_high)" in text


def test_the_reference_line_names_the_privacy_lines_attacker() -> None:
    """The baseline is best on original speech, augmented on anonymized speech: the reference
    is augmented's own, not the other attacker's lower original-speech EER."""
    rows = []
    for attacker, semi, original in (("baseline", 21.0, 2.0), ("augmented", 14.0, 4.0)):
        for r in _one_seed("semi-informed", "plda", semi) + _one_seed("original", "plda", original):
            rows.append({**r, "attacker": attacker})
    text = "\n".join(verdict_lines(rows, None))
    assert "(attacker augmented, plda, 1 seed)" in text
    assert "reference: EER 4.0 % (95 % CI 2.0-6.0) on original speech (attacker augmented" in text
    assert "EER 2.0 %" not in text


def test_a_tie_for_the_worst_case_is_stated() -> None:
    rows = []
    for attacker in ("baseline", "long"):
        rows += [{**r, "attacker": attacker} for r in _one_seed("semi-informed", "cosine", 14.0)]
    text = "\n".join(verdict_lines(rows, None))
    assert "(attacker baseline, cosine, 1 seed)" in text  # ties broken by name
    assert "a tie: attacker long, cosine reached the same EER" in text
    assert "a tie" not in "\n".join(verdict_lines(_zoo_rows(), None))


def test_the_cli_table_gets_an_attacker_column_only_for_a_zoo() -> None:
    from rich.console import Console

    from cli.result_table import rows_table

    def render(rows: list[dict[str, Any]]) -> str:
        console = Console(width=200, record=True)
        console.print(rows_table(rows, "t"))
        return console.export_text()

    zoo = render(_zoo_rows())
    assert "attacker" in zoo and "augmented" in zoo and "baseline" in zoo
    assert "attacker" not in render(ROWS)


def test_a_zoo_document_gives_rows_with_their_attacker() -> None:
    document = {
        "rows": [
            {
                "attacker": "baseline",
                "scenario": "ignorant",
                "backend": "cosine",
                "seed": 0,
                EER.key: 40.0,
            },
            {
                "attacker": "augmented",
                "scenario": "ignorant",
                "backend": "cosine",
                "seed": 0,
                EER.key: 30.0,
            },
        ],
        "summary": [],
        "worst_case": {"ignorant": {"attacker": "augmented"}},
    }
    rows = document_rows(document)
    assert {(r["attacker"], r["value"]) for r in rows if r["metric"] == EER.key} == {
        ("baseline", 40.0),
        ("augmented", 30.0),
    }
    assert "for the ignorant attacker (attacker augmented, cosine" in "\n".join(
        verdict_lines(rows, None)
    )
