"""Can this verdict be trusted? The overestimation alarm of an evaluation's result.

A privacy verdict is only as strong as its attacker: an attacker that did not learn to recognize
speakers reports a high EER whatever the anonymizer does, and that EER overestimates privacy
(Panariello et al. 2025; Chandra et al.'s T10-2 case). :func:`assess_trust` reads a result document
(``results.json`` before its ``trust`` block is added) and lists what undermines it:

- ``original_eer_high``: the attacker's EER on ORIGINAL speech (the ``original`` scenario, the
  best back-end, mean over seeds) is above ``UNMASK_TRUST_MAX_ORIGINAL_EER_PERCENT``: it cannot
  even recognize clear speech;
- ``ver_s_high``: a recognizer's speaker-classification error on held-out validation speech
  (VER_S, %) at the epoch it uses is above ``UNMASK_TRUST_MAX_VER_S_PERCENT``: under-trained
  (more epochs or data would likely lower the EER). When the utility phase found the anonymized
  speech unusable (``utility.usable_speech.usable`` false), the message says instead that the
  speech carries no speaker information to learn: more training cannot help there;
- ``ver_s_still_falling``: training reached its epochs cap (``training.epochs``; a cap stop, or
  a run whose patience cool-down ran into the cap), the epoch a recognizer uses lies in its last
  ``UNMASK_TRUST_STILL_FALLING_WINDOW_EPOCHS`` epochs and VER_S fell over them by more than
  ``UNMASK_TRUST_STILL_FALLING_VER_S_POINTS`` per epoch (minus the least-squares slope, which
  averages out VER_S's epoch-to-epoch noise): training stopped while improving, and the message
  names the key to raise. (Documents written before the cap was recorded: any last epoch.)
- ``loss_not_falling``: a recognizer's training loss in its last epoch is not below its first;
- ``enrollment_unanonymized`` (archive submissions, where the maker anonymized the enrollment):
  the anonymized enrollment is much closer to the original speakers than the anonymized trials
  are (:func:`measure_enrollment_leak`; leak above ``UNMASK_TRUST_MAX_ENROLLMENT_LEAK``). An
  attacker enrolled with clear voices meets anonymized trials, so its EER measures the mismatch
  rather than the anonymizer's protection against an attacker with anonymized enrollment.

- ``challenger_stronger``: the challenger (``services.pipeline.challenger``: the pretrained GE2E
  verifier, not trained on the evaluation's data, scored on the headline's trials) reaches a lower
  EER than the verdict's attacker beyond the paired speaker-bootstrap interval of the difference:
  a stronger attacker exists, so the verdict overestimates privacy. The message names it and its
  EER.

With an attacker zoo (the document has ``worst_case``), the verdict is the worst-case attacker's
(``zoo.headline``): the checks run on that attacker's summary entries and recognizers alone, and
the block adds ``attacker`` (its name) and ``other_attackers`` (each other attacker's reasons, for
information: they do not make the verdict untrustworthy).

The block written into ``results.json``::

    "trust": {"trustworthy": bool,
              "reasons": [{"code": str, "message": str, "value": float|null,
                           "threshold": float|null}],
              # when the run scored a challenger: its block (services.pipeline.challenger)
              "challenger": {...},
              # with a zoo only:
              "attacker": str, "other_attackers": {name: [reason, ...]}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from services.attacker.recipes.spec import BASELINE
from services.metrics import catalogue
from services.pipeline.challenger import challenger_message
from services.pipeline.zoo import headline
from services.settings import Settings, get_settings

ORIGINAL_SCENARIO = "original"


@dataclass(frozen=True)
class TrustReason:
    """One thing that undermines a verdict; ``value`` and ``threshold`` in the code's unit."""

    code: str
    message: str
    value: float | None = None
    threshold: float | None = None


@dataclass(frozen=True)
class Trust:
    """Whether a verdict can be trusted, and why not."""

    reasons: tuple[TrustReason, ...] = field(default_factory=tuple)
    attacker: str | None = None
    """The zoo attacker the verdict is of (None: no zoo)."""
    others: Mapping[str, tuple[TrustReason, ...]] = field(default_factory=dict)
    """The other zoo attackers' reasons, by name (information only)."""
    challenger: Mapping[str, Any] | None = None
    """The document's challenger block, when the run scored one."""

    @property
    def trustworthy(self) -> bool:
        return not self.reasons

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "trustworthy": self.trustworthy,
            "reasons": [asdict(r) for r in self.reasons],
        }
        if self.challenger is not None:
            out["challenger"] = dict(self.challenger)
        if self.attacker is not None:
            out["attacker"] = self.attacker
            out["other_attackers"] = {
                name: [asdict(r) for r in reasons] for name, reasons in sorted(self.others.items())
            }
        return out


def _original_eer(summary: Sequence[Mapping[str, Any]]) -> float | None:
    """Lowest mean EER (%) over back-ends of the ``original`` scenario; None when not run."""
    values = []
    for entry in summary:
        if entry.get("scenario") != ORIGINAL_SCENARIO:
            continue
        value = entry.get(catalogue.EER.key)
        mean = value.get("mean") if isinstance(value, Mapping) else value
        if isinstance(mean, int | float):
            values.append(float(mean))
    return min(values) if values else None


def _used_record(run: Mapping[str, Any]) -> Mapping[str, Any] | None:
    history = [r for r in run.get("history") or [] if isinstance(r, Mapping)]
    if not history:
        return None
    best = run.get("best_epoch")
    return next((r for r in history if r.get("epoch") == best), history[-1])


def _cap_hit(run: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> bool:
    """Whether training ran into its epochs cap (True for documents that record no cap and no
    patience stop). A run that reached the cap counts whatever its label says: documents written
    before stops were labelled by ``stop_reason`` may call a run still improving at the cap a
    patience stop."""
    cap = run.get("epochs_cap")
    if isinstance(cap, int):
        return len(history) >= cap
    return run.get("stopped") != "patience"


def _ver_s_fall_per_epoch(
    history: Sequence[Mapping[str, Any]], used: Mapping[str, Any], window: int
) -> float | None:
    """How fast VER_S still fell at the end of training (points per epoch, positive = falling):
    minus the least-squares slope of VER_S over the last ``window`` epochs (all of them when
    fewer). None when the window holds fewer than two epochs or one without a VER_S, or when the
    epoch the recognizer uses lies before the window (it had already turned). Over two epochs it
    is the last epoch's drop; a longer window averages out the epoch-to-epoch noise of VER_S on a
    small validation set."""
    recent = list(history[-window:])
    if len(recent) < 2 or not any(r is used for r in recent):
        return None
    epochs, values = [], []
    for r in recent:
        ver_s, epoch = r.get("ver_source"), r.get("epoch")
        if not isinstance(ver_s, int | float) or not isinstance(epoch, int | float):
            return None
        epochs.append(float(epoch))
        values.append(float(ver_s))
    slope = float(np.polyfit(np.asarray(epochs), np.asarray(values), 1)[0])
    return -slope


def _under_trained_advice(run: Mapping[str, Any]) -> str:
    """One line: what to change so that the recognizer learns more."""
    cap = run.get("epochs_cap")
    raise_cap = f"raise training.epochs (now {cap})" if isinstance(cap, int) else "train longer"
    # ``init``: the key of reports written before it was named ``start``.
    start = run.get("start", run.get("init"))
    if run.get("condition") == "anonymized" and start == "scratch":
        return (
            f"{raise_cap}, or start from the original-speech recognizer (training.start: original)"
        )
    if run.get("stopped") == "patience":
        # VER_S found a plateau and the rate annealed after it; a noisy VER_S can call a plateau
        # too early, so more patience (or none: the whole cap) comes first.
        ran = len(run.get("history") or [])
        where = f" at epoch {ran} of {cap}" if isinstance(cap, int) else ""
        patience = run.get("patience")
        now = f" (now {patience})" if isinstance(patience, int) else ""
        return (
            f"raise training.patience{now} or set it to null to train to the cap, or more "
            f"training data or a larger training.preset; patience stopped it{where}"
        )
    return raise_cap


def _training_reasons(
    name: str, run: Mapping[str, Any], settings: Settings, *, unusable: bool = False
) -> list[TrustReason]:
    history = [r for r in run.get("history") or [] if isinstance(r, Mapping)]
    used = _used_record(run)
    if used is None:
        return []
    reasons = []
    ver_s = used.get("ver_source")
    if isinstance(ver_s, int | float) and ver_s > settings.trust_max_ver_s_percent:
        where = (
            f"recognizer {name} misclassifies {ver_s:.0f} % of validation speakers at the epoch "
            f"it uses (VER_S, epoch {used.get('epoch')}; above "
            f"{settings.trust_max_ver_s_percent:.0f} %)"
        )
        if unusable and run.get("condition") == "anonymized":
            message = (
                f"no speaker information to learn: {where}, and the anonymized speech failed the "
                "usable-speech guard, so more training would not lower the EER"
            )
        else:
            message = (
                f"attacker possibly under-trained: {where}; to fix: {_under_trained_advice(run)}"
            )
        reasons.append(
            TrustReason("ver_s_high", message, float(ver_s), settings.trust_max_ver_s_percent)
        )
    falling = _ver_s_fall_per_epoch(history, used, settings.trust_still_falling_window_epochs)
    if (
        falling is not None
        and falling > settings.trust_still_falling_ver_s_points
        and _cap_hit(run, history)
    ):
        span = min(len(history), settings.trust_still_falling_window_epochs)
        reasons.append(
            TrustReason(
                "ver_s_still_falling",
                f"attacker training stopped while improving: recognizer {name} hit its epochs "
                f"cap with VER_S falling {falling:.1f} points per epoch over its last {span} "
                f"epochs ({history[-span].get('ver_source'):.0f} -> "
                f"{history[-1].get('ver_source'):.0f} %); to fix: {_under_trained_advice(run)}",
                falling,
                settings.trust_still_falling_ver_s_points,
            )
        )
    if len(history) >= 2:
        first, final = history[0].get("loss_source"), history[-1].get("loss_source")
        if isinstance(first, int | float) and isinstance(final, int | float) and final >= first:
            reasons.append(
                TrustReason(
                    "loss_not_falling",
                    f"attacker training did not converge: recognizer {name}'s loss went from "
                    f"{first:.3g} to {final:.3g}",
                    float(final),
                    float(first),
                )
            )
    return reasons


def _row_normalized(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def measure_enrollment_leak(
    original_enrollment: np.ndarray,
    anonymized_enrollment: np.ndarray,
    original_trial: np.ndarray,
    anonymized_trial: np.ndarray,
) -> dict[str, Any]:
    """How much closer the anonymized enrollment stays to its original speech than the trials do.

    Arguments are embeddings (n, dim) by ONE recognizer trained on original speech, rows paired by
    utterance (row i of the anonymized set is row i of the original set, anonymized). With s_e and
    s_t the mean cosine similarity of an anonymized utterance to its own original, for enrollment
    and trials, the leak is ``(s_e - s_t) / (1 - s_t)``: the share of the gap between the trials'
    similarity and identity that the enrollment closes. 0 = enrollment anonymized like the trials;
    1 = enrollment identical to the original speech. ``leak`` is None when the trials themselves
    are (nearly) identical to their originals (1 - s_t < 1e-3): nothing was anonymized at all.
    """
    for name, a, b in (
        ("enrollment", original_enrollment, anonymized_enrollment),
        ("trial", original_trial, anonymized_trial),
    ):
        if a.shape != b.shape or a.ndim != 2 or a.shape[0] == 0:
            raise ValueError(
                f"{name}: original {a.shape} and anonymized {b.shape} embeddings must be paired "
                "(n, dim) arrays with n > 0"
            )
    s_e = float(
        np.mean(
            np.sum(
                _row_normalized(original_enrollment) * _row_normalized(anonymized_enrollment),
                axis=1,
            )
        )
    )
    s_t = float(
        np.mean(np.sum(_row_normalized(original_trial) * _row_normalized(anonymized_trial), axis=1))
    )
    gap = 1.0 - s_t
    return {
        "leak": (s_e - s_t) / gap if gap >= 1e-3 else None,
        "enrollment_similarity": s_e,
        "trial_similarity": s_t,
        "n_enrollment": int(original_enrollment.shape[0]),
        "n_trial": int(original_trial.shape[0]),
        "method": "mean cosine of each anonymized utterance to its original, by the recognizer "
        "trained on original speech (first seed)",
    }


def assess_trust(document: Mapping[str, Any], settings: Settings | None = None) -> Trust:
    """The reasons (see the module docstring) that undermine the verdict of ``document``; with a
    zoo (``worst_case`` in the document), those of the worst-case attacker (``zoo.headline``)."""
    settings = settings or get_settings()
    block = document.get("challenger")
    challenger = block if isinstance(block, Mapping) else None
    challenged = _challenger_reasons(challenger)
    worst = document.get("worst_case")
    if not isinstance(worst, Mapping):
        return Trust(tuple(_reasons(document, settings)) + challenged, challenger=challenger)
    chosen = headline(worst)[1]
    summary = [e for e in document.get("summary") or [] if isinstance(e, Mapping)]
    training = document.get("training") or {}
    names = sorted(
        {str(e.get("attacker") or BASELINE) for e in summary}
        | {str(t.get("attacker") or BASELINE) for t in training.values() if isinstance(t, Mapping)}
        | {chosen}
    )
    by_name = {}
    for name in names:
        part = {
            "utility": document.get("utility"),
            "summary": [e for e in summary if (e.get("attacker") or BASELINE) == name],
            "training": {
                k: t
                for k, t in training.items()
                if isinstance(t, Mapping) and (t.get("attacker") or BASELINE) == name
            },
        }
        by_name[name] = tuple(_reasons(part, settings))
    others = {n: r for n, r in by_name.items() if n != chosen}
    return Trust(by_name[chosen] + challenged, chosen, others, challenger)


def _challenger_reasons(block: Mapping[str, Any] | None) -> tuple[TrustReason, ...]:
    """``challenger_stronger`` when the challenger beat the verdict beyond the interval."""
    message = challenger_message(block) if block is not None else None
    if message is None or block is None:
        return ()
    head = block.get("headline") or {}
    return (
        TrustReason(
            "challenger_stronger",
            message,
            float(block[catalogue.EER.key]),
            float(head[catalogue.EER.key]),
        ),
    )


def _reasons(document: Mapping[str, Any], settings: Settings) -> list[TrustReason]:
    """The reasons of one attacker's ``summary`` and ``training`` entries."""
    reasons: list[TrustReason] = []
    original = _original_eer(document.get("summary") or [])
    if original is not None and original > settings.trust_max_original_eer_percent:
        reasons.append(
            TrustReason(
                "original_eer_high",
                f"attacker too weak: EER {original:.1f} % on original speech (above "
                f"{settings.trust_max_original_eer_percent:.0f} %), so a high EER on anonymized "
                "speech overestimates privacy",
                original,
                settings.trust_max_original_eer_percent,
            )
        )
    leak_block = document.get("enrollment_leak")
    leak = leak_block.get("leak") if isinstance(leak_block, Mapping) else None
    if isinstance(leak, int | float) and leak > settings.trust_max_enrollment_leak:
        reasons.append(
            TrustReason(
                "enrollment_unanonymized",
                f"enrollment looks un-anonymized: the anonymized enrollment stays much closer to "
                f"the original speakers than the anonymized trials do (leak {leak:.2f}, above "
                f"{settings.trust_max_enrollment_leak:.2f}); anonymize enrollment and trials alike",
                float(leak),
                settings.trust_max_enrollment_leak,
            )
        )
    training = document.get("training") or {}
    unusable = _speech_unusable(document)
    for name in sorted(training):
        if isinstance(training[name], Mapping):
            reasons.extend(_training_reasons(name, training[name], settings, unusable=unusable))
    return reasons


def _speech_unusable(document: Mapping[str, Any]) -> bool:
    """Whether the utility phase's usable-speech guard failed the anonymized speech."""
    value: Any = document.get("utility")
    for part in catalogue.USABLE_SPEECH.path or ():
        value = value.get(part) if isinstance(value, Mapping) else None
    return value is False


def trust_from_document(document: Mapping[str, Any]) -> Trust | None:
    """The ``trust`` block of a result document; None for documents written before it."""
    block = document.get("trust")
    if not isinstance(block, Mapping) or not isinstance(block.get("trustworthy"), bool):
        return None
    reasons = tuple(
        TrustReason(
            str(r.get("code", "")),
            str(r.get("message", "")),
            r.get("value") if isinstance(r.get("value"), int | float) else None,
            r.get("threshold") if isinstance(r.get("threshold"), int | float) else None,
        )
        for r in block.get("reasons") or []
        if isinstance(r, Mapping)
    )
    attacker = block.get("attacker")
    others = block.get("other_attackers")
    challenger = block.get("challenger")
    return Trust(
        reasons,
        challenger=challenger if isinstance(challenger, Mapping) else None,
        attacker=str(attacker) if isinstance(attacker, str) else None,
        others={
            str(name): tuple(
                TrustReason(str(r.get("code", "")), str(r.get("message", "")))
                for r in rs
                if isinstance(r, Mapping)
            )
            for name, rs in others.items()
            if isinstance(rs, list)
        }
        if isinstance(others, Mapping)
        else {},
    )
