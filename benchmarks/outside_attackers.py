"""Attackers from outside: per corpus, every attacker family x scenario, the verdict and the trust.

For each corpus (the built-in synthetic one, and the eSpeak NG corpus that
``services/corpus/espeak.py`` renders from Debian's espeak-ng) and each seed, one evaluation of
the built-in ``--anonymizer`` (default pitch) runs a zoo of the attacker families, every scenario
(original, ignorant, lazy-informed, semi-informed) and both back-ends:

    baseline     the config's attacker: the anonymized-speech recognizer fine-tuned from the
                 same seed's original-speech recognizer (the default), epochs cap E
    scratch-3x   from random weights, 3E (the former `long`)
    finetuned    the `strongest` zoo's fine-tuned attacker (3E, from the original recognizer)
    ge2e         Resemblyzer's pretrained GE2E verifier, never trained here (cosine)
    ge2e-finetuned  that verifier fine-tuned on each scenario's training speech, cap E

and the challenger (GE2E on the headline's trials, ``services/pipeline/challenger.py``). The
table per corpus: EER % (mean over seeds; the mean of the seeds' 95 % speaker-bootstrap
intervals in brackets) per attacker and back-end x scenario; then the verdict (the worst case of
the semi-informed scenario, naming its attacker), the challenger's EER and paired interval, and
the trust decision with its reasons, per seed. Every run is a normal evaluation in one shared
stage store per corpus (``--out``), so a rerun with more seeds trains only the new ones.

    OMP_NUM_THREADS=1 UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/outside_attackers.py \
        --out out/outside --seeds 0 1 2                   # the calibration size (hours of CPU)
    .venv/bin/python benchmarks/outside_attackers.py --out out/outside-smoke --smoke
                                                          # minutes: 12 speakers x 8 utterances
    .venv/bin/python benchmarks/outside_attackers.py --out out/outside-small --size small
                                                          # 24 speakers x 12, cap 4 epochs

With ``--trust-caps``, the trust check is judged per corpus: beside each seed's zoo run, runs of
the config's attacker ALONE (no zoo: what a maker gets by default) at the default cap and at the
short caps given, starting from the original-speech recognizer (the default) and from scratch.
Each judged run's verdict (semi-informed, its better back-end) is "improvable" when some family of
the same seed's zoo run (every family for the short caps; every family but ``baseline``, which is
the run itself, for the default cap) reached an EER below the lower end of the judged verdict's
95 % interval. The check's positive is "NOT TRUSTWORTHY"; printed: each judged run, then
precision (flagged runs that were improvable) and recall (improvable runs that were flagged).

    OMP_NUM_THREADS=1 UNMASK_NUM_THREADS=1 .venv/bin/python benchmarks/outside_attackers.py \
        --out out/outside --seeds 0 1 2 --trust-caps 2 4

Each judged run's decision is re-assessed with today's code and settings (a rerun over stored
results judges the check as it is now), and the judged runs are re-assessed under a grid of the
still-falling test's window and bound and of the VER_S bound. ``--families baseline finetuned
ge2e`` runs a reduced zoo (its own run names; the stages are shared), about half the CPU time,
when the best family is known to be among them.

The calibration size is 72 speakers (36 attacker-training, 24 evaluation, 12 target) x 16
utterances per corpus, the `tiny` preset and a cap of 10 epochs; ``--smoke`` is 12 x 8 and a cap
of 2 epochs, which says whether everything runs, not which attacker is stronger.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from services.anonymizers.kinds.builtin import BuiltinAnonymizerConfig
from services.attacker.recipes import AttackerSpec, long_attacker_pair
from services.attacker.training_config import TrainingConfig
from services.corpus.espeak import build_espeak_corpus
from services.corpus.importers import import_librispeech
from services.corpus.loaders import write_manifest
from services.corpus.protocol import TargetSelection, build_protocol, save_protocol
from services.metrics import catalogue
from services.pipeline.challenger import challenge_decision
from services.pipeline.config import EvaluationConfig, MetricsSpec, SyntheticCorpusSpec
from services.pipeline.evaluation import run_evaluation
from services.scoring.trial_scores import load_scored_trials, speaker_trials, trials_path

SCENARIOS = ["original", "ignorant", "lazy-informed", "semi-informed"]
CORPORA = ("synthetic", "espeak")


def attackers(families: Sequence[str] | None = None) -> list[AttackerSpec]:
    """The families of the table (module docstring); ``families``: only these (names), all when
    None."""
    every = [
        AttackerSpec(name="baseline"),
        AttackerSpec(name="scratch-3x", training={"start": "scratch"}, epochs_scale=3),
        long_attacker_pair("finetuned", {"start": "original"})[0],
        AttackerSpec(name="ge2e", pretrained="ge2e"),
        AttackerSpec(name="ge2e-finetuned", pretrained="ge2e", finetune=True),
    ]
    if families is None:
        return every
    unknown = sorted(set(families) - {a.name for a in every})
    if unknown or "baseline" not in families:
        raise SystemExit(
            f"--families: unknown {unknown}" if unknown else "--families must include baseline"
        )
    return [a for a in every if a.name in families]


FAMILIES = ("baseline", "scratch-3x", "finetuned", "ge2e", "ge2e-finetuned")


SIZES: dict[str, dict[str, int]] = {
    "smoke": {"speakers": 12, "utterances": 8, "train": 6, "eval": 4, "targets": 2, "epochs": 2},
    "small": {"speakers": 24, "utterances": 12, "train": 12, "eval": 8, "targets": 4, "epochs": 4},
    "calibration": {
        "speakers": 72,
        "utterances": 16,
        "train": 36,
        "eval": 24,
        "targets": 12,
        "epochs": 10,
    },
}
"""Corpus and schedule sizes: ``smoke`` says whether everything runs, ``small`` is the smallest
that separates attackers at all (8 evaluation speakers), ``calibration`` the issue's size."""


def sizes(smoke: bool = False, name: str | None = None) -> dict[str, int]:
    return SIZES[name or ("smoke" if smoke else "calibration")]


def espeak_protocol(out: Path, size: Mapping[str, int]) -> Path:
    """The eSpeak NG corpus and its protocol under ``out`` (built once, then reused)."""
    folder = out / f"espeak-{size['speakers']}x{size['utterances']}"
    protocol_file = folder / "protocol.json"
    if protocol_file.is_file():
        return protocol_file
    print(f"building {folder}", flush=True)
    build_espeak_corpus(folder / "corpus", size["speakers"], size["utterances"], seed=0)
    manifest, problems = import_librispeech(folder / "corpus")
    if problems:
        raise SystemExit(f"the eSpeak NG corpus has problems: {problems[:3]}")
    manifest = write_manifest(manifest, folder / "manifest.jsonl")  # as the file holds it
    trials = max(1, size["utterances"] // 2)
    protocol = build_protocol(
        manifest,
        name=folder.name,
        manifest_path="manifest.jsonl",
        n_attacker_train_speakers=size["train"],
        n_eval_speakers=size["eval"],
        n_target_speakers=size["targets"],
        enrollments_per_speaker=size["utterances"] - trials,
        trials_per_speaker=trials,
    )
    save_protocol(protocol, protocol_file)
    return protocol_file


def make_config(
    corpus: str,
    seed: int,
    size: Mapping[str, int],
    anonymizer: str,
    protocol: Path | None,
    families: Sequence[str] | None = None,
) -> EvaluationConfig:
    trials = max(1, size["utterances"] // 2)
    synthetic = SyntheticCorpusSpec(
        n_speakers=size["speakers"],
        utts_per_speaker=size["utterances"],
        n_attacker_train_speakers=size["train"],
        n_eval_speakers=size["eval"],
        n_target_speakers=size["targets"],
        enrollments_per_speaker=size["utterances"] - trials,
        trials_per_speaker=trials,
    )
    # A reduced zoo gets its own name (and results.json); the stages are shared all the same.
    zoo = "" if families is None else "-zoo-" + "-".join(sorted(families))
    return EvaluationConfig(
        name=f"outside-{corpus}-{anonymizer}-{size['speakers']}x{size['utterances']}-seed{seed}"
        f"{zoo}",
        protocol_file=protocol if corpus == "espeak" else None,
        synthetic=synthetic,
        anonymizer=BuiltinAnonymizerConfig(name=anonymizer),
        tsa=TargetSelection(strategy="same-gender", granularity="utterance", seed=0),
        scenarios=SCENARIOS,
        training=TrainingConfig(preset="tiny", epochs=size["epochs"], batch_size=32),
        seeds=[seed],
        backends=["cosine", "plda"],
        metrics=MetricsSpec(srd=False, linkability=False, zebra=False, bootstrap_resamples=200),
        attackers=attackers(families),
    )


def run_one(out: Path, cfg: EvaluationConfig) -> dict[str, Any]:
    path = out / cfg.name / "results.json"
    if path.is_file():
        result: dict[str, Any] = json.loads(path.read_text())
        return result
    print(f"running {cfg.name}", flush=True)
    return run_evaluation(cfg, out / cfg.name, stages_dir=out / "stages")


JUDGED_STARTS = ("original", "scratch")
"""Where the judged runs' anonymized-speech recognizers start (the default first)."""


def judged_config(base: EvaluationConfig, cap: int, start: str) -> EvaluationConfig:
    """``base`` with its attacker alone (no zoo) at an epochs cap of ``cap``, starting from
    ``start``: a run whose trust decision is judged."""
    data = base.model_dump(mode="json", exclude={"attackers"})
    data["name"] = f"{base.name}-alone-{start}-cap{cap}"
    data["training"] = data["training"] | {"epochs": cap}
    if start != "original":
        # Unset is the default (original, since the run trains original-speech recognizers):
        # left unset, the default-cap run shares the zoo run's baseline stages.
        data["training"]["start"] = start
    return EvaluationConfig.model_validate(data)


def judged_run(
    result: Mapping[str, Any], zoo: Mapping[str, Any], *, start: str, cap: int, default_cap: int
) -> dict[str, Any]:
    """One judged run: its verdict, interval, trust decision and ground truth (module docstring)
    against the same seed's zoo run ``zoo``."""
    eer = catalogue.EER.key
    # The verdict of a run without a zoo: its better back-end.
    row = min(
        (r for r in result["rows"] if r["scenario"] == "semi-informed" and r.get(eer) is not None),
        key=lambda r: (r[eer], r["backend"]),
    )
    itself = start == "original" and cap == default_cap
    alternatives = [
        r
        for r in zoo["rows"]
        if r["scenario"] == "semi-informed"
        and r.get(eer) is not None
        and not (itself and r["attacker"] == "baseline")
    ]
    best = min(alternatives, key=lambda r: (r[eer], r["attacker"], r["backend"]))
    from services.pipeline.trust import assess_trust

    entry = next(iter(v for k, v in result["training"].items() if k.startswith("anonymized")))
    # Re-assessed with today's code and settings: a rerun over stored results judges the check
    # as it is now, not as it was when the run was computed.
    trust = assess_trust(result).to_json()
    return {
        "seed": row["seed"],
        "start": start,
        "cap": cap,
        "eer": float(row[eer]),
        "interval": [float(x) for x in row["eer_ci95_percent"]],
        "backend": row["backend"],
        "stopped": entry.get("stopped"),
        "best_epoch": entry.get("best_epoch"),
        "epochs_run": len(entry.get("history", [])),
        "ver_s": [r.get("ver_source") for r in entry.get("history", [])],
        "best_alternative": f"{best['attacker']}, {best['backend']} {best[eer]:.1f} %",
        "default_cap": cap == default_cap,
        "improvable": float(best[eer]) < float(row["eer_ci95_percent"][0]),
        "flagged": not trust["trustworthy"],
        "reasons": [r["code"] for r in trust["reasons"]],
        "document": result,
    }


GRID_VER_S = (30.0, 40.0, 50.0)
GRID_WINDOW = (2, 3, 4)
GRID_FALLING = (2.0, 3.0, 5.0, 10.0)
"""The trust thresholds the judged runs are re-assessed under: the still-falling test's window
(``UNMASK_TRUST_STILL_FALLING_WINDOW_EPOCHS``) x its bound (points per epoch,
``UNMASK_TRUST_STILL_FALLING_VER_S_POINTS``) at today's VER_S bound, then the VER_S bound
(``UNMASK_TRUST_MAX_VER_S_PERCENT``) at today's still-falling test."""


def grid_lines(judged: Sequence[Mapping[str, Any]]) -> list[str]:
    """Precision and recall of the trust check re-applied to the judged runs' documents under
    each threshold combination of the grid (today's marked), and which judged runs flip."""
    from services.pipeline.trust import assess_trust
    from services.settings import Settings, get_settings

    today = get_settings()
    now = (
        today.trust_max_ver_s_percent,
        today.trust_still_falling_window_epochs,
        today.trust_still_falling_ver_s_points,
    )
    combos = [(now[0], w, f) for w in GRID_WINDOW for f in GRID_FALLING]
    combos += [(v, now[1], now[2]) for v in GRID_VER_S if v != now[0]]
    if now not in combos:
        combos.append(now)
    lines = [
        "",
        "| max VER_S % | still-falling window, epochs | still falling, points per epoch | "
        "flagged | precision | recall | flagged at the default cap, not improvable |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    improvable = [bool(j["improvable"]) for j in judged]
    default_cap = [bool(j.get("default_cap")) for j in judged]
    for ver_s, window, falling in combos:
        settings = Settings(
            trust_max_ver_s_percent=ver_s,
            trust_still_falling_window_epochs=window,
            trust_still_falling_ver_s_points=falling,
        )
        flags = [not assess_trust(j["document"], settings).trustworthy for j in judged]
        tp = sum(f and i for f, i in zip(flags, improvable, strict=True))
        false_default = sum(
            f and d and not i for f, d, i in zip(flags, default_cap, improvable, strict=True)
        )
        n_flag, n_improvable = sum(flags), sum(improvable)
        mark = " (today)" if (ver_s, window, falling) == now else ""
        precision = f"{tp / n_flag:.2f}" if n_flag else "-"
        recall = f"{tp / n_improvable:.2f}" if n_improvable else "-"
        lines.append(
            f"| {ver_s:.0f}{mark} | {window} | {falling:g} | {n_flag} | {precision} | {recall} | "
            f"{false_default} |"
        )
    return lines


def trust_table(corpus: str, judged: Sequence[Mapping[str, Any]]) -> list[str]:
    """The judged runs of one corpus and the trust check's precision and recall."""
    lines = [
        f"### {corpus}: the trust check on the config's attacker alone",
        "",
        "| seed | start | cap | stop (best epoch / run) | VER_S % by epoch | verdict EER % (95 % "
        "interval) | best zoo family | improvable | flagged (reasons) |",
        "|---:|---|---:|---|---|---:|---|---|---|",
    ]
    for j in judged:
        low, high = j["interval"]
        reasons = f" ({', '.join(j['reasons'])})" if j["reasons"] else ""
        lines.append(
            f"| {j['seed']} | {j['start']} | {j['cap']} | {j['stopped']} "
            f"({j['best_epoch']}/{j['epochs_run']}) | "
            f"{' '.join(f'{v:.0f}' for v in j.get('ver_s') or [] if v is not None)} | "
            f"{j['eer']:.1f} ({low:.1f}-{high:.1f}) "
            f"{j['backend']} | {j['best_alternative']} | {'yes' if j['improvable'] else 'no'} | "
            f"{'NOT TRUSTWORTHY' if j['flagged'] else 'trustworthy'}{reasons} |"
        )
    tp = sum(1 for j in judged if j["flagged"] and j["improvable"])
    flagged = sum(1 for j in judged if j["flagged"])
    improvable = sum(1 for j in judged if j["improvable"])

    def ratio(num: int, den: int) -> str:
        return f"{num}/{den} = {num / den:.2f}" if den else f"{num}/0 (undefined)"

    lines += [
        "",
        f"- {len(judged)} runs: {improvable} improvable, {flagged} flagged; precision "
        f"{ratio(tp, flagged)}, recall {ratio(tp, improvable)}",
    ]
    if all("document" in j for j in judged):
        lines += grid_lines(judged)
    return lines


def _cell(rows: Sequence[Mapping[str, Any]]) -> str:
    eer = catalogue.EER.key
    values = [float(r[eer]) for r in rows if isinstance(r.get(eer), int | float)]
    if not values:
        return ""
    text = f"{statistics.fmean(values):.1f}"
    intervals = [r["eer_ci95_percent"] for r in rows if r.get("eer_ci95_percent")]
    if intervals:
        low = statistics.fmean(float(i[0]) for i in intervals)
        high = statistics.fmean(float(i[1]) for i in intervals)
        text += f" ({low:.1f}-{high:.1f})"
    if len(values) > 1:
        text += f" ±{statistics.stdev(values):.1f}"
    return text


def trained_challenge(result: Mapping[str, Any], folder: Path) -> str:
    """The challenger's decision against the default attacker alone (``baseline``, its better
    back-end: the verdict of a run without a zoo) and against the strongest TRAINED attacker of
    the zoo, semi-informed, from the trials the run kept in ``folder``; empty when missing."""
    eer = catalogue.EER.key
    rows = [
        r
        for r in result["rows"]
        if r["scenario"] == "semi-informed" and r["attacker"] != "ge2e" and r.get(eer) is not None
    ]
    text = ""
    for label, pool in (
        ("the default alone", [r for r in rows if r["attacker"] == "baseline"]),
        ("the strongest trained", rows),
    ):
        if not pool:
            continue
        best = min(pool, key=lambda r: (r[eer], r["attacker"], r["backend"]))
        paths = [
            folder / trials_path(best["attacker"], "semi-informed", best["backend"], best["seed"]),
            folder / trials_path("ge2e", "semi-informed", "cosine", best["seed"]),
        ]
        if not all(p.is_file() for p in paths):
            continue
        head, challenger = (speaker_trials(load_scored_trials(p)[0]) for p in paths)
        decision = challenge_decision([head], challenger)
        low, high = decision["interval_points"] or [float("nan")] * 2
        text += (
            f"; {label}: {best['attacker']}, {best['backend']} {best[eer]:.1f} % vs ge2e, "
            f"difference {decision['difference_points']:+.1f} ({low:+.1f} to {high:+.1f}): "
            f"{'NOT TRUSTWORTHY' if decision['stronger'] else 'not flagged'}"
        )
    return text


def table(
    corpus: str, results: Sequence[Mapping[str, Any]], folders: Sequence[Path] = ()
) -> list[str]:
    """The corpus's table (markdown) and its verdict lines (``folders``: the runs' folders, for
    the challenge against the strongest trained attacker)."""
    rows = [r for result in results for r in result["rows"]]
    pairs = sorted({(r["attacker"], r["backend"]) for r in rows})
    lines = [
        f"### {corpus}: EER % (mean of {len(results)} seed(s); 95 % speaker-bootstrap interval)",
        "",
        "| attacker | back-end | " + " | ".join(SCENARIOS) + " |",
        "|---|---|" + "---:|" * len(SCENARIOS),
    ]
    for attacker, backend in pairs:
        cells = [
            _cell(
                [
                    r
                    for r in rows
                    if (r["attacker"], r["backend"], r["scenario"]) == (attacker, backend, s)
                ]
            )
            for s in SCENARIOS
        ]
        lines.append(f"| {attacker} | {backend} | " + " | ".join(cells) + " |")
    lines.append("")
    for index, result in enumerate(results):
        worst = result["worst_case"]["semi-informed"]
        trust = result["trust"]
        seed = result["rows"][0]["seed"]
        verdict = (
            f"- seed {seed}: verdict EER {worst[catalogue.EER.key]:.1f} % "
            f"({worst['attacker']}, {worst['backend']}); "
            f"{'trustworthy' if trust['trustworthy'] else 'NOT TRUSTWORTHY'}"
        )
        reasons = ", ".join(r["code"] for r in trust["reasons"])
        verdict += f" ({reasons})" if reasons else ""
        block = result.get("challenger")
        if not block:
            verdict += "; no challenger block (the verdict's attacker is the pretrained one)"
        else:
            interval = block.get("interval_points") or [float("nan")] * 2
            verdict += (
                f"; challenger {block['attacker']} {block['eer_percent']:.1f} % vs "
                f"{block['headline']['attacker']} {block['headline']['eer_percent']:.1f} %, "
                f"difference {block['difference_points']:+.1f} ({interval[0]:+.1f} to "
                f"{interval[1]:+.1f}), {'stronger' if block['stronger'] else 'not stronger'}, "
                f"{block['cpu_seconds']:.0f} CPU s here, {block['compute_seconds']:.0f} s "
                "when its stages were computed"
            )
        if index < len(folders):
            verdict += trained_challenge(result, folders[index])
        lines.append(verdict)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/outside"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--corpora", nargs="+", choices=CORPORA, default=list(CORPORA))
    parser.add_argument("--anonymizer", default="pitch")
    parser.add_argument(
        "--families",
        nargs="+",
        choices=FAMILIES,
        default=None,
        help="only these attacker families in the zoo (baseline always; default: all): a "
        "cheaper trust calibration when the best family is known",
    )
    parser.add_argument("--smoke", action="store_true", help="12 speakers x 8, cap 2 epochs")
    parser.add_argument("--size", choices=sorted(SIZES), help="overrides --smoke")
    parser.add_argument(
        "--trust-caps",
        type=int,
        nargs="*",
        default=None,
        help="judge the trust check on the config's attacker alone at these short epochs caps "
        "(and the default cap), starting from the original-speech recognizer and from scratch",
    )
    args = parser.parse_args(argv)
    if args.families is not None and "baseline" not in args.families:
        # Bad input: one line and exit status 2, as argparse's own errors.
        print("outside_attackers: --families must include baseline", file=sys.stderr)
        return 2
    size = sizes(args.smoke, args.size)
    out_lines = []
    for corpus in args.corpora:
        out = args.out / corpus
        protocol = espeak_protocol(args.out, size) if corpus == "espeak" else None
        configs = [
            make_config(corpus, seed, size, args.anonymizer, protocol, args.families)
            for seed in args.seeds
        ]
        results = [run_one(out, cfg) for cfg in configs]
        lines = table(corpus, results, [out / cfg.name for cfg in configs])
        if args.trust_caps is not None:
            judged = []
            for cfg, zoo in zip(configs, results, strict=True):
                caps = sorted({*args.trust_caps, size["epochs"]})
                for start in JUDGED_STARTS:
                    for cap in caps:
                        if start != "original" and cap == size["epochs"]:
                            continue  # the default cap is judged for the default start only
                        alone = run_one(out, judged_config(cfg, cap, start))
                        judged.append(
                            judged_run(alone, zoo, start=start, cap=cap, default_cap=size["epochs"])
                        )
            lines += ["", *trust_table(corpus, judged)]
        out_lines += [*lines, ""]
        print("\n".join(lines), flush=True)
    (args.out / "table.md").write_text("\n".join(out_lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
