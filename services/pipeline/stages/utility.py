"""The utility phase: what the anonymizer leaves of the speech (docs/utility.md).

Two stages, both on the model (GPU) queue:

- ``utility-asr``: the speech recognizer behind the WER, trained on the protocol's ORIGINAL
  attacker-train speech (``utility.asr.source: train``; keyed by that set and the ASR spec, so one
  protocol trains it once whatever the submission), or skipped for an operator's pretrained
  folder;
- ``utility-metrics``: on the trial set, original vs anonymized: WER / CER with speaker-level
  bootstrap intervals, pitch correlation rho_F0, gain of voice distinctiveness GVD (from the
  recognizer trained on original speech) and the degenerate-output guard (``usable_speech``).

The result is the ``utility`` block of ``results.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from services.corpus.manifest import Manifest
from services.errors import ConfigError, InvalidInputError
from services.metrics import catalogue
from services.pipeline.config import EvaluationConfig
from services.pipeline.sets import ConditionSets, stored_corpus_key
from services.pipeline.stage_runner import DONE_FILE, stage_key
from services.pipeline.stages.context import StageContext, json_default
from services.utility.config import AsrSpec, UtilityConfig

UTILITY_JSON = "utility.json"
ASR_DIR = "asr"

EmbeddingPair = tuple[np.ndarray, np.ndarray, str, str]
"""(original trial embeddings, anonymized trial embeddings, their two embed stage keys), by the
recognizer trained on original speech, rows in trial-manifest order."""


def missing_transcripts(manifest: Manifest) -> int:
    """How many utterances of ``manifest`` have no (non-blank) ``text``."""
    return sum(1 for u in manifest.utterances if not (u.text or "").strip())


def check_transcripts(original: ConditionSets) -> None:
    """ConfigError naming the fix when the WER cannot be measured for lack of transcripts."""
    for name in ("train", "trial"):
        manifest = original.get(name)
        n = missing_transcripts(manifest)
        if n:
            raise ConfigError(
                f"utility.wer needs transcripts: {n} of {len(manifest)} {name} utterances of the "
                "protocol's manifest have no `text` (import the corpus with its transcripts, e.g. "
                "`unmask corpus import` of LibriSpeech, or set utility.wer: false)"
            )


def _folder_fingerprint(folder: Path) -> list[tuple[str, int]]:
    """Names and sizes of an operator's model folder: a changed model is a new stage key."""
    files = (p for p in folder.rglob("*") if p.is_file())
    return sorted((p.relative_to(folder).as_posix(), p.stat().st_size) for p in files)


def asr_inputs(train_key: str, spec: AsrSpec) -> dict[str, Any]:
    """The trained ``utility-asr`` stage's inputs: the original train set's key and the ASR spec
    (the device does not change the model). Nothing of the anonymizer: one ASR per protocol."""
    return {"train": train_key, "asr": spec.model_dump(mode="json", exclude={"device"})}


def asr_in_store(cfg: EvaluationConfig, stages_dir: Path) -> bool:
    """Whether the stage store ``stages_dir`` already holds the ASR ``cfg`` would train (a
    protocol's, trained by an earlier evaluation or downloaded at registration on the platform):
    then the run reuses it and the estimate leaves it out. False when ``cfg`` trains none."""
    utility = cfg.utility
    if utility is None or not utility.wer or utility.asr.source != "train":
        return False
    try:
        corpus_key = stored_corpus_key(cfg, stages_dir)
    except (OSError, ValueError):  # an unreadable protocol: the config checks report it
        return False
    if corpus_key is None:
        return False
    key = stage_key("utility-asr", asr_inputs(f"original:{corpus_key}:train", utility.asr))
    return (stages_dir / "utility-asr" / key / DONE_FILE).is_file()


def asr_stage(ctx: StageContext, original: ConditionSets) -> tuple[Path, str, dict[str, Any]]:
    """The ASR folder, its key (for the metrics stage's inputs) and its description."""
    from services.utility.asr import check_asr_folder, load_asr, train_asr

    utility = ctx.config.utility
    assert utility is not None
    spec = utility.asr
    if spec.source == "pretrained":
        assert spec.pretrained_path is not None
        folder = Path(spec.pretrained_path)
        check_asr_folder(folder)
        key = json.dumps(
            {"pretrained": str(folder.resolve()), "files": _folder_fingerprint(folder)},
            sort_keys=True,
        )
        return folder, key, load_asr(folder, "cpu").describe()

    inputs = asr_inputs(original.keys["train"], spec)

    def make(folder: Path) -> dict[str, Any]:
        train = original.train
        audio = ctx.audio.load(train)
        texts = [u.text or "" for u in train.utterances]

        def report(fraction: float, message: str) -> None:
            ctx.progress("utility", 0.5 * fraction, f"ASR training: {message}")

        report(0.0, f"{len(texts)} original utterances, {spec.epochs} epochs")
        train_asr(audio, texts, spec, folder / ASR_DIR, progress=report)
        return {"asr": ASR_DIR}

    outcome = ctx.runner.run("utility-asr", inputs, make)
    folder = outcome.folder / ASR_DIR
    describe = folder / "describe.json"
    info = json.loads(describe.read_text()) if describe.is_file() else {}
    return folder, f"utility-asr:{outcome.key}", info


def _wer_section(
    ctx: StageContext,
    asr_folder: Path,
    trial: Manifest,
    wav_o: list[np.ndarray],
    wav_a: list[np.ndarray],
    block: dict[str, Any],
    folder: Path,
) -> list[str] | None:
    """Transcribe the original and anonymized trials with the utility ASR, put the WER section
    into ``block`` and ``transcripts.json`` into ``folder``; returns the anonymized transcripts
    for the usable-speech guard's no-words test (None when the ASR finds no words in too many
    original utterances: then the test says nothing about the anonymizer)."""
    from services.utility.asr import load_asr
    from services.utility.wer import compare_wer, normalize_text

    utility = ctx.config.utility
    assert utility is not None
    ctx.progress("utility", 0.5, "transcribing original and anonymized trials")
    model = load_asr(asr_folder, _device(ctx))
    refs = [normalize_text(u.text or "") for u in trial.utterances]
    hyps_o = model.transcribe(wav_o)
    hyps_a = model.transcribe(wav_a)
    empty_o = sum(1 for h in hyps_o if not h.strip()) / max(len(hyps_o), 1)
    guard_transcripts = hyps_a if empty_o <= utility.usable_speech.utterance_share else None
    if guard_transcripts is None:
        block["no_words_check"] = (
            f"skipped: the ASR transcribes no words in {100 * empty_o:.0f} % of the "
            "original utterances"
        )
    block[_section(catalogue.WER_INCREASE)] = compare_wer(
        refs,
        hyps_o,
        hyps_a,
        [u.speaker_id for u in trial.utterances],
        resamples=utility.bootstrap_resamples,
        seed=ctx.config.seeds[0],
    )
    (folder / "transcripts.json").write_text(
        json.dumps(
            [
                {"utt_id": u.utt_id, "reference": r, "original": o, "anonymized": a}
                for u, r, o, a in zip(trial.utterances, refs, hyps_o, hyps_a, strict=True)
            ],
            indent=1,
        )
    )
    return guard_transcripts


def utility_stage(
    ctx: StageContext,
    original: ConditionSets,
    anonymized: ConditionSets,
    embeddings: EmbeddingPair | None,
) -> dict[str, Any]:
    """The ``utility`` block: every utility metric the config asks for, on the trial set."""
    from services.utility.degenerate import assess_usable_speech
    from services.utility.distinctiveness import gain_of_voice_distinctiveness
    from services.utility.prosody import pitch_correlation_from_audio

    utility: UtilityConfig | None = ctx.config.utility
    assert utility is not None
    if utility.wer:
        check_transcripts(original)
    asr_folder, asr_key, asr_info = asr_stage(ctx, original) if utility.wer else (None, None, {})
    inputs: dict[str, Any] = {
        "utility": utility.model_dump(mode="json", exclude={"asr": {"device"}}),
        "trial_original": original.keys["trial"],
        "trial_anonymized": anonymized.keys["trial"],
        "asr": asr_key,
        "embeddings": list(embeddings[2:]) if embeddings is not None else None,
    }

    def make(folder: Path) -> dict[str, Any]:
        trial_o, trial_a = original.trial, anonymized.get("trial")
        wav_o = ctx.audio.load(trial_o)
        wav_a = ctx.audio.load(trial_a)
        speakers = [u.speaker_id for u in trial_o.utterances]
        block: dict[str, Any] = {"n_utterances": len(trial_o), "set": "trial"}
        guard_transcripts: list[str] | None = None
        if asr_folder is not None:
            block["asr"] = asr_info
            guard_transcripts = _wer_section(ctx, asr_folder, trial_o, wav_o, wav_a, block, folder)
        if utility.pitch_correlation:
            ctx.progress("utility", 0.75, "pitch correlation")
            # The original trials' F0 tracks are the same for every submission: cached.
            f0_cache = ctx.cache_dir / "f0" if ctx.cache_dir is not None else None
            rho = pitch_correlation_from_audio(wav_o, wav_a, cache_dir=f0_cache)
            block[_section(catalogue.PITCH_CORRELATION)] = rho
        emb_o = emb_a = None
        if embeddings is not None:
            emb_o, emb_a = embeddings[0], embeddings[1]
        if utility.voice_distinctiveness and emb_o is not None and emb_a is not None:
            try:
                block[_section(catalogue.VOICE_DISTINCTIVENESS)] = gain_of_voice_distinctiveness(
                    emb_o, emb_a, speakers
                )
            except InvalidInputError as exc:  # too few speakers with two utterances
                block[_section(catalogue.VOICE_DISTINCTIVENESS)] = {
                    catalogue.VOICE_DISTINCTIVENESS.key: None,
                    "reason": str(exc),
                }
        ctx.progress("utility", 0.9, "usable-speech guard")
        usable = assess_usable_speech(
            wav_a,
            wav_o,
            16000,
            utility.usable_speech,
            transcripts=guard_transcripts,
            anonymized_embeddings=emb_a,
            speakers=speakers if emb_a is not None else None,
        )
        block[_section(catalogue.USABLE_SPEECH)] = {
            "usable": usable.usable,
            "reasons": list(usable.reasons),
            "stats": usable.stats,
        }
        block["max_wer_increase_percent"] = utility.max_wer_increase_percent
        (folder / UTILITY_JSON).write_text(
            json.dumps(_finite(block), indent=2, default=json_default)
        )
        return {"utility": UTILITY_JSON}

    outcome = ctx.runner.run("utility-metrics", inputs, make)
    ctx.progress("utility", 1.0, "utility measured")
    result: dict[str, Any] = json.loads((outcome.folder / UTILITY_JSON).read_text())
    return result


def _section(metric: catalogue.Metric) -> str:
    """The ``utility`` block's section holding ``metric`` (its catalogue path's first part)."""
    assert metric.path is not None
    return str(metric.path[0])


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None: results.json stays strict JSON (an undefined
    rho_F0 of an utterance without voiced frames is "not measured", not a number)."""
    if isinstance(value, float) and not np.isfinite(value):
        return None
    if isinstance(value, np.floating):
        return _finite(float(value))
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _device(ctx: StageContext) -> str:
    utility = ctx.config.utility
    return utility.asr.device if utility is not None else "cpu"
