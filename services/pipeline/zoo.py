"""The worst-case verdict over an attacker zoo's result rows.

A privacy verdict is only as strong as the strongest attacker it was measured against. The
attackers themselves (``AttackerSpec``, the named zoos) are recipes in
``services.attacker.recipes``; every result row carries the name of its ``attacker``, and
:func:`worst_case` picks, per scenario, the result that is worst for the anonymizer's maker
(lowest EER, highest disclosure), naming the attacker and back-end that achieved it;
:func:`headline` names the headline scenario's worst-case attacker.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from services.attacker.recipes.spec import BASELINE
from services.metrics import catalogue
from services.vocab import HEADLINE_SCENARIOS

__all__ = ["headline", "row_attacker", "worst_case"]


def headline(worst: Mapping[str, Mapping[str, Any]]) -> tuple[str | None, str]:
    """(headline scenario, its worst-case attacker) of a ``worst_case`` block; (None,
    ``baseline``) when it is empty."""
    for scenario in (*HEADLINE_SCENARIOS, "original"):
        entry = worst.get(scenario)
        if isinstance(entry, Mapping) and entry.get("attacker"):
            return scenario, str(entry["attacker"])
    return None, BASELINE


# -- the worst case ------------------------------------------------------------------------------


def row_attacker(row: Mapping[str, Any]) -> str:
    """The attacker of a result row (rows of evaluations without a zoo are the baseline's)."""
    return str(row.get("attacker") or BASELINE)


def worst_case(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per scenario, the result worst for the anonymizer's maker over attackers and back-ends.

    Each (attacker, back-end) is first averaged over its seeds (``summarize_seed_values``); the
    headline is the (attacker, back-end) with the lowest mean EER (%), ties broken by attacker
    then back-end name. ``metrics`` holds, for every seed-summary metric of the catalogue, its
    worst value (lowest for higher-is-better metrics such as EER and min Cllr, highest for
    disclosure: SRD, linkability, detection rates) and the attacker and back-end that achieved
    it; a metric no row carries is left out. Returns ``{scenario: {"attacker", "backend",
    <the EER key>, "n_seeds", "attackers", "metrics": {key: {"value", "attacker", "backend"}}}}``.
    """
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((str(r["scenario"]), row_attacker(r), str(r["backend"])), []).append(r)
    means: dict[tuple[str, str, str], dict[str, float]] = {}
    for key, sel in groups.items():
        summary = catalogue.summarize_seed_values(list(sel))
        means[key] = {
            k: v["mean"] for k, v in summary.items() if v is not None and math.isfinite(v["mean"])
        }
    out: dict[str, dict[str, Any]] = {}
    eer = catalogue.EER
    for scenario in dict.fromkeys(k[0] for k in groups):
        keys = sorted(k for k in means if k[0] == scenario)
        metrics: dict[str, dict[str, Any]] = {}
        for m in catalogue.seed_summary_metrics():
            candidates = {(a, b): means[(scenario, a, b)].get(m.key) for _, a, b in keys}
            pick = catalogue.worst_for_maker(m.key, candidates)
            if pick is not None:
                value = candidates[pick]
                metrics[m.key] = {"value": value, "attacker": pick[0], "backend": pick[1]}
        headline = metrics.get(eer.key)
        attacker = headline["attacker"] if headline else keys[0][1]
        backend = headline["backend"] if headline else keys[0][2]
        out[scenario] = {
            "attacker": attacker,
            "backend": backend,
            eer.key: headline["value"] if headline else None,
            "n_seeds": len(groups[(scenario, attacker, backend)]),
            "attackers": sorted({k[1] for k in keys}),
            "metrics": metrics,
        }
    return out
