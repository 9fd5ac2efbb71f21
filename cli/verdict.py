"""The verdict block that ends every evaluation in the terminal (``evaluate``, ``demo``,
``submit --wait``): what the numbers mean, in a few plain lines.

One renderer, fed by long-format result rows (the API's ``/results``, or a ``results.json``
flattened the same way by ``result_rows_from_document``) and the report's trust check, so every
surface says the same thing. Metric keys come from the catalogue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cli.result_table import aggregate_attacker_rows
from services.metrics import catalogue
from services.metrics.catalogue import AGGREGATE_SEED
from services.pipeline.zoo import row_attacker
from services.vocab import HEADLINE_SCENARIOS, trust_mark

ORIGINAL_SCENARIO = "original"

__all__ = ["document_rows", "print_verdict", "verdict_lines"]


def _seeds(results: Sequence[Mapping[str, Any]], scenario: str, backend: str, attacker: str) -> int:
    seeds = {
        int(r["seed"])
        for r in results
        if r["scenario"] == scenario
        and r["backend"] == backend
        and row_attacker(r) == attacker
        and r["seed"] != AGGREGATE_SEED
    }
    return len(seeds)


def _eer_text(values: Mapping[str, float | None], n_seeds: int) -> str:
    eer = catalogue.EER
    mean = values.get(eer.key)
    if mean is None:
        return "EER not computed"
    text = f"EER {eer.format(mean)} %"
    std = values.get(eer.std_key)
    if n_seeds > 1 and std is not None:
        text += f" ± {eer.format(std)} over {n_seeds} seeds"
    if eer.interval is not None:
        low, high = (values.get(k) for k in eer.interval)
        if low is not None and high is not None:
            kind = "95 % CI" if n_seeds <= 1 else "mean of the seeds' 95 % CIs"
            text += f" ({kind} {eer.format(low)}-{eer.format(high)})"
    return text


def _seed_note(n_seeds: int) -> str:
    return ", 1 seed" if n_seeds == 1 else ""


def _strongest(
    values: Mapping[tuple[str, str, str], Mapping[str, float | None]], scenario: str
) -> tuple[str, str, Mapping[str, float | None]] | None:
    """(attacker, back-end, values) with the EER worst for the maker for ``scenario`` (over every
    attacker of a zoo; ties: by attacker, then back-end name; ``catalogue.worst_for_maker``)."""
    eer = catalogue.EER.key
    candidates = {(a, b): row.get(eer) for (a, s, b), row in values.items() if s == scenario}
    pick = catalogue.worst_for_maker(eer, candidates)
    return None if pick is None else (pick[0], pick[1], values[(pick[0], scenario, pick[1])])


def _ties(
    values: Mapping[tuple[str, str, str], Mapping[str, float | None]],
    scenario: str,
    strongest: tuple[str, str, Mapping[str, float | None]],
) -> list[tuple[str, str]]:
    """The other (attacker, back-end) pairs whose EER for ``scenario`` equals the strongest's at
    the precision the verdict prints (a tie the reader should be told about)."""
    eer = catalogue.EER
    shown = eer.format(float(strongest[2][eer.key] or 0.0))
    return sorted(
        (attacker, backend)
        for (attacker, s, backend), row in values.items()
        if s == scenario
        and (attacker, backend) != strongest[:2]
        and row.get(eer.key) is not None
        and eer.format(float(row[eer.key] or 0.0)) == shown
    )


def _reference(
    values: Mapping[tuple[str, str, str], Mapping[str, float | None]],
    attacker: str | None,
    backend: str | None,
) -> tuple[str, str, Mapping[str, float | None]] | None:
    """The original-speech entry of the privacy line's attacker (its back-end, else its best
    one); without a headline, the strongest on original speech."""
    if attacker is None:
        return _strongest(values, ORIGINAL_SCENARIO)
    same = values.get((attacker, ORIGINAL_SCENARIO, backend or ""))
    if same is not None and same.get(catalogue.EER.key) is not None:
        return attacker, backend or "", same
    own = {k: v for k, v in values.items() if k[0] == attacker}
    return _strongest(own, ORIGINAL_SCENARIO)


def _by(attacker: str, backend: str, n_attackers: int) -> str:
    """``backend`` alone, or ``attacker, backend`` when a zoo ran several attackers."""
    return f"attacker {attacker}, {backend}" if n_attackers > 1 else backend


def verdict_lines(
    results: Sequence[Mapping[str, Any]],
    trust: Mapping[str, Any] | None,
    *,
    where: str | None = None,
) -> list[str]:
    """The verdict block's lines (plain text, no markup).

    ``results``: long-format rows (scenario, backend, seed, metric, value); ``trust``: the
    report's ``{"trustworthy": bool | None, "reasons": [...]}`` (None: unknown); ``where``: where
    the result document and plots are.
    """
    values = aggregate_attacker_rows(results)
    # The utility rows (one set per job, whatever the attackers) feed their own lines.
    utility = next((v for k, v in values.items() if k[1] == catalogue.UTILITY_SCENARIO), None)
    values = {k: v for k, v in values.items() if k[1] != catalogue.UTILITY_SCENARIO}
    n_attackers = len({k[0] for k in values})
    lines = ["Verdict"]
    headline = None
    for scenario in HEADLINE_SCENARIOS:
        strongest = _strongest(values, scenario)
        if strongest is not None:
            headline = (scenario, *strongest)
            break
    if headline is None:
        lines.append("  privacy:   no attack scenario was scored")
    else:
        scenario, attacker, backend, row = headline
        seeds = _seeds(results, scenario, backend, attacker)
        lines.append(
            f"  privacy:   {_eer_text(row, seeds)} for the {scenario} attacker "
            f"({_by(attacker, backend, n_attackers)}{_seed_note(seeds)})"
        )
        if n_attackers > 1:
            lines.append(
                f"             the worst case of {n_attackers} attackers: {attacker} "
                "recognized speakers best"
            )
        tied = _ties(values, scenario, (attacker, backend, row))
        if tied:
            names = ", ".join(_by(a, b, 2) for a, b in tied)
            lines.append(f"             a tie: {names} reached the same EER")
        lines.append("             50 % = chance, higher = more private")
        lines += _precision_lines(row, seeds, trust)
    original = _reference(
        values, headline[1] if headline else None, headline[2] if headline else None
    )
    if original is not None:
        attacker, backend, row = original
        seeds = _seeds(results, ORIGINAL_SCENARIO, backend, attacker)
        lines.append(
            f"  reference: {_eer_text(row, seeds)} on original speech "
            f"({_by(attacker, backend, n_attackers)}{_seed_note(seeds)}): the same attacker "
            "without anonymization"
        )
    trustworthy = None if trust is None else trust.get("trustworthy")
    checked = (trust or {}).get("attacker")
    of = f" ({checked}, the worst-case attacker)" if isinstance(checked, str) else ""
    if trustworthy is True:
        lines.append(
            f"  attacker:  {trust_mark(True).verdict}{of} (passed the checks: original-speech "
            "EER, VER_S, training)"
        )
    elif trustworthy is False:
        lines.append(
            f"  attacker:  {trust_mark(False).verdict}{of}, the EER may overestimate privacy:"
        )
        for reason in (trust or {}).get("reasons") or []:
            lines.append(f"             - {reason.get('message') or reason.get('code')}")
    else:
        lines.append(f"  attacker:  {trust_mark(None).verdict} (the report has no trust check)")
    lines += _challenger_lines((trust or {}).get("challenger"))
    lines += _pretrained_row_lines((trust or {}).get("challenger"))
    others = (trust or {}).get("other_attackers") or {}
    for name, reasons in sorted(others.items()) if isinstance(others, Mapping) else []:
        if reasons:
            codes = ", ".join(str(r.get("code")) for r in reasons if isinstance(r, Mapping))
            lines.append(f"             (attacker {name} alone would not pass: {codes})")
    lines += _utility_lines(utility)
    if where:
        lines.append(f"  results:   {where}")
    return lines


def _precision_lines(
    values: Mapping[str, float | None], n_seeds: int, trust: Mapping[str, Any] | None
) -> list[str]:
    """How precise the headline EER is (its interval's width) and what would narrow it."""
    eer = catalogue.EER
    if eer.interval is None:
        return []
    low, high = (values.get(k) for k in eer.interval)
    if low is None or high is None:
        return []
    challenger = (trust or {}).get("challenger")
    speakers = challenger.get("n_speakers") if isinstance(challenger, Mapping) else None
    of = f", {speakers} evaluation speakers" if isinstance(speakers, int) else ""
    seeds = f"{n_seeds} seed{'s' if n_seeds != 1 else ''}"
    return [
        f"  precision: the interval spans {high - low:.1f} points ({seeds}{of}); more seeds "
        "and more evaluation speakers narrow it (the speaker spread shrinks about as one over "
        "the square root of the speakers)"
    ]


def _challenger_lines(block: Any) -> list[str]:
    """The challenger's line: a pretrained verifier scored on the headline's trials."""
    eer_key = catalogue.EER.key
    if not isinstance(block, Mapping) or not isinstance(block.get(eer_key), int | float):
        return []
    interval = block.get("interval_points")
    spread = (
        f", 95 % interval {interval[0]:+.1f} to {interval[1]:+.1f}"
        if isinstance(interval, list) and len(interval) == 2
        else ""
    )
    outcome = (
        "STRONGER than the verdict's attacker beyond the interval"
        if block.get("stronger")
        else "not stronger beyond the interval"
    )
    return [
        f"  challenger: EER {float(block[eer_key]):.1f} % by {block.get('attacker')} "
        f"(pretrained, not trained here) on the same trials: {outcome} (difference "
        f"{float(block.get('difference_points') or 0.0):+.1f} points{spread})"
    ]


def _pretrained_row_lines(block: Any) -> list[str]:
    """One line per scenario whose row the pretrained verifier gave (it beat the trained
    attacker there: ignorant and lazy-informed rows are never weaker than it)."""
    eer_key = catalogue.EER.key
    scenarios = block.get("scenarios") if isinstance(block, Mapping) else None
    if not isinstance(scenarios, Mapping):
        return []
    lines = []
    for scenario in HEADLINE_SCENARIOS[::-1]:
        entry = scenarios.get(scenario)
        if not isinstance(entry, Mapping):
            continue
        row = entry.get("row")
        if not isinstance(row, Mapping) or row.get("pretrained") is not True:
            continue
        head = entry.get("headline") or {}
        trained = head.get(eer_key) if isinstance(head, Mapping) else None
        beside = (
            f", below the trained attacker's {float(trained):.1f} % ({head.get('attacker')}, "
            f"{head.get('backend')})"
            if isinstance(trained, int | float)
            else ""
        )
        lines.append(
            f"  {scenario}: EER {float(row[eer_key]):.1f} % by {row.get('attacker')} "
            f"(pretrained){beside}: the {scenario} row reports the stronger attacker"
        )
    return lines


UNRELIABLE_ASR_WER_PERCENT = 50.0
"""An ASR that misses this share of the words of ORIGINAL speech cannot judge intelligibility."""


def _utility_lines(values: Mapping[str, float | None] | None) -> list[str]:
    """The verdict's utility lines (a result without a utility block has none)."""
    if not values:
        return []
    parts = []
    wer_o = values.get(catalogue.WER_ORIGINAL.key)
    wer_a = values.get(catalogue.WER_ANONYMIZED.key)
    increase = values.get(catalogue.WER_INCREASE.key)
    if wer_a is not None and wer_o is not None and increase is not None:
        low = values.get(catalogue.WER_INCREASE_CI95_LOW.key)
        high = values.get(catalogue.WER_INCREASE_CI95_HIGH.key)
        interval = f" [{low:.1f}, {high:.1f}]" if low is not None and high is not None else ""
        parts.append(
            f"WER {wer_a:.1f} % on anonymized vs {wer_o:.1f} % on original speech "
            f"({increase:+.1f} points{interval})"
        )
    rho = values.get(catalogue.PITCH_CORRELATION.key)
    if rho is not None:
        parts.append(f"pitch correlation {rho:.2f}")
    gvd = values.get(catalogue.VOICE_DISTINCTIVENESS.key)
    if gvd is not None:
        parts.append(f"GVD {gvd:+.1f} dB")
    lines = [f"  utility:   {'; '.join(parts)}"] if parts else []
    if wer_o is not None and wer_o >= UNRELIABLE_ASR_WER_PERCENT:
        lines.append(
            f"             the utility ASR is not reliable (WER {wer_o:.0f} % on original "
            "speech): its WER says little about the anonymizer"
        )
    usable = values.get(catalogue.USABLE_SPEECH.key)
    if usable is not None and usable < 0.5:
        lines.append(
            "             UNUSABLE SPEECH: the output is not speech (silence, noise, one voice "
            "for all, clipping or no words); it ranks after every usable submission"
        )
    elif usable is not None:
        lines.append("             usable speech (passed the degenerate-output guard)")
    return lines


def print_verdict(
    console: Any,
    results: Sequence[Mapping[str, Any]],
    trust: Mapping[str, Any] | None,
    *,
    where: str | None = None,
) -> None:
    """Print :func:`verdict_lines` on a rich ``console`` (no markup, no highlighting)."""
    for line in verdict_lines(results, trust, where=where):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def document_rows(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A ``results.json`` document's long-format rows (as the API serves them)."""
    from services.platform.results.document import result_rows_from_document

    zoo = "worst_case" in document
    return [
        {
            **({"attacker": r.attacker} if zoo else {}),
            "scenario": r.scenario,
            "backend": r.backend,
            "seed": r.seed,
            "metric": r.metric,
            "value": r.value,
        }
        for r in result_rows_from_document(document)
    ]
