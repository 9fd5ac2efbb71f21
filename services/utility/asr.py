"""The speech recognizer behind the WER: a compact CTC model Unmask trains, or an operator's
pretrained SpeechBrain ASR folder.

**Trained here** (``utility.asr.source: train``): trained on the protocol's ORIGINAL attacker-train
speech only, so it never hears a submission (as the VoicePrivacy ASR is trained on original
LibriSpeech). The model:

- SpeechBrain ``Fbank`` (40 log-mel bands, 25 ms window, 10 ms hop) with per-utterance mean
  normalization (``services.attacker.features.mean_normalize``);
- three consecutive frames stacked into one (30 ms frames: a third of the recurrent work, and
  every phone of the synthetic corpus still spans at least one frame);
- a SpeechBrain ``Conv1d`` (kernel 3 = 90 ms context) + ``LayerNorm`` + LeakyReLU, then a
  2-layer bidirectional LSTM (``hidden_size // 2`` units per direction, padding packed away);
- a SpeechBrain ``Linear`` to the tokens plus the CTC blank (index 0), log-softmax;
- ``torch.nn.functional.ctc_loss``, Adam with one epoch of linear warm-up then cosine decay,
  gradient norm clipped at 5; greedy CTC decoding (best token per frame, repeats merged, blanks
  dropped).

**Tokens**, one rule: the transcripts are normalized (``normalize_text``: upper case, punctuation
but apostrophes removed); if every word of every training transcript is a synthetic-corpus unit
token (``^U\\d+$``, e.g. ``U12``), the tokens are the words (the output joins them with spaces);
otherwise the tokens are characters, space included (real corpora: LibriSpeech, LibriTTS).

**Pretrained** (``utility.asr.source: pretrained``): a local folder in SpeechBrain's
``EncoderASR`` layout (``hyperparams.yaml`` with ``modules.encoder``, ``decoding_function``,
``tokenizer`` and a ``pretrainer`` whose files lie in the folder), e.g. a copy of
``speechbrain/asr-wav2vec2-librispeech``. It is loaded with no network access: files are read in
place (no links or copies), a top-level ``pretrained_path`` key is pointed at the folder, and a
file the folder lacks is an error, never a download. Or a Hugging Face wav2vec 2.0 CTC folder
(``config.json`` naming ``Wav2Vec2ForCTC``, the weights, ``vocab.json`` and the processor's
``preprocessor_config.json`` or ``processor_config.json``, as ``save_pretrained`` writes them,
e.g. a copy of ``facebook/wav2vec2-large-960h-lv60-self``), loaded with ``transformers``'
``from_pretrained(folder, local_files_only=True)`` and decoded greedily (special tokens dropped).

**Frequency-warp augmentation** (VTLP, Jaitly & Hinton 2013; ``AsrSpec.warp_range``, default
0.8-1.25): in training only, each utterance's log-mels are warped along frequency by a factor
alpha drawn log-uniformly per utterance per epoch (energy at f Hz moves to alpha * f Hz), so a
recognizer trained on a few dozen speakers hears many vocal-tract lengths and pitches, as one
trained on thousands would; it judges content, not voice, when an anonymizer scales the spectrum.

Training is deterministic for a seed on one device and thread count (features are computed once;
batches are drawn from length-sorted buckets by a seeded generator).
"""

from __future__ import annotations

import json
import math
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from speechbrain.lobes.features import Fbank
from speechbrain.nnet.CNN import Conv1d
from speechbrain.nnet.linear import Linear
from speechbrain.nnet.normalization import LayerNorm

from services.attacker.embeddings import resolve_device
from services.attacker.features import mean_normalize
from services.attacker.local_weights import HF_FEATURE_EXTRACTOR_FILES
from services.audio import SAMPLE_RATE_HZ
from services.errors import ConfigError, InvalidInputError
from services.utility.asr_features import N_MELS, STACK, draw_warps, warp_features
from services.utility.config import MIN_UTTERANCES_FOR_VALIDATION, AsrSpec
from services.utility.wer import normalize_text

Progress = Callable[[float, str], None]

BLANK = "<blank>"
FORMAT = 1
"""Version of the folder ``train_asr`` writes (``describe.json`` ``format``)."""

MODEL_FILE = "model.pt"
VOCABULARY_FILE = "vocabulary.json"
DESCRIBE_FILE = "describe.json"
HPARAMS_FILE = "hyperparams.yaml"

_UNIT_WORD = re.compile(r"U\d+")
_MIN_SAMPLES = 400  # one 25 ms analysis window


def tokenization(texts: Sequence[str]) -> Literal["units", "characters"]:
    """``units`` when every word of every normalized text is a unit token ``U<k>``, else
    ``characters`` (the one tokenization rule of the module docstring)."""
    words = [w for t in texts for w in normalize_text(t).split()]
    return "units" if words and all(_UNIT_WORD.fullmatch(w) for w in words) else "characters"


def _tokens(text: str, kind: str) -> list[str]:
    norm = normalize_text(text)
    return norm.split() if kind == "units" else list(norm)


def _join(tokens: list[str], kind: str) -> str:
    return " ".join(tokens) if kind == "units" else " ".join("".join(tokens).split())


class CtcEncoder(torch.nn.Module):
    """Waveforms (batch, samples) at 16 kHz -> CTC log-probabilities (batch, frames, tokens + 1)."""

    def __init__(self, n_tokens: int, hidden_size: int) -> None:
        super().__init__()
        self.fbank = Fbank(n_mels=N_MELS, sample_rate=SAMPLE_RATE_HZ)
        self.conv = Conv1d(
            out_channels=hidden_size, kernel_size=3, in_channels=N_MELS * STACK, padding="same"
        )
        self.norm = LayerNorm(input_size=hidden_size)
        self.rnn = torch.nn.LSTM(
            hidden_size,
            hidden_size // 2,
            num_layers=2,
            batch_first=True,
            bidirectional=True,
        )
        self.out = Linear(n_neurons=n_tokens + 1, input_size=2 * (hidden_size // 2))

    @torch.no_grad()
    def features(self, wav: torch.Tensor) -> torch.Tensor:
        """Stacked, mean-normalized log-mels of one utterance (samples,) -> (frames, 120)."""
        feats = mean_normalize(self.fbank(wav.unsqueeze(0)))[0]
        n = feats.shape[0] // STACK * STACK
        if n == 0:  # shorter than 30 ms of frames: one frame, zero-padded
            feats = F.pad(feats, (0, 0, 0, STACK - feats.shape[0]))
            n = STACK
        return feats[:n].reshape(n // STACK, N_MELS * STACK)

    def forward_features(self, feats: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Padded stacked features (batch, frames, 120), frame counts (batch,) -> log-probs."""
        x = F.leaky_relu(self.norm(self.conv(feats)))
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            x, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        y, _ = self.rnn(packed)
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
        return torch.log_softmax(self.out(y), dim=-1)


def _pad(feats: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([f.shape[0] for f in feats], dtype=torch.int64)
    return torch.nn.utils.rnn.pad_sequence(feats, batch_first=True), lengths


def _greedy(log_probs: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
    """Best path per utterance, repeats merged, blanks (0) dropped."""
    best = log_probs.argmax(dim=-1).cpu()
    out = []
    for row, n in zip(best, lengths.tolist(), strict=True):
        ids = torch.unique_consecutive(row[:n])
        out.append(ids[ids != 0].tolist())
    return out


def _check_audio(audio: Sequence[np.ndarray], what: str) -> list[torch.Tensor]:
    out = []
    for k, wav in enumerate(audio):
        arr = np.asarray(wav)
        if arr.ndim != 1 or arr.size < _MIN_SAMPLES or not np.isfinite(arr).all():
            raise InvalidInputError(
                f"{what}: utterance {k} must be finite mono audio at 16 kHz of at least "
                f"{_MIN_SAMPLES} samples (25 ms), got shape {arr.shape}"
            )
        out.append(torch.from_numpy(arr.astype(np.float32, copy=False)))
    return out


class AsrModel(ABC):
    """A recognizer: audio (mono float32, 16 kHz) -> normalized transcripts."""

    @abstractmethod
    def transcribe(self, audio: list[np.ndarray]) -> list[str]:
        """One transcript per utterance (upper case for the trained model)."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What the model is (JSON-serializable): kind, tokenization, size, training summary."""


class TrainedAsr(AsrModel):
    """The CTC recognizer ``train_asr`` trains (or ``load_asr`` reads back)."""

    def __init__(
        self,
        encoder: CtcEncoder,
        vocabulary: list[str],
        kind: Literal["units", "characters"],
        info: dict[str, Any],
        device: torch.device,
    ) -> None:
        self.encoder = encoder.to(device).eval()
        self.vocabulary = vocabulary  # index 0 is the blank
        self.kind = kind
        self.info = info
        self.device = device

    def transcribe(self, audio: list[np.ndarray], batch_size: int = 16) -> list[str]:
        """Greedy CTC transcripts, in input order. Utterances are decoded in batches of similar
        length (sorted, so little padding; padding is packed away and does not change a result):
        on one CPU thread batches of 8-16 are 2-3x faster than one at a time
        (benchmarks/asr_cost.py)."""
        if batch_size < 1:
            raise InvalidInputError(f"transcribe: batch_size must be >= 1, got {batch_size}")
        wavs = _check_audio(audio, "transcribe")
        order = np.argsort([len(w) for w in wavs], kind="stable")
        out: list[str] = [""] * len(wavs)
        with torch.no_grad():
            for start in range(0, len(order), batch_size):
                chunk = order[start : start + batch_size]
                feats, lengths = _pad(
                    [self.encoder.features(wavs[k].to(self.device)) for k in chunk]
                )
                log_probs = self.encoder.forward_features(feats.to(self.device), lengths)
                for k, ids in zip(chunk, _greedy(log_probs, lengths), strict=True):
                    out[k] = _join([self.vocabulary[i] for i in ids], self.kind)
        return out

    def describe(self) -> dict[str, Any]:
        return dict(self.info)


class PretrainedAsr(AsrModel):
    """An operator's SpeechBrain ``EncoderASR`` folder, loaded without network access."""

    def __init__(self, model: Any, folder: Path) -> None:
        self.model = model
        self.folder = folder

    def transcribe(self, audio: list[np.ndarray]) -> list[str]:
        """One utterance at a time (no padding effects on the operator's model)."""
        wavs = _check_audio(audio, "transcribe")
        out = []
        with torch.no_grad():
            for wav in wavs:
                words, _ = self.model.transcribe_batch(wav.unsqueeze(0), torch.ones(1))
                out.append(str(words[0]))
        return out

    def describe(self) -> dict[str, Any]:
        n_params = sum(p.numel() for p in self.model.mods.parameters())
        return {
            "kind": "speechbrain-pretrained",
            "folder": str(self.folder),
            "class": "speechbrain.inference.ASR.EncoderASR",
            "n_parameters": int(n_params),
        }


class HuggingFaceCtcAsr(AsrModel):
    """An operator's Hugging Face wav2vec 2.0 CTC folder (``Wav2Vec2ForCTC`` + its processor),
    loaded from local files only; greedy CTC decoding, one utterance at a time."""

    def __init__(self, model: Any, processor: Any, folder: Path, device: torch.device) -> None:
        self.model = model.to(device).eval()
        self.processor = processor
        self.folder = folder
        self.device = device

    def transcribe(self, audio: list[np.ndarray]) -> list[str]:
        wavs = _check_audio(audio, "transcribe")
        out = []
        with torch.no_grad():
            for wav in wavs:
                inputs = self.processor(
                    wav.numpy(), sampling_rate=SAMPLE_RATE_HZ, return_tensors="pt"
                )
                logits = self.model(inputs.input_values.to(self.device)).logits
                ids = torch.argmax(logits, dim=-1)
                text = self.processor.batch_decode(ids, skip_special_tokens=True)[0]
                out.append(normalize_text(str(text)))
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "huggingface-pretrained",
            "folder": str(self.folder),
            "class": "transformers.Wav2Vec2ForCTC",
            "n_parameters": int(sum(p.numel() for p in self.model.parameters())),
        }


HF_CONFIG = "config.json"
HF_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
HF_PROCESSOR_FILES = ("vocab.json",)


def _is_huggingface_folder(folder: Path) -> bool:
    return (folder / HF_CONFIG).is_file() and not (folder / HPARAMS_FILE).is_file()


def _check_huggingface_folder(folder: Path) -> None:
    try:
        config = json.loads((folder / HF_CONFIG).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"ASR folder {folder}: {HF_CONFIG} unreadable ({exc})") from exc
    architectures = config.get("architectures") or []
    if "Wav2Vec2ForCTC" not in architectures:
        raise ConfigError(
            f"ASR folder {folder}: {HF_CONFIG} names {architectures or 'no architecture'}; a "
            "Hugging Face ASR folder must hold a Wav2Vec2ForCTC model"
        )
    if not any((folder / w).is_file() for w in HF_WEIGHTS):
        raise ConfigError(
            f"ASR folder {folder}: no weights ({' or '.join(HF_WEIGHTS)}); copy them into the "
            "folder (nothing is downloaded)"
        )
    missing = [f for f in HF_PROCESSOR_FILES if not (folder / f).is_file()]
    if not any((folder / f).is_file() for f in HF_FEATURE_EXTRACTOR_FILES):
        missing.append(" or ".join(HF_FEATURE_EXTRACTOR_FILES))
    if missing:
        raise ConfigError(
            f"ASR folder {folder}: {', '.join(missing)} missing (the CTC tokenizer and feature "
            "extractor: save the model's Wav2Vec2Processor into the folder too)"
        )


def _load_huggingface(folder: Path, device: torch.device) -> HuggingFaceCtcAsr:
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    try:
        model = transformers.Wav2Vec2ForCTC.from_pretrained(str(folder), local_files_only=True)
        processor = transformers.Wav2Vec2Processor.from_pretrained(
            str(folder), local_files_only=True
        )
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(
            f"ASR folder {folder}: transformers could not load it as a Wav2Vec2ForCTC with its "
            f"processor ({' '.join(str(exc).split())})"
        ) from exc
    return HuggingFaceCtcAsr(model, processor, folder, device)


def _lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warm-up over ``warmup`` steps, then cosine decay to 5 % at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def _buckets(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Batches of similar length (less padding), in a seeded random order; the sort is perturbed
    per epoch so the batches differ between epochs."""
    order = np.argsort(lengths * rng.uniform(0.9, 1.1, len(lengths)), kind="stable")
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    return [batches[k] for k in rng.permutation(len(batches))]


def _vocabulary(
    texts: list[str],
) -> tuple[Literal["units", "characters"], list[list[str]], list[str]]:
    """(tokenization, each transcript's tokens, the vocabulary with the CTC blank first);
    :class:`InvalidInputError` for a transcript with no token left after normalization."""
    kind = tokenization(texts)
    token_lists = [_tokens(t, kind) for t in texts]
    empty = [k for k, t in enumerate(token_lists) if not t]
    if empty:
        raise InvalidInputError(
            f"train_asr: {len(empty)} transcript(s) are empty after normalization (first: "
            f"utterance {empty[0]}); drop them or fix the manifest's `text`"
        )
    symbols = sorted({s for toks in token_lists for s in toks})
    if kind == "units":
        symbols.sort(key=lambda s: int(s[1:]))
    return kind, token_lists, [BLANK, *symbols]


def _ctc_step(
    encoder: CtcEncoder,
    x: torch.Tensor,
    x_len: torch.Tensor,
    targets: list[torch.Tensor],
    optimizer: torch.optim.Optimizer,
) -> tuple[float, int]:
    """One optimizer step on a padded batch: (summed CTC loss, target tokens); the gradient is
    of the loss per token, clipped at norm 5."""
    y = torch.cat(targets).to(x.device)
    y_len = torch.tensor([len(t) for t in targets], dtype=torch.int64)
    log_probs = encoder.forward_features(x, x_len)
    loss = F.ctc_loss(
        log_probs.transpose(0, 1), y, x_len, y_len, blank=0, reduction="sum", zero_infinity=True
    )
    n_tokens = int(y_len.sum())
    optimizer.zero_grad()
    (loss / n_tokens).backward()
    torch.nn.utils.clip_grad_norm_(encoder.parameters(), 5.0)
    optimizer.step()
    return float(loss.detach()), n_tokens


PROGRESS_INTERVAL_S = 5.0
"""At most one in-epoch progress call per this many seconds (s)."""


def _validation_loss(
    encoder: CtcEncoder, feats: list[torch.Tensor], targets: list[torch.Tensor], batch_size: int
) -> float:
    """Mean CTC loss per token of ``encoder`` on held-out utterances (no augmentation)."""
    encoder.eval()
    loss_sum, token_sum = 0.0, 0
    order = np.argsort([f.shape[0] for f in feats], kind="stable")
    with torch.no_grad():
        for i in range(0, len(order), batch_size):
            batch = order[i : i + batch_size]
            x, x_len = _pad([feats[k] for k in batch])
            ys = [targets[k] for k in batch]
            y = torch.cat(ys).to(x.device)
            y_len = torch.tensor([len(t) for t in ys], dtype=torch.int64)
            log_probs = encoder.forward_features(x, x_len)
            loss = F.ctc_loss(
                log_probs.transpose(0, 1),
                y,
                x_len,
                y_len,
                blank=0,
                reduction="sum",
                zero_infinity=True,
            )
            loss_sum += float(loss)
            token_sum += int(y_len.sum())
    encoder.train()
    return loss_sum / max(token_sum, 1)


@dataclass
class _Validation:
    """Held-out utterances of the plateau check and what it saw."""

    feats: list[torch.Tensor]
    targets: list[torch.Tensor]
    history: list[float] = field(default_factory=list)
    best_epoch: int = -1
    best_state: dict[str, torch.Tensor] | None = None

    def observe(self, encoder: CtcEncoder, epoch: int, spec: AsrSpec) -> bool:
        """Record this epoch's held-out loss; True when training should stop (no improvement by
        ``spec.min_improvement`` for ``spec.patience`` epochs)."""
        loss = _validation_loss(encoder, self.feats, self.targets, spec.batch_size)
        best = self.history[self.best_epoch] if self.best_epoch >= 0 else math.inf
        self.history.append(loss)
        if loss < best * (1.0 - spec.min_improvement) or self.best_epoch < 0:
            self.best_epoch = epoch
            self.best_state = {k: v.detach().clone() for k, v in encoder.state_dict().items()}
        return spec.patience > 0 and epoch - self.best_epoch >= spec.patience


def _train_epochs(
    encoder: CtcEncoder,
    feats: list[torch.Tensor],
    targets: list[torch.Tensor],
    n_frames: np.ndarray,
    spec: AsrSpec,
    progress: Progress | None,
    validation: _Validation | None = None,
) -> list[float]:
    """Train ``encoder`` in place for at most ``spec.epochs`` epochs on the utterances' features
    ``feats`` (``n_frames`` frames each) and token ids ``targets``; returns each epoch's mean
    CTC loss per token. With ``validation``, stops on its plateau and restores its best
    epoch's weights."""
    optimizer = torch.optim.Adam(encoder.parameters(), lr=spec.lr)
    steps_per_epoch = math.ceil(len(feats) / spec.batch_size)
    total = spec.epochs * steps_per_epoch
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: _lr_factor(s, steps_per_epoch, total)
    )
    rng = np.random.default_rng([spec.seed, 7])
    history: list[float] = []
    encoder.train()
    train_started = time.perf_counter()
    done_steps = 0
    last_report = train_started
    for epoch in range(spec.epochs):
        loss_sum, token_sum = 0.0, 0
        alphas = draw_warps(spec, epoch, len(feats))
        for step, batch in enumerate(_buckets(n_frames, spec.batch_size, rng), start=1):
            x, x_len = _pad([feats[k] for k in batch])
            if spec.warp_enabled:
                x = warp_features(x, alphas[batch])
            loss, n_tokens = _ctc_step(encoder, x, x_len, [targets[k] for k in batch], optimizer)
            scheduler.step()
            loss_sum += loss
            token_sum += n_tokens
            done_steps += 1
            now = time.perf_counter()
            if progress is not None and now - last_report >= PROGRESS_INTERVAL_S:
                # Within an epoch too (an epoch may take minutes); the ETA is the measured step
                # rate of this run times the steps left (an upper bound: the plateau check may
                # stop earlier).
                last_report = now
                eta = (now - train_started) / done_steps * (total - done_steps)
                progress(
                    done_steps / total,
                    f"ASR epoch {epoch + 1}/{spec.epochs} step {step}/{steps_per_epoch}, "
                    f"ETA {eta:.0f} s",
                )
        history.append(loss_sum / token_sum)
        stop = validation is not None and validation.observe(encoder, epoch, spec)
        if progress is not None:
            held_out = f", held-out {validation.history[-1]:.3f}" if validation is not None else ""
            progress(
                1.0 if stop else (epoch + 1) / spec.epochs,
                f"ASR epoch {epoch + 1}/{spec.epochs}: CTC loss {history[-1]:.3f} per token"
                + held_out
                + (" (plateau: stopped)" if stop else ""),
            )
        if stop:
            break
    if validation is not None and validation.best_state is not None:
        encoder.load_state_dict(validation.best_state)
    return history


def _save_asr(
    out_dir: Path,
    encoder: CtcEncoder,
    spec: AsrSpec,
    kind: str,
    vocabulary: list[str],
    info: dict[str, Any],
) -> None:
    """Write ``model.pt``, ``vocabulary.json`` and ``describe.json`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.save(
        {"format": FORMAT, "hidden_size": spec.hidden_size, "state_dict": encoder.state_dict()},
        out_dir / MODEL_FILE,
    )
    (out_dir / VOCABULARY_FILE).write_text(
        json.dumps({"tokenization": kind, "tokens": vocabulary}, indent=1) + "\n", encoding="utf-8"
    )
    (out_dir / DESCRIBE_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def validation_indices(n: int, spec: AsrSpec) -> np.ndarray:
    """Indices of the utterances (of ``n``) held out for the plateau check: a seeded
    ``spec.validation_share`` of them, at most 200; none below
    :data:`MIN_UTTERANCES_FOR_VALIDATION` utterances or with ``patience`` 0."""
    if n < MIN_UTTERANCES_FOR_VALIDATION or spec.patience == 0:
        return np.zeros(0, dtype=np.int64)
    count = min(200, max(2, round(n * spec.validation_share)))
    return np.sort(np.random.default_rng([spec.seed, 11]).permutation(n)[:count])


def train_asr(
    audio: list[np.ndarray],
    texts: list[str],
    spec: AsrSpec,
    out_dir: Path,
    progress: Progress | None = None,
) -> TrainedAsr:
    """Train the CTC recognizer on ``audio`` (mono float32, 16 kHz) with transcripts ``texts``.

    Writes ``model.pt`` (weights), ``vocabulary.json`` and ``describe.json`` (model, tokenization,
    per-epoch mean CTC loss per token, training seconds) into ``out_dir``; returns the model.
    ``progress(fraction, message)`` is called after each epoch. The same inputs, spec and seed
    give the same weights on the same device and thread count.
    """
    if len(audio) != len(texts):
        raise InvalidInputError(f"train_asr: {len(audio)} utterances but {len(texts)} transcripts")
    if not audio:
        raise InvalidInputError("train_asr: no training utterances")
    if spec.source != "train":
        raise ConfigError("train_asr needs utility.asr.source: train")
    started = time.perf_counter()
    device = resolve_device(spec.device)
    wavs = _check_audio(audio, "train_asr")
    kind, token_lists, vocabulary = _vocabulary(texts)
    symbols = vocabulary[1:]
    index = {s: k for k, s in enumerate(vocabulary)}

    torch.manual_seed(spec.seed)
    encoder = CtcEncoder(len(symbols), spec.hidden_size).to(device)
    feats = [encoder.features(w.to(device)) for w in wavs]
    targets = [torch.tensor([index[s] for s in toks], dtype=torch.int64) for toks in token_lists]
    n_frames = np.array([f.shape[0] for f in feats])
    too_short = int(np.sum(n_frames < np.array([len(t) for t in targets])))
    audio_s = float(sum(len(w) for w in wavs) / SAMPLE_RATE_HZ)

    held_out = validation_indices(len(wavs), spec)
    validation: _Validation | None = None
    if len(held_out):
        keep = np.setdiff1d(np.arange(len(wavs)), held_out)
        validation = _Validation([feats[k] for k in held_out], [targets[k] for k in held_out])
        feats, targets, n_frames = (
            [feats[k] for k in keep],
            [targets[k] for k in keep],
            n_frames[keep],
        )
    history = _train_epochs(encoder, feats, targets, n_frames, spec, progress, validation)
    encoder.eval()
    seconds = time.perf_counter() - started
    info: dict[str, Any] = {
        "format": FORMAT,
        "kind": "unmask-ctc",
        "tokenization": kind,
        "n_tokens": len(symbols),
        "hidden_size": spec.hidden_size,
        "n_parameters": int(sum(p.numel() for p in encoder.parameters())),
        "features": f"fbank {N_MELS} x {STACK} stacked (30 ms frames)",
        "encoder": "conv1d k3 + 2-layer BiLSTM",
        "epochs": spec.epochs,
        "batch_size": spec.batch_size,
        "lr": spec.lr,
        "seed": spec.seed,
        "warp_range": list(spec.warp_range) if spec.warp_enabled and spec.warp_range else None,
        "n_utterances": len(wavs),
        "audio_seconds": audio_s,
        "utterances_shorter_than_transcript": too_short,
        "loss_per_token_history": history,
        "epochs_trained": len(history),
        "held_out_utterances": len(held_out),
        "held_out_loss_history": validation.history if validation is not None else None,
        "best_epoch": validation.best_epoch + 1 if validation is not None else len(history),
        "train_seconds": seconds,
        "device": device.type,
        "torch_threads": torch.get_num_threads(),
    }
    _save_asr(Path(out_dir), encoder, spec, kind, vocabulary, info)
    return TrainedAsr(encoder, vocabulary, kind, info, device)


_PATH_REF = re.compile(r"<pretrained_path>/([^\s'\"]+)")


def _is_unmask_folder(folder: Path) -> bool:
    return (folder / MODEL_FILE).is_file() or (folder / VOCABULARY_FILE).is_file()


def check_asr_folder(path: Path) -> None:
    """Raise ``ConfigError`` unless ``path`` holds a loadable ASR: a folder ``train_asr`` wrote
    (``model.pt``, ``vocabulary.json``), a SpeechBrain ASR folder (``hyperparams.yaml`` and the
    checkpoint files its ``pretrainer`` names as ``<pretrained_path>/<file>``, or at least one
    ``*.ckpt``) or a Hugging Face wav2vec 2.0 CTC folder (``config.json``, weights, ``vocab.json``,
    the processor's config). Cheap: reads no weights; call it before any work starts."""
    folder = Path(path)
    fix = (
        "point utility.asr.pretrained_path at a local SpeechBrain ASR folder (hyperparams.yaml "
        "+ checkpoint files) or a Hugging Face wav2vec 2.0 CTC folder, or use "
        "utility.asr.source: train"
    )
    if not folder.exists():
        raise ConfigError(f"ASR folder {folder} does not exist; {fix}")
    if not folder.is_dir():
        raise ConfigError(f"ASR folder {folder} is not a folder; {fix}")
    if _is_unmask_folder(folder):
        missing = [f for f in (MODEL_FILE, VOCABULARY_FILE) if not (folder / f).is_file()]
        if missing:
            raise ConfigError(
                f"ASR folder {folder}: {', '.join(missing)} missing (an incomplete Unmask-trained "
                "ASR); train it again or remove the folder"
            )
        return
    if _is_huggingface_folder(folder):
        _check_huggingface_folder(folder)
        return
    hparams = folder / HPARAMS_FILE
    if not hparams.is_file():
        raise ConfigError(f"ASR folder {folder}: no {HPARAMS_FILE}; {fix}")
    try:
        text = hparams.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"ASR folder {folder}: {HPARAMS_FILE} unreadable ({exc})") from exc
    named = sorted(set(_PATH_REF.findall(text)))
    if named:
        missing = [n for n in named if not (folder / n).is_file()]
        if missing:
            raise ConfigError(
                f"ASR folder {folder}: checkpoint file(s) {', '.join(missing)} named in "
                f"{HPARAMS_FILE} are missing; copy them into the folder (nothing is downloaded)"
            )
    elif not any(folder.glob("*.ckpt")):
        raise ConfigError(
            f"ASR folder {folder}: no checkpoint files (*.ckpt) beside {HPARAMS_FILE}; {fix}"
        )


def load_asr(folder: Path, device: str = "cpu") -> AsrModel:
    """The recognizer in ``folder``: one ``train_asr`` wrote, or a SpeechBrain ``EncoderASR``
    folder (see the module docstring). Nothing is downloaded; ``check_asr_folder`` errors first."""
    folder = Path(folder)
    check_asr_folder(folder)
    dev = resolve_device(device)
    if _is_unmask_folder(folder):
        vocab = json.loads((folder / VOCABULARY_FILE).read_text(encoding="utf-8"))
        payload = torch.load(folder / MODEL_FILE, map_location=dev, weights_only=True)
        if payload.get("format") != FORMAT:
            raise ConfigError(
                f"ASR folder {folder}: format {payload.get('format')!r}, this Unmask reads "
                f"{FORMAT}; train the ASR again"
            )
        tokens = list(vocab["tokens"])
        encoder = CtcEncoder(len(tokens) - 1, int(payload["hidden_size"]))
        encoder.load_state_dict(payload["state_dict"])
        info_path = folder / DESCRIBE_FILE
        info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
        return TrainedAsr(encoder, tokens, vocab["tokenization"], info, dev)
    if _is_huggingface_folder(folder):
        return _load_huggingface(folder, dev)
    return _load_speechbrain(folder, dev)


def _load_speechbrain(folder: Path, device: torch.device) -> PretrainedAsr:
    from speechbrain.inference.ASR import EncoderASR
    from speechbrain.utils.fetching import FetchConfig, LocalStrategy

    text = (folder / HPARAMS_FILE).read_text(encoding="utf-8")
    # Published folders name their own hub id in `pretrained_path`; here it is the folder itself.
    overrides = (
        {"pretrained_path": str(folder.resolve())}
        if re.search(r"^pretrained_path\s*:", text, flags=re.MULTILINE)
        else {}
    )
    try:
        model = EncoderASR.from_hparams(
            source=str(folder.resolve()),
            savedir=str(folder.resolve()),
            overrides=overrides,
            local_strategy=LocalStrategy.NO_LINK,
            fetch_config=FetchConfig(allow_network=False),
            run_opts={"device": device.type},
        )
    except (ValueError, KeyError, OSError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"ASR folder {folder}: SpeechBrain could not load it as an EncoderASR ({exc}); it "
            "needs modules.encoder, decoding_function, tokenizer and a pretrainer in "
            f"{HPARAMS_FILE}, with every file it names inside the folder"
        ) from exc
    return PretrainedAsr(model, folder)
