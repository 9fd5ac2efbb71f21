"""Result files in the VoicePrivacy Challenge layout, to paste beside a VoicePrivacy table.

The VoicePrivacy 2024 evaluation scripts write the ASV results as a CSV per anonymization suffix,
one row per (dataset, split, gender, enrollment data, trial data) with the EER in percent (three
decimals), and the ASR results as a CSV with one row per (dataset, split, data) with the WER.
`export_vpc` writes the same columns from an Unmask result whose protocol was built from the
VoicePrivacy lists, adding the Unmask scenario (the attacker's knowledge, which the VoicePrivacy
columns only imply) and the attacker name:

* ``asv/results<suffix>.csv``: ``,dataset,split,gender,enrollment,trial,scenario,attacker,EER``
  per trial list (``libri_dev_trials_f`` -> ``libri``, ``dev``, ``f``) and scenario, the EER
  averaged over the result's seeds (cosine back-end when present, as the VoicePrivacy attackers);
* ``asr/results<suffix>.csv``: ``,dataset,split,asr,WER`` where the result measured WER (over the
  protocol's trial utterances of every list together; ``split`` names the splits pooled);
* ``README.md``: the Unmask version, the attacker(s), the back-end and seeds, where it came from.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from services.errors import InvalidInputError
from services.metrics import catalogue

SCENARIO_DATA: dict[str, tuple[str, str]] = {
    "original": ("original", "original"),
    "ignorant": ("original", "anon"),
    "lazy-informed": ("anon", "anon"),
    "semi-informed": ("anon", "anon"),
}
"""Unmask scenario -> the VoicePrivacy (enrollment, trial) data columns."""

ASV_COLUMNS = (
    "",
    "dataset",
    "split",
    "gender",
    "enrollment",
    "trial",
    "scenario",
    "attacker",
    "EER",
)
ASR_COLUMNS = ("", "dataset", "split", "asr", "WER")


def _dataset_split(dataset: str) -> tuple[str, str]:
    """``libri_dev`` -> (``libri``, ``dev``); a name without ``_`` keeps an empty split."""
    head, _, tail = dataset.partition("_")
    return head, tail


def _csv(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for i, row in enumerate(rows):
        writer.writerow([i, *(row[c] for c in columns[1:])])
    return buf.getvalue()


def read_result(results_dir: Path) -> dict[str, Any]:
    """The result document of an evaluation folder (``results.json``); clear errors otherwise."""
    path = results_dir / "results.json" if results_dir.is_dir() else results_dir
    if not path.is_file():
        raise InvalidInputError(f"{results_dir}: no results.json (an evaluation's output folder)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        why = " ".join(str(exc).split())
        raise InvalidInputError(f"{path}: unreadable result ({why})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise InvalidInputError(f"{path}: not an Unmask result document (no rows)")
    return doc


def asv_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (trial list, scenario, attacker): the EER (%) mean over seeds."""
    rows = [r for r in doc["rows"] if isinstance(r.get("trial_lists"), dict)]
    if not rows:
        raise InvalidInputError(
            "the result has no per-list EERs: its protocol was not built from the VoicePrivacy "
            "lists (unmask corpus protocol --vpc-lists)"
        )
    backends = {r["backend"] for r in rows}
    backend = "cosine" if "cosine" in backends else sorted(backends)[0]
    eers: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    meta: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["backend"] != backend or r["scenario"] not in SCENARIO_DATA:
            continue
        attacker = str(r.get("attacker") or doc.get("provenance", {}).get("attacker") or "default")
        for name, entry in r["trial_lists"].items():
            meta[name] = entry
            eer = entry.get(catalogue.EER.key)
            if eer is not None:
                eers[(name, r["scenario"], attacker)].append(float(eer))
    out = []
    for (name, scenario, attacker), values in sorted(eers.items()):
        dataset, split = _dataset_split(meta[name]["dataset"])
        enrollment, trial = SCENARIO_DATA[scenario]
        out.append(
            {
                "dataset": dataset,
                "split": split,
                "gender": meta[name]["gender"],
                "enrollment": enrollment,
                "trial": trial,
                "scenario": scenario,
                "attacker": attacker,
                "EER": round(sum(values) / len(values), 3),
            }
        )
    return out


def asr_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The WER rows (original and anonymized speech) when the result measured WER."""
    original, anonymized = catalogue.WER_ORIGINAL, catalogue.WER_ANONYMIZED
    assert original.path is not None
    wer = (doc.get("utility") or {}).get(original.path[0])
    if not isinstance(wer, dict) or wer.get(original.key) is None:
        return []
    datasets = sorted(
        {e["dataset"] for r in doc["rows"] for e in (r.get("trial_lists") or {}).values()}
    )
    names = sorted({_dataset_split(d)[0] for d in datasets}) or ["all"]
    splits = "+".join(sorted({_dataset_split(d)[1] for d in datasets}))
    return [
        {
            "dataset": "+".join(names),
            "split": splits,
            "asr": data,
            "WER": round(float(wer[metric.key]), 3),
        }
        for data, metric in (("original", original), ("anon", anonymized))
    ]


def _readme(doc: dict[str, Any], suffix: str, results_dir: Path, backend: str) -> str:
    prov = doc.get("provenance") or {}
    version = (prov.get("packages") or {}).get("unmask", "unknown")
    code = prov.get("code_version") or "unknown"
    config = prov.get("config") or {}
    training = config.get("training") or {}
    attackers = sorted({str(r.get("attacker")) for r in doc["rows"] if r.get("attacker")})
    attacker = (
        f"the attacker zoo members {', '.join(attackers)}"
        if attackers
        else f"one attacker, preset {training.get('preset', '?')}, {training.get('epochs', '?')} "
        "epochs"
    )
    seeds = ", ".join(str(s) for s in prov.get("seeds") or config.get("seeds") or [])
    protocol = (doc.get("protocol") or {}).get("name")
    return (
        f"# Unmask results in the VoicePrivacy layout\n\n"
        f"- Unmask version {version} (code {code}); result `{results_dir / 'results.json'}`, "
        f"evaluation `{doc.get('name', '?')}`, protocol `{protocol}`.\n"
        f"- Attacker: {attacker}; back-end {backend}; seeds {seeds or '?'} (EERs are the mean "
        "over seeds).\n"
        f"- `asv/results{suffix}.csv`: EER (%) per trial list and scenario. The VoicePrivacy "
        "columns enrollment/trial say which data each side used; `scenario` says what the "
        "attacker's recognizer was trained on (original speech for original, ignorant and "
        "lazy-informed; anonymized speech for semi-informed).\n"
        f"- `asr/results{suffix}.csv` (when WER was measured): WER (%) of the evaluation's ASR "
        "over the trial utterances of every list together.\n"
    )


def export_vpc(results_dir: str | Path, out_dir: str | Path, *, suffix: str = "") -> list[Path]:
    """Write the VoicePrivacy-layout files of the evaluation in ``results_dir`` into ``out_dir``
    (see the module docstring); returns the files written. Nothing is written on an error.
    ``suffix``: the anonymization suffix in the file names (``results_b1.csv``)."""
    if any(c in suffix for c in "/\\") or suffix in (".", ".."):
        raise InvalidInputError(f"suffix {suffix!r}: must not contain a path separator")
    src = Path(results_dir)
    doc = read_result(src)
    asv = asv_rows(doc)
    asr = asr_rows(doc)
    rows = [r for r in doc["rows"] if isinstance(r.get("trial_lists"), dict)]
    backend = "cosine" if any(r["backend"] == "cosine" for r in rows) else rows[0]["backend"]
    out = Path(out_dir)
    files = {Path("asv") / f"results{suffix}.csv": _csv(ASV_COLUMNS, asv)}
    if asr:
        files[Path("asr") / f"results{suffix}.csv"] = _csv(ASR_COLUMNS, asr)
    files[Path("README.md")] = _readme(doc, suffix, src, backend)
    written = []
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written
