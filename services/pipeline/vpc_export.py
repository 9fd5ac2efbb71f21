"""Result files in the VoicePrivacy 2024 toolkit's own layout, file for file.

The toolkit (``Voice-Privacy-Challenge-2024``: ``run_evaluation.py``, ``evaluate_asv.py``,
``evaluate_asr.py``, ``configs/eval_pre.yaml`` / ``eval_post.yaml``, ``02_run.sh``) writes, for
an anonymization suffix ``<suffix>`` (``_b1``):

* ``exp/asv_orig/results<suffix>.csv``: the ASV_eval model (trained on original speech), one row
  per trial list and condition (OO, OA, AA), columns ``,dataset,split,gender,enrollment,trial,
  EER`` (a pandas index first; EER in percent, three decimals);
* ``exp/asv_anon<suffix>/results<suffix>.csv``: the same for ASV_eval^anon (trained on
  anonymized speech);
* ``exp/asr/results<suffix>.csv``: ``,dataset,split,asr,WER`` (original and anonymized speech);
* ``exp/results_summary/eval_orig<suffix>/results_orig.txt`` (the OO rows of ASV_eval and the
  ASR rows, as pandas prints them) and ``exp/results_summary/eval_anon<suffix>/
  results_anon.txt`` (the AA rows of ASV_eval^anon), each beside a ``config.yaml``;
* ``exp/results_summary/result_for_rank<suffix>``: ``results_orig.txt``, an empty line,
  ``results_anon.txt`` (what the organizers rank).

:func:`export_vpc` writes those from an Unmask result whose protocol was built from the
VoicePrivacy lists. Unmask's scenarios are the toolkit's conditions: ``original`` = OO,
``ignorant`` = OA and ``lazy-informed`` = AA with ASV_eval; ``semi-informed`` = AA with
ASV_eval^anon (a condition an evaluation did not run has no row). The EER is the mean over the
result's seeds of one attacker (``vpc2024`` when the zoo has it) and one back-end (cosine when
present). Unmask measures WER over the trial utterances of every list together: one row per
condition, its ``split`` naming the splits pooled (``dev+test``). ``UNMASK.md`` beside ``exp/``
says where the numbers come from (Unmask version, attacker, back-end, seeds, the suffix and the
anonymizer's declared name).
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from services.errors import InvalidInputError
from services.metrics import catalogue

ASV_ORIG = "orig"
ASV_ANON = "anon"
CONDITIONS: dict[str, tuple[str, str, str]] = {
    "original": (ASV_ORIG, "original", "original"),
    "ignorant": (ASV_ORIG, "original", "anon"),
    "lazy-informed": (ASV_ORIG, "anon", "anon"),
    "semi-informed": (ASV_ANON, "anon", "anon"),
}
"""Unmask scenario -> (the toolkit's ASV model, enrollment data, trial data)."""
CONDITION_ORDER = ("original", "ignorant", "lazy-informed", "semi-informed")
"""The toolkit's order per trial list: OO, OA, AA."""

ASV_COLUMNS = ("dataset", "split", "gender", "enrollment", "trial", "EER")
ASR_COLUMNS = ("dataset", "split", "asr", "WER")
PREFERRED_ATTACKER = "vpc2024"
"""The 2024 toolkit's attacker, exported when the zoo has it."""


def _dataset_split(dataset: str) -> tuple[str, str]:
    """``libri_dev`` -> (``libri``, ``dev``); a name without ``_`` keeps an empty split."""
    head, _, tail = dataset.partition("_")
    return head, tail


def to_csv(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> str:
    """What ``pandas.DataFrame(rows).to_csv(path)`` writes: an unnamed index column first."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["", *columns])
    for i, row in enumerate(rows):
        writer.writerow(
            [i, *(repr(row[c]) if isinstance(row[c], float) else row[c] for c in columns)]
        )
    return buf.getvalue()


def _float_cells(values: Sequence[float]) -> list[str]:
    """A float column as pandas prints it: six decimals, trailing zeros trimmed alike (at least
    one decimal), a leading space for the sign."""
    cells = [f"{v:.6f}" for v in values]
    while cells and all(c.endswith("0") and not c.endswith(".0") for c in cells):
        cells = [c[:-1] for c in cells]
    return [c if c.startswith("-") else " " + c for c in cells]


def to_text(columns: Sequence[str], rows: Sequence[tuple[int, dict[str, Any]]]) -> str:
    """What ``DataFrame.to_string()`` prints for ``rows`` (index label, row): index labels
    left-justified, values and headers right-justified, one space between columns."""
    cells: dict[str, list[str]] = {}
    for c in columns:
        values = [row[c] for _, row in rows]
        if values and all(isinstance(v, float) for v in values):
            cells[c] = _float_cells(values)
        else:
            cells[c] = [str(v) for v in values]
    labels = [str(i) for i, _ in rows]
    index_width = max((len(x) for x in labels), default=0)
    widths = {c: max([len(c), *(len(x) for x in cells[c])]) for c in columns}
    lines = [" " * index_width + "".join(" " + c.rjust(widths[c]) for c in columns)]
    for n, label in enumerate(labels):
        lines.append(
            label.ljust(index_width) + "".join(" " + cells[c][n].rjust(widths[c]) for c in columns)
        )
    return "\n".join(lines)


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


def _listed_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [r for r in doc["rows"] if isinstance(r.get("trial_lists"), dict)]
    if not rows:
        raise InvalidInputError(
            "the result has no per-list EERs: its protocol was not built from the VoicePrivacy "
            "lists (unmask corpus protocol --vpc-lists)"
        )
    return rows


def choose_attacker(doc: dict[str, Any], wanted: str | None = None) -> str | None:
    """The attacker whose EERs are exported: ``wanted``, else ``vpc2024`` when the zoo has it,
    else the only one (None: a result without a zoo)."""
    names = sorted({str(r["attacker"]) for r in _listed_rows(doc) if r.get("attacker")})
    if wanted is not None:
        if wanted not in names:
            raise InvalidInputError(
                f"--attacker {wanted!r}: the result's attackers are {', '.join(names) or 'none'}"
            )
        return wanted
    if not names:
        return None
    if PREFERRED_ATTACKER in names:
        return PREFERRED_ATTACKER
    if len(names) == 1:
        return names[0]
    raise InvalidInputError(
        f"the result has several attackers ({', '.join(names)}): name one with --attacker"
    )


def choose_backend(doc: dict[str, Any]) -> str:
    """Cosine when the result has it (the toolkit's ``distance: cosine``), else the first."""
    backends = sorted({str(r["backend"]) for r in _listed_rows(doc)})
    return "cosine" if "cosine" in backends else backends[0]


def asv_rows(
    doc: dict[str, Any], attacker: str | None, backend: str
) -> dict[str, list[dict[str, Any]]]:
    """Per ASV model (``orig``, ``anon``): the toolkit's rows in its order (trial lists by name,
    then OO, OA, AA), each EER (%) the mean over seeds, three decimals."""
    eers: dict[tuple[str, str], list[float]] = defaultdict(list)
    meta: dict[str, dict[str, Any]] = {}
    for r in _listed_rows(doc):
        if r["backend"] != backend or r["scenario"] not in CONDITIONS:
            continue
        if attacker is not None and r.get("attacker") != attacker:
            continue
        for name, entry in r["trial_lists"].items():
            meta[name] = entry
            eer = entry.get(catalogue.EER.key)
            if eer is not None:
                eers[(name, r["scenario"])].append(float(eer))
    out: dict[str, list[dict[str, Any]]] = {ASV_ORIG: [], ASV_ANON: []}
    for name in sorted(meta):
        for scenario in CONDITION_ORDER:
            values = eers.get((name, scenario))
            if not values:
                continue
            model, enrollment, trial = CONDITIONS[scenario]
            dataset, split = _dataset_split(str(meta[name]["dataset"]))
            gender = str(meta[name]["gender"]) + ("_common" if "common" in name else "")
            out[model].append(
                {
                    "dataset": dataset,
                    "split": split,
                    "gender": gender,
                    "enrollment": enrollment,
                    "trial": trial,
                    "EER": round(sum(values) / len(values), 3),
                }
            )
    return out


def asr_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The WER rows (original, then anonymized speech) when the result measured WER."""
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


def _sorted_for_summary(
    rows: list[dict[str, Any]], keep: tuple[str, str]
) -> list[tuple[int, dict[str, Any]]]:
    """The toolkit's summary selection: the rows of one condition, by dataset and split (a
    stable sort), with their index labels in the CSV."""
    picked = [(i, r) for i, r in enumerate(rows) if (r["enrollment"], r["trial"]) == keep]
    return sorted(picked, key=lambda item: (item[1]["dataset"], item[1]["split"]))


def summaries(
    asv: dict[str, list[dict[str, Any]]], asr: list[dict[str, Any]], when: datetime
) -> tuple[str, str]:
    """(``results_orig.txt``, ``results_anon.txt``) as the toolkit's ``save_result_summary``
    writes them."""
    head = f"---- Time: {when.strftime('%d-%m-%y_%H:%M')} ----\n"
    orig = head
    if asv[ASV_ORIG]:
        table = to_text(ASV_COLUMNS, _sorted_for_summary(asv[ASV_ORIG], ("original", "original")))
        orig += "\n---- ASV_eval results ----\n" + table + "\n"
    if asr:
        ordered = sorted(enumerate(asr), key=lambda item: (item[1]["dataset"], item[1]["split"]))
        orig += "\n---- ASR results ----\n" + to_text(ASR_COLUMNS, ordered) + "\n"
    anon = head
    if asv[ASV_ANON]:
        table = to_text(ASV_COLUMNS, _sorted_for_summary(asv[ASV_ANON], ("anon", "anon")))
        anon += "\n---- ASV_eval^anon results ----\n" + table + "\n"
    return orig, anon


def detected_suffix(doc: dict[str, Any]) -> str | None:
    """The VoicePrivacy suffix the result records (a VoicePrivacy-layout archive's), or None."""
    value = (doc.get("anonymizer") or {}).get("vpc_suffix")
    return str(value) if value else None


def _config_yaml(suffix: str, summary: str) -> str:
    return (
        "# written by `unmask export --format vpc` (where the toolkit keeps its config)\n"
        f"data_dir: data\nexp_dir: exp\nanon_data_suffix: {suffix}\n"
        f"results_summary_path: {summary}\n"
    )


def _provenance_note(
    doc: dict[str, Any], suffix: str, src: Path, attacker: str | None, backend: str
) -> str:
    prov = doc.get("provenance") or {}
    version = (prov.get("packages") or {}).get("unmask", "unknown")
    code = prov.get("code_version") or "unknown"
    config = prov.get("config") or {}
    seeds = ", ".join(str(s) for s in prov.get("seeds") or config.get("seeds") or [])
    anonymizer = doc.get("anonymizer") or {}
    detected = detected_suffix(doc)
    return (
        "# Unmask results in the VoicePrivacy 2024 toolkit's layout\n\n"
        f"- Unmask version {version} (code {code}); result `{src / 'results.json'}`, evaluation "
        f"`{doc.get('name', '?')}`, protocol `{(doc.get('protocol') or {}).get('name')}`.\n"
        f"- Anonymizer: {anonymizer.get('name') or '?'}; suffix "
        f"`{suffix}` ({'detected in the archive' if detected == suffix else 'given'}"
        f"{f'; the archive had `{detected}`' if detected and detected != suffix else ''}).\n"
        f"- Attacker: {attacker or 'the evaluation config'}; back-end {backend}; seeds "
        f"{seeds or '?'} (EERs are the mean over seeds). `exp/asv_orig`: original, ignorant and "
        "lazy-informed scenarios (OO, OA, AA); `exp/asv_anon" + suffix + "`: semi-informed (AA).\n"
        "- `exp/asr` (when WER was measured): the evaluation's ASR over the trial utterances of "
        "every list together (`split` names the splits pooled).\n"
    )


def export_vpc(
    results_dir: str | Path,
    out_dir: str | Path,
    *,
    suffix: str | None = None,
    attacker: str | None = None,
) -> list[Path]:
    """Write the toolkit's files (module docstring) for the evaluation in ``results_dir`` into
    ``out_dir``; returns the files written. Nothing is written on an error. ``suffix``: the
    anonymization suffix (default: the one detected in the evaluated archive)."""
    src = Path(results_dir)
    doc = read_result(src)
    if suffix is None:
        suffix = detected_suffix(doc)
        if suffix is None:
            raise InvalidInputError(
                "--suffix: the result records no VoicePrivacy suffix (its anonymizer was not a "
                "VoicePrivacy-layout archive); name one, e.g. --suffix _pitch"
            )
    if not suffix or any(c in suffix for c in "/\\") or suffix in (".", ".."):
        raise InvalidInputError(f"--suffix {suffix!r}: must be non-empty, without a path separator")
    chosen = choose_attacker(doc, attacker)
    backend = choose_backend(doc)
    asv = asv_rows(doc, chosen, backend)
    asr = asr_rows(doc)
    created = doc.get("created_at")
    when = datetime.fromisoformat(created) if isinstance(created, str) else datetime.now()
    orig, anon = summaries(asv, asr, when)
    summary = Path("exp") / "results_summary"
    orig_path = summary / f"eval_orig{suffix}" / "results_orig.txt"
    anon_path = summary / f"eval_anon{suffix}" / "results_anon.txt"
    files: dict[Path, str] = {}
    if asv[ASV_ORIG]:
        files[Path("exp") / "asv_orig" / f"results{suffix}.csv"] = to_csv(
            ASV_COLUMNS, asv[ASV_ORIG]
        )
    if asv[ASV_ANON]:
        files[Path("exp") / f"asv_anon{suffix}" / f"results{suffix}.csv"] = to_csv(
            ASV_COLUMNS, asv[ASV_ANON]
        )
    if asr:
        files[Path("exp") / "asr" / f"results{suffix}.csv"] = to_csv(ASR_COLUMNS, asr)
    files[orig_path] = orig
    files[orig_path.with_name("config.yaml")] = _config_yaml(suffix, str(orig_path))
    files[anon_path] = anon
    files[anon_path.with_name("config.yaml")] = _config_yaml(suffix, str(anon_path))
    files[summary / f"result_for_rank{suffix}"] = orig + "\n" + anon
    files[Path("UNMASK.md")] = _provenance_note(doc, suffix, src, chosen, backend)
    out = Path(out_dir)
    written = []
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written
