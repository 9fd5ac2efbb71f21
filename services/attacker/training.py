"""Training the attacker's speaker recognizer, with the target classifier of Franzreb et al.

The recognizer (``SpeakerEncoder``: fbanks + ECAPA-TDNN or x-vector) is trained from scratch, or
from a SpeechBrain checkpoint (``pretrained_ecapa_path``, ``services.attacker.pretrained``), or
behind an SSL front end (``front_end: ssl``, ``services.attacker.ssl``: a learned weighted sum of
all WavLM / wav2vec 2.0 layers, the SSL model frozen for ``ssl_frozen_epochs`` and then fine-tuned
at ``ssl_lr_scale`` x the learning rate), with a source classifier (cosine head + AAM-softmax
over the training speakers, weight w_S) on random fixed-length crops. Optionally a target
classifier (a second cosine head over the target ids of the anonymized training utterances) sits
on the same embedding:

- ``off``: no target head.
- ``observe``: the head sees ``embedding.detach()``: it measures how much target information the
  recognizer encodes, and no gradient of it reaches the recognizer.
- ``adversarial``: the head sees the embedding through a gradient reversal layer (identity
  forward, gradient times -w_T backward), so the recognizer learns to discard target information.

w_T schedule (Franzreb et al., SpAnE): w_T is 0 for the first ``adversarial_start_epoch`` = E
epochs, then rises linearly to 1 at the last epoch: for 1-based epoch e,
``w_T(e) = 0 if e <= E else (e - E) / (epochs - E)``. With the defaults (E = 6, 10 epochs) w_T is
0, 0, 0, 0, 0, 0, 0.25, 0.5, 0.75, 1. E counts the epochs with w_T = 0 because Franzreb et al.
calls E = 10 of 10 "the baseline, where the target classifier's gradients are never
back-propagated".

Each epoch ends with a validation pass on whole held-out utterances (VER_S, VER_T in %), a history
record, ``history.json``, the checkpoint ``last.pt`` (everything needed to resume bit-identically)
and ``best.pt`` (the epoch ``select_best_epoch`` picks: lowest VER_S, in ``adversarial`` mode only
among epochs with w_T > 0). Training that is started again in the same folder with the same
config and data resumes after the last completed epoch.

``epochs`` is a cap: with ``patience`` set (default 3), a plateau is the first epoch after which
the lowest VER_S of the last ``patience`` eligible epochs after the learning-rate peak is not
``patience_margin_points`` below the lowest before them (``should_stop``, ``plateau_epoch``;
eligible as for ``best.pt``). From there the learning rate anneals linearly to ``base_lr`` over
``patience`` more epochs (``cool_down_learning_rate``; fewer when the cap comes first), then
training stops: both schedules decay towards the cap, and VER_S falls most while the rate comes
down, so stopping at the plateau itself would skip the epochs that learn most. The decisions read
only the history, so a resumed run anneals and stops where an uninterrupted one would.

The ``ge2e`` preset (``services.attacker.ge2e_model``) is Resemblyzer's GE2E encoder: it starts
from the weights in Resemblyzer's wheel and is fine-tuned with the schedule of a transfer (below).

Transfer (``transfer_checkpoint``): the recognizer (and the source head, when the speakers are the
same) starts from another run's checkpoint, in the pipeline the same seed's recognizer trained on
original speech, and is fine-tuned with ``fine_tune_learning_rate``: a linear warm-up from
``base_lr`` to ``finetune_lr`` over ``finetune_warmup_epochs``, then a linear decay to ``base_lr``
at the epochs cap (a cyclic schedule would send the transferred weights back up to the peak rate
in the middle of the run).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from speechbrain.nnet.losses import AdditiveAngularMargin, LogSoftmaxWrapper
from torch.utils.data import DataLoader

from services.attacker.augmentation import BatchAugmenter
from services.attacker.checkpoint import (
    CHECKPOINT_FORMAT,
    load_checkpoint,
    save_checkpoint,
)
from services.attacker.embeddings import (
    MIN_SAMPLES,
    auto_strategy,
    embed_waveforms,
    resolve_device,
)
from services.attacker.local_weights import check_local_weights
from services.attacker.models import CosineHead, SpeakerEncoder
from services.attacker.presets import ModelPreset, get_preset
from services.attacker.training_config import TrainingConfig, transfer_start
from services.attacker.training_data import (
    CropDataset,
    data_fingerprint,
    deterministic,
    epoch_generator,
    error_rate,
    normalize_items,
    rng_state,
    seed_everything,
    set_rng_state,
)
from services.attacker.training_losses import confusion_loss, reverse_gradient
from services.attacker.training_records import (
    CheckpointCallback,
    EpochRecord,
    ProgressCallback,
    TrainedAttacker,
    TrainingItem,
)
from services.attacker.training_schedule import (
    ADVERSARIAL_CHECKPOINT_RULE,
    cool_down_epochs,
    cool_down_learning_rate,
    cyclic_learning_rate,
    fine_tune_learning_rate,
    plateau_epoch,
    select_best_epoch,
    stop_reason,
    target_weight,
)
from services.audio import SAMPLE_RATE_HZ
from services.errors import ConfigError, InvalidInputError

if TYPE_CHECKING:
    from services.attacker.ssl import SSLFrontEnd

_RUNTIME_FIELDS = frozenset({"device", "dataloader_workers"})


class _Trainer:
    """State of one training run (models, optimizer, labels); ``train_attacker`` drives it."""

    def __init__(
        self,
        config: TrainingConfig,
        train: list[TrainingItem],
        val: list[TrainingItem],
        output_dir: Path,
        transfer_checkpoint: Path | None = None,
    ) -> None:
        self.config = config
        self.train = train
        self.val = val
        self.output_dir = output_dir
        self.device = resolve_device(config.device)
        self.preset = get_preset(config.preset)
        self._set_labels()
        self._build_models(transfer_checkpoint)
        self._set_schedule()

        self.global_step = 0
        self.epoch = 0
        self.resumed_after_epoch = 0
        self.history: list[EpochRecord] = []
        # The plateau epoch patience found (None: none yet); the cool-down anneals after it,
        # from (start step, the schedule's rate there, steps), set once per epoch.
        self.plateau: int | None = None
        self.cool_down: tuple[int, float, int] | None = None
        self.best_epoch = 0
        self.best_ver: float | None = None
        self.fingerprint = data_fingerprint(train, val)
        self.autocast_enabled = config.mixed_precision and self.device.type == "cuda"
        # Augmentation of the crops, drawn per (seed, epoch, step) (augmentation.py).
        self.augmenter = BatchAugmenter(config.augmentation) if config.augmentation else None

    def _set_labels(self) -> None:
        """Speaker and target labels of the training items and their class indices; checks
        that the target mode has targets and that validation speakers were trained on."""
        config = self.config
        self.speaker_labels = sorted({it.speaker for it in self.train})
        self.target_labels = sorted({it.target for it in self.train if it.target is not None})
        self.use_target = config.target_classifier != "off"
        if self.use_target and not self.target_labels:
            raise ConfigError(
                f"target_classifier: mode {config.target_classifier!r} needs training items with "
                "target labels, and none has one"
            )
        unknown = sorted({it.speaker for it in self.val} - set(self.speaker_labels))
        if unknown:
            raise InvalidInputError(
                f"validation: speakers absent from the training items: {unknown[:5]}"
            )
        self.spk_index = {s: i for i, s in enumerate(self.speaker_labels)}
        self.tgt_index = {t: i for i, t in enumerate(self.target_labels)}

    def _build_models(self, transfer_checkpoint: Path | None) -> None:
        """The front end, recognizer, heads (started from ``transfer_checkpoint`` when given),
        optimizer and losses, seeded with ``config.seed``."""
        config = self.config
        # The SSL front end is loaded first (from_pretrained may draw from the global
        # RNG), so that the seeding below gives the ECAPA and heads the same start as ever.
        self.ssl_front: SSLFrontEnd | None = None
        if config.front_end == "ssl":
            from services.attacker.ssl import load_ssl_front_end, ssl_preset

            assert config.ssl_model_path is not None  # the config's validator ensures it
            self.ssl_front = load_ssl_front_end(config.ssl_model_path)
            self.preset = ssl_preset(self.preset, self.ssl_front)

        # The recognizer and source head are built first, so that their initialization does not
        # depend on whether a target head exists (mode off vs observe: same recognizer).
        seed_everything(config.seed)
        self.encoder = SpeakerEncoder(self.preset, features=self.ssl_front)
        if config.pretrained_ecapa_path is not None:
            from services.attacker.pretrained import load_pretrained_ecapa

            load_pretrained_ecapa(self.encoder.embedding, config.pretrained_ecapa_path)
        # A pretrained verifier (the ge2e preset) always starts from its published weights and
        # is fine-tuned (the warm-up and decay schedule), never trained from random weights.
        self.pretrained_start = self.preset.architecture == "ge2e"
        if self.pretrained_start:
            from services.attacker.ge2e_model import load_ge2e_weights

            load_ge2e_weights(self.encoder.embedding.net)
        self.source_head = CosineHead(self.preset.embedding_dim, len(self.speaker_labels))
        self.transfer_fingerprint: str | None = None
        if transfer_checkpoint is not None:
            self._transfer(transfer_checkpoint)
        self.encoder = self.encoder.to(self.device)
        self.source_head = self.source_head.to(self.device)
        self.target_head: CosineHead | None = None
        ssl_params = set(self.ssl_front.ssl_parameters()) if self.ssl_front is not None else set()
        params = [p for p in self.encoder.parameters() if p not in ssl_params]
        params += list(self.source_head.parameters())
        if self.use_target:
            self.target_head = CosineHead(self.preset.embedding_dim, len(self.target_labels)).to(
                self.device
            )
            params += list(self.target_head.parameters())
        self.optimizer = self._optimizer(params)
        self.source_loss = LogSoftmaxWrapper(
            AdditiveAngularMargin(margin=config.aam_margin, scale=config.aam_scale)
        )
        target_margin = config.aam_margin if config.target_loss == "aam" else 0.0
        self.target_loss = LogSoftmaxWrapper(
            AdditiveAngularMargin(margin=target_margin, scale=config.aam_scale)
        )

    def _set_schedule(self) -> None:
        """The crop dataset, its labels and the step schedule (steps per epoch, warmup,
        learning-rate half cycle in steps, epochs until the rate peaks)."""
        config = self.config
        self.crop_samples = round(config.crop_seconds * SAMPLE_RATE_HZ)
        self.dataset = CropDataset([it.waveform for it in self.train], self.crop_samples)
        self.lengths = torch.tensor([len(it.waveform) for it in self.train], dtype=torch.float64)
        self.spk_ids = torch.tensor([self.spk_index[it.speaker] for it in self.train])
        self.tgt_ids = torch.tensor([self.tgt_index.get(it.target or "", -1) for it in self.train])
        n = len(self.train)
        self.steps_per_epoch = n // config.batch_size + (1 if n % config.batch_size >= 2 else 0)
        self.warmup_steps = config.finetune_warmup_epochs * self.steps_per_epoch
        self.total_steps = float(config.epochs * self.steps_per_epoch)
        if config.lr_step_size is not None:
            self.step_size = float(config.lr_step_size)
        else:
            half = config.lr_half_cycle_epochs or config.epochs / 2
            self.step_size = max(1.0, half * self.steps_per_epoch)

        # Epochs until the learning rate peaks: patience counts only after them (should_stop).
        self.rising_epochs = (
            config.finetune_warmup_epochs
            if self.fine_tuning
            else self.step_size / max(self.steps_per_epoch, 1)
        )

    @property
    def fine_tuning(self) -> bool:
        """Whether the recognizer starts from trained weights (transfer, or a pretrained
        verifier): the warm-up and decay schedule instead of the cyclic one."""
        return self.transfer_fingerprint is not None or self.pretrained_start

    def _optimizer(self, params: list[torch.nn.Parameter]) -> torch.optim.Optimizer:
        """Adam (or AdamW, ``config.optimizer``) over ``params`` (the recognizer without its SSL
        model, and the heads) and, with an SSL front end, the SSL model's trainable parameters
        as a second group."""
        config = self.config
        # Each group's learning rate is the cyclic schedule's times its lr_scale (_step).
        groups: list[dict[str, Any]] = [{"params": params, "lr_scale": 1.0}]
        if self.ssl_front is not None:
            # The frozen CNN encoder never learns, so it is left out of the optimizer.
            frozen = (
                self.ssl_front.feature_encoder_parameter_names()
                if config.ssl_freeze_feature_encoder
                else set()
            )
            ssl_trainable = [p for n, p in self.ssl_front.ssl.named_parameters() if n not in frozen]
            groups.append({"params": ssl_trainable, "lr_scale": config.ssl_lr_scale})
        optimizer = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam
        return optimizer(groups, lr=config.lr, weight_decay=config.weight_decay)

    def _transfer(self, path: Path) -> None:
        """Start from the recognizer in checkpoint ``path`` (transfer); its source head too when
        it was trained on the same speakers (the pipeline's original-speech recognizer is)."""
        payload = load_checkpoint(path)
        saved = ModelPreset.model_validate(payload["preset"])
        if saved != self.preset:
            raise ConfigError(
                f"{path}: cannot start from this recognizer: its preset {saved.name!r} differs "
                f"from the config's {self.preset.name!r} (transfer needs the same preset)"
            )
        self.encoder.load_state_dict(payload["encoder"])
        if list(payload["speaker_labels"]) == self.speaker_labels:
            self.source_head.load_state_dict(payload["source_head"])
        self.transfer_fingerprint = hashlib.sha256(path.read_bytes()).hexdigest()

    def scheduled_learning_rate(self, step: int) -> float:
        """The schedule's rate at optimizer step ``step``: cyclic from scratch, warm-up and
        decay when fine-tuning a transferred recognizer."""
        cfg = self.config
        if self.fine_tuning:
            return fine_tune_learning_rate(
                step, cfg.base_lr, cfg.finetune_lr, self.warmup_steps, self.total_steps
            )
        return cyclic_learning_rate(step, cfg.base_lr, cfg.lr, self.step_size)

    def _set_plateau(self) -> None:
        """The plateau and its cool-down, from the history (before each epoch, so a resumed run
        anneals like an uninterrupted one)."""
        self.plateau = plateau_epoch(self.history, self.config, self.rising_epochs)
        if self.plateau is None:
            self.cool_down = None
            return
        start = sum(r.steps for r in self.history if r.epoch <= self.plateau)
        steps = self.steps_per_epoch * cool_down_epochs(self.config, self.plateau)
        self.cool_down = (start, self.scheduled_learning_rate(start), steps)

    def learning_rate(self, step: int) -> float:
        """The rate at optimizer step ``step``: the schedule's, annealed to ``base_lr`` after a
        plateau (``self.cool_down``, set by ``_set_plateau`` before each epoch)."""
        scheduled = self.scheduled_learning_rate(step)
        if self.cool_down is None:
            return scheduled
        start, start_lr, steps = self.cool_down
        return cool_down_learning_rate(step, scheduled, start, start_lr, steps, self.config.base_lr)

    def last_epoch(self) -> int:
        """The epoch training ends with as far as the history tells: the cap, or the end of the
        cool-down after a plateau."""
        plateau = plateau_epoch(self.history, self.config, self.rising_epochs)
        if plateau is None:
            return self.config.epochs
        return plateau + cool_down_epochs(self.config, plateau)

    def finished(self) -> bool:
        """The cap is reached, or the cool-down after a plateau is over."""
        return self.epoch >= self.last_epoch()

    # ----------------------------------------------------------------- checkpoints
    def _payload(self, *, resumable: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "format": CHECKPOINT_FORMAT,
            "preset": self.preset.model_dump(mode="json"),
            "config": self.config.model_dump(mode="json"),
            "speaker_labels": self.speaker_labels,
            "target_labels": self.target_labels,
            "epoch": self.epoch,
            "history": [r.model_dump(mode="json") for r in self.history],
            "encoder": self.encoder.state_dict(),
            "source_head": self.source_head.state_dict(),
            "target_head": self.target_head.state_dict() if self.target_head else None,
            "best_epoch": self.best_epoch,
            "best_ver_source": self.best_ver,
            "data_fingerprint": self.fingerprint,
        }
        if self.transfer_fingerprint is not None:  # scratch checkpoints keep their keys
            # The payload key keeps its first name: checkpoints written before still resume.
            payload["init_fingerprint"] = self.transfer_fingerprint
        front_end = self.encoder.front_end_record()
        if front_end is not None:  # fbank checkpoints keep their keys
            payload["front_end"] = front_end
        if resumable:
            payload["optimizer"] = self.optimizer.state_dict()
            payload["scheduler"] = {"step": self.global_step, "step_size": self.step_size}
            payload["rng"] = rng_state()
        return payload

    def resume_from(self, path: Path) -> None:
        payload = load_checkpoint(path)
        saved = TrainingConfig.model_validate(payload["config"])
        changed = [
            k
            for k in TrainingConfig.model_fields
            if k not in _RUNTIME_FIELDS and getattr(saved, k) != getattr(self.config, k)
        ]
        if changed:
            raise ConfigError(
                f"{path}: cannot resume, config differs in {changed}; use resume=False or "
                "another output folder"
            )
        if payload["data_fingerprint"] != self.fingerprint:
            raise InvalidInputError(
                f"{path}: cannot resume, the training/validation data differ from the checkpoint's"
            )
        if payload.get("init_fingerprint") != self.transfer_fingerprint:
            raise ConfigError(
                f"{path}: cannot resume, the run started from another recognizer (init "
                "checkpoint differs); use resume=False or another output folder"
            )
        self.encoder.load_state_dict(payload["encoder"])
        self.source_head.load_state_dict(payload["source_head"])
        if self.target_head is not None:
            self.target_head.load_state_dict(payload["target_head"])
        self.optimizer.load_state_dict(payload["optimizer"])
        self.global_step = int(payload["scheduler"]["step"])
        self.epoch = int(payload["epoch"])
        self.resumed_after_epoch = self.epoch
        self.history = [EpochRecord.model_validate(r) for r in payload["history"]]
        set_rng_state(payload["rng"])
        # The rule is re-applied to the history, not taken from the checkpoint: a checkpoint
        # written under the older rule (lowest VER_S over all epochs) may name a w_T = 0 epoch.
        saved_best = int(payload["best_epoch"])
        self._select_best()
        if self.best_epoch == saved_best or self.best_epoch == 0:
            return  # with 0, the stale best.pt is overwritten by the first eligible epoch
        if self.best_epoch == self.epoch:  # the resumed weights are that epoch's
            save_checkpoint(self._payload(resumable=False), self.output_dir / "best.pt")
            return
        raise ConfigError(
            f"{path}: cannot resume, the checkpoint kept epoch {saved_best} as best.pt, but the "
            f"current rule ({ADVERSARIAL_CHECKPOINT_RULE}) selects epoch {self.best_epoch}, "
            "whose weights are no longer on disk; use resume=False or another output folder"
        )

    def _select_best(self) -> None:
        self.best_epoch = select_best_epoch(self.history, self.config)
        self.best_ver = next(
            (r.ver_source for r in self.history if r.epoch == self.best_epoch), None
        )

    def save(self) -> None:
        self._select_best()
        is_best = self.best_epoch == self.epoch
        save_checkpoint(self._payload(resumable=True), self.output_dir / "last.pt")
        if is_best:
            save_checkpoint(self._payload(resumable=False), self.output_dir / "best.pt")
        history = [r.model_dump(mode="json") for r in self.history]
        tmp = self.output_dir / "history.json.part"
        tmp.write_text(json.dumps(history, indent=2))
        os.replace(tmp, self.output_dir / "history.json")

    # ----------------------------------------------------------------- training
    def _batches(self, epoch: int) -> list[torch.Tensor]:
        g = epoch_generator(self.config.seed, epoch)
        n = len(self.train)
        room = torch.clamp(self.lengths - self.crop_samples + 1, min=1)
        starts = torch.floor(torch.rand(n, generator=g, dtype=torch.float64) * room)
        self.dataset.starts = starts.to(torch.int64).numpy()
        order = torch.randperm(n, generator=g)
        batches = list(torch.split(order, self.config.batch_size))
        if len(batches[-1]) < 2:  # BatchNorm in training mode needs two items
            batches.pop()
        return batches

    def _step(self, wavs: torch.Tensor, idx: torch.Tensor, w_t: float) -> tuple[float, float]:
        lr = self.learning_rate(self.global_step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr * group.get("lr_scale", 1.0)
        spk = self.spk_ids[idx].to(self.device)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast_enabled):
            emb = self.encoder(wavs.to(self.device))
            loss_s = self.source_loss(self.source_head(emb).unsqueeze(1), spk.unsqueeze(1))
            loss = self.config.source_weight * loss_s
            loss_t_value = float("nan")
            if self.target_head is not None:
                tgt = self.tgt_ids[idx].to(self.device)
                has = tgt >= 0
                if bool(has.any()):
                    confusion = (
                        self.config.target_classifier == "adversarial"
                        and self.config.adversary == "confusion"
                    )
                    if self.config.target_classifier == "observe" or confusion:
                        emb_t = emb.detach()
                    else:
                        emb_t = reverse_gradient(emb, w_t)
                    cos_t = self.target_head(emb_t[has])
                    loss_t = self.target_loss(cos_t.unsqueeze(1), tgt[has].unsqueeze(1))
                    loss = loss + loss_t
                    loss_t_value = float(loss_t.detach())
                    if confusion and w_t > 0.0:
                        weights = self.target_head.classifier.weight
                        loss = loss + w_t * confusion_loss(emb[has], weights, self.config.aam_scale)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.global_step += 1
        return float(loss_s.detach()), loss_t_value

    def _train_mode(self, epoch: int) -> None:
        """Train mode for 1-based ``epoch``; the SSL model stays frozen (and in eval mode) for
        the first ``ssl_frozen_epochs`` epochs, its CNN encoder always if so configured."""
        self.encoder.train()
        self.source_head.train()
        if self.target_head is not None:
            self.target_head.train()
        if self.ssl_front is not None:
            self.ssl_front.set_trainable(
                epoch > self.config.ssl_frozen_epochs,
                freeze_feature_encoder=self.config.ssl_freeze_feature_encoder,
            )

    def validate(self) -> tuple[float | None, float | None]:
        if not self.val:
            return None, None
        self.encoder.eval()
        emb = embed_waveforms(
            self.encoder,
            [it.waveform for it in self.val],
            strategy=auto_strategy(self.device),
            device=self.device,
        )
        self.encoder.train()
        emb_t = torch.from_numpy(emb).to(self.device)
        with torch.inference_mode():
            spk = torch.tensor([self.spk_index[it.speaker] for it in self.val], device=self.device)
            ver_s = error_rate(self.source_head(emb_t), spk)
            ver_t: float | None = None
            if self.target_head is not None:
                known = [i for i, it in enumerate(self.val) if it.target in self.tgt_index]
                if known:
                    tgt = torch.tensor(
                        [self.tgt_index[self.val[i].target or ""] for i in known],
                        device=self.device,
                    )
                    ver_t = error_rate(self.target_head(emb_t[known]), tgt)
        return ver_s, ver_t

    def run(
        self, progress: ProgressCallback | None, on_checkpoint: CheckpointCallback | None = None
    ) -> None:
        cfg = self.config
        run_steps = 0
        run_train_seconds = 0.0
        last_val_seconds = 0.0
        while not self.finished():
            epoch = self.epoch + 1
            self._set_plateau()
            last_epoch = self.last_epoch()
            w_t = (
                target_weight(epoch, cfg.epochs, cfg.adversarial_start_epoch)
                if cfg.target_classifier == "adversarial"
                else 0.0
            )
            t_epoch = time.perf_counter()
            cpu_epoch = time.process_time()
            batches = self._batches(epoch)
            loader = DataLoader(
                self.dataset,
                batch_sampler=[b.tolist() for b in batches],
                num_workers=cfg.dataloader_workers,
            )
            self._train_mode(epoch)
            sum_s = 0.0
            sum_t = 0.0
            n_t = 0
            lr = 0.0
            for step, (wavs, idx) in enumerate(zip(loader, batches, strict=True), start=1):
                lr = self.learning_rate(self.global_step)
                if self.augmenter is not None:
                    wavs = self.augmenter(wavs, (cfg.seed, epoch, step))
                loss_s, loss_t = self._step(wavs, idx, w_t)
                sum_s += loss_s
                if not math.isnan(loss_t):
                    sum_t += loss_t
                    n_t += 1
                run_steps += 1
                if progress is not None:
                    elapsed = time.perf_counter() - t_epoch
                    per_step = (run_train_seconds + elapsed) / run_steps
                    remaining = (len(batches) - step) + len(batches) * (last_epoch - epoch)
                    eta = per_step * remaining + last_val_seconds * (last_epoch - epoch + 1)
                    metrics = {"loss_source": sum_s / step, "lr": lr, "w_target": w_t}
                    if n_t:
                        metrics["loss_target"] = sum_t / n_t
                    progress(epoch, step, len(batches), eta, metrics)
            train_seconds = time.perf_counter() - t_epoch
            run_train_seconds += train_seconds
            t_val = time.perf_counter()
            ver_s, ver_t = self.validate()
            last_val_seconds = time.perf_counter() - t_val
            audio_seconds = sum(len(b) for b in batches) * self.crop_samples / SAMPLE_RATE_HZ
            record = EpochRecord(
                epoch=epoch,
                steps=len(batches),
                loss_source=sum_s / len(batches),
                loss_target=(sum_t / n_t) if n_t else None,
                ver_source=ver_s,
                ver_target=ver_t,
                learning_rate=lr,
                w_target=w_t,
                train_seconds=train_seconds,
                validation_seconds=last_val_seconds,
                epoch_seconds=time.perf_counter() - t_epoch,
                cpu_seconds=time.process_time() - cpu_epoch,
                audio_seconds=audio_seconds,
                throughput=audio_seconds / max(train_seconds, 1e-9),
            )
            self.epoch = epoch
            self.history.append(record)
            self.save()
            if on_checkpoint is not None:
                on_checkpoint(epoch, self.output_dir)
            if progress is not None:
                final = {
                    k: float(v)
                    for k, v in record.model_dump().items()
                    if isinstance(v, (int, float)) and k != "epoch"
                }
                left = self.last_epoch() - epoch
                eta = (run_train_seconds / max(run_steps, 1)) * len(batches) * left
                eta += last_val_seconds * left
                progress(epoch, len(batches), len(batches), eta, final)

    def result(self) -> TrainedAttacker:
        return TrainedAttacker(
            output_dir=self.output_dir,
            best_checkpoint=self.output_dir / "best.pt",
            last_checkpoint=self.output_dir / "last.pt",
            best_epoch=self.best_epoch,
            history=list(self.history),
            speaker_labels=self.speaker_labels,
            target_labels=self.target_labels,
            preset=self.preset,
            config=self.config,
            resumed_after_epoch=self.resumed_after_epoch,
            start=transfer_start(self.config, transferred=self.transfer_fingerprint is not None),
            stopped=stop_reason(self.history, self.config, self.best_epoch, self.rising_epochs),
        )


def train_attacker(
    train_items: Sequence[TrainingItem | tuple[Any, ...]],
    validation_items: Sequence[TrainingItem | tuple[Any, ...]],
    config: TrainingConfig | None = None,
    output_dir: str | Path = "attacker",
    *,
    resume: bool = True,
    progress: ProgressCallback | None = None,
    on_checkpoint: CheckpointCallback | None = None,
    transfer_checkpoint: str | Path | None = None,
) -> TrainedAttacker:
    """Train the attacker's recognizer; checkpoints go to ``output_dir``.

    From scratch, or from the local weights ``config`` names (``pretrained_ecapa_path``,
    ``ssl_model_path``; checked first by ``check_local_weights``, so a bad folder fails before
    any work).

    ``train_items`` / ``validation_items``: ``(waveform float32 16 kHz, speaker, target | None)``
    (validation: the held-out 10 % of the same speakers; may be empty, then VER is None and
    ``best.pt`` is the last eligible epoch; which epochs are eligible: ``select_best_epoch``).
    With ``resume`` (default), a ``last.pt`` left in ``output_dir`` by an interrupted run of the
    same config and data is continued after its last completed epoch, with results identical to
    an uninterrupted run, under the same checkpoint rule; ``resume=False`` starts over.
    ``progress``: see ``ProgressCallback``; ``on_checkpoint``: see ``CheckpointCallback``.
    ``transfer_checkpoint``: a ``best.pt`` / ``last.pt`` of this trainer with the same preset to
    start from (transfer; fine-tuned with ``finetune_lr``), e.g. the same seed's recognizer trained
    on original speech; a resume checks that it is the same file. A ``config.start`` that
    contradicts it (``original`` without one, ``scratch`` with one) is a ``ConfigError``.
    ``epochs`` is a cap (``should_stop``). Raises ``InvalidInputError`` / ``ConfigError`` naming
    a bad item, label or field.
    """
    cfg = config if config is not None else TrainingConfig()
    train = normalize_items(train_items, "train_items")
    val = normalize_items(validation_items, "validation_items")
    if len(train) < 2:
        raise InvalidInputError("train_items: need at least 2 utterances")
    if len({it.speaker for it in train}) < 2:
        raise InvalidInputError("train_items: need at least 2 speakers")
    if cfg.crop_seconds * SAMPLE_RATE_HZ < MIN_SAMPLES:
        raise ConfigError("crop_seconds: too short")
    check_local_weights(cfg)  # missing / unreadable / mismatched weight folders, before any work
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    transfer = Path(transfer_checkpoint) if transfer_checkpoint is not None else None
    if transfer is not None and not transfer.is_file():
        raise ConfigError(f"transfer_checkpoint: file not found: {transfer}")
    transfer_start(cfg, transferred=transfer is not None)  # a contradiction fails before any work
    trainer = _Trainer(cfg, train, val, out, transfer)
    last = out / "last.pt"
    with deterministic(cfg.deterministic, trainer.device):
        if resume and last.is_file():
            trainer.resume_from(last)
        trainer.run(progress, on_checkpoint)
    return trainer.result()
