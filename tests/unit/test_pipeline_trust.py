"""The overestimation alarm (services/pipeline/trust.py): each reason on both sides of its
threshold, on small hand-made result documents."""

from __future__ import annotations

from typing import Any

import pytest

from services.metrics import catalogue
from services.pipeline.trust import Trust, assess_trust, trust_from_document
from services.settings import Settings

SETTINGS = Settings(
    trust_max_original_eer_percent=10.0,
    trust_max_ver_s_percent=40.0,
    trust_still_falling_ver_s_points=5.0,
    # The last epoch's drop alone; the window's own tests set it.
    trust_still_falling_window_epochs=2,
)


def _epoch(epoch: int, ver_s: float, loss: float) -> dict[str, Any]:
    return {"epoch": epoch, "ver_source": ver_s, "loss_source": loss}


def _document(
    original_eer: float | None = 3.0,
    history: list[dict[str, Any]] | None = None,
    best_epoch: int = 2,
) -> dict[str, Any]:
    summary = [
        {"scenario": "semi-informed", "backend": "cosine", catalogue.EER.key: {"mean": 60.0}},
    ]
    if original_eer is not None:
        summary += [
            {"scenario": "original", "backend": "cosine", catalogue.EER.key: {"mean": 30.0}},
            {"scenario": "original", "backend": "plda", catalogue.EER.key: {"mean": original_eer}},
        ]
    if history is None:
        history = [_epoch(1, 30.0, 5.0), _epoch(2, 12.0, 3.0), _epoch(3, 14.0, 2.5)]
    return {
        "summary": summary,
        "training": {"anonymized-seed0": {"best_epoch": best_epoch, "history": history}},
    }


def _codes(trust: Trust) -> list[str]:
    return [r.code for r in trust.reasons]


def test_a_well_trained_attacker_is_trustworthy() -> None:
    trust = assess_trust(_document(), SETTINGS)
    assert trust.trustworthy and trust.to_json() == {"trustworthy": True, "reasons": []}


@pytest.mark.parametrize(("eer", "flagged"), [(9.9, False), (10.1, True)])
def test_original_eer_above_the_threshold(eer: float, flagged: bool) -> None:
    """The best back-end on original speech counts (cosine's 30 % does not)."""
    trust = assess_trust(_document(original_eer=eer), SETTINGS)
    assert ("original_eer_high" in _codes(trust)) is flagged
    if flagged:
        [reason] = trust.reasons
        assert (reason.value, reason.threshold) == (eer, 10.0)
        assert "original speech" in reason.message


def test_no_original_scenario_no_original_reason() -> None:
    assert assess_trust(_document(original_eer=None), SETTINGS).trustworthy


@pytest.mark.parametrize(("ver_s", "flagged"), [(39.0, False), (52.0, True)])
def test_ver_s_at_the_epoch_used(ver_s: float, flagged: bool) -> None:
    """The epoch the recognizer uses (best_epoch) counts, not a worse last one."""
    history = [_epoch(1, 80.0, 5.0), _epoch(2, ver_s, 3.0), _epoch(3, 90.0, 2.9)]
    trust = assess_trust(_document(history=history, best_epoch=2), SETTINGS)
    assert _codes(trust) == (["ver_s_high"] if flagged else [])
    if flagged:
        assert "under-trained" in trust.reasons[0].message and "52 %" in trust.reasons[0].message


def test_a_patience_stop_is_told_to_train_to_the_cap() -> None:
    """A recognizer stopped by patience is told, in its one line, to allow more patience or
    train to the cap, and where it stopped."""
    history = [_epoch(1, 80.0, 5.0), _epoch(2, 52.0, 3.0), _epoch(3, 60.0, 2.9)]
    document = _document(history=history, best_epoch=2)
    run = document["training"]["anonymized-seed0"]
    run |= {"stopped": "patience", "epochs_cap": 20, "condition": "anonymized", "start": "original"}
    run["patience"] = 3
    [reason] = assess_trust(document, SETTINGS).reasons
    assert reason.code == "ver_s_high"
    assert "raise training.patience (now 3) or set it to null" in reason.message
    assert "patience stopped it at epoch 3 of 20" in reason.message
    # Hitting the cap instead: raise the cap.
    run |= {"stopped": "cap", "epochs_cap": 3}
    [reason] = assess_trust(document, SETTINGS).reasons
    assert "raise training.epochs (now 3)" in reason.message
    assert "training.patience" not in reason.message


@pytest.mark.parametrize(("last", "flagged"), [(25.5, False), (24.0, True)])
def test_ver_s_still_falling_in_the_last_epoch_used(last: float, flagged: bool) -> None:
    history = [_epoch(1, 40.0, 5.0), _epoch(2, 30.0, 4.0), _epoch(3, last, 3.0)]
    trust = assess_trust(_document(history=history, best_epoch=3), SETTINGS)
    assert _codes(trust) == (["ver_s_still_falling"] if flagged else [])
    # The epoch used lies before the window: training had already turned.
    assert assess_trust(_document(history=history, best_epoch=1), SETTINGS).trustworthy


def _falling(ver_s: list[float], window: int, points: float = 5.0) -> list[str]:
    """The reasons of a capped run whose VER_S went through ``ver_s`` (its best epoch used)."""
    history = [_epoch(e, v, 5.0 - 0.1 * e) for e, v in enumerate(ver_s, start=1)]
    best = 1 + min(range(len(ver_s)), key=lambda i: (ver_s[i], -i))
    document = _document(history=history, best_epoch=best)
    document["training"]["anonymized-seed0"] |= {"stopped": "cap", "epochs_cap": len(ver_s)}
    settings = SETTINGS.model_copy(
        update={
            "trust_still_falling_window_epochs": window,
            "trust_still_falling_ver_s_points": points,
        }
    )
    return _codes(assess_trust(document, settings))


def test_one_lucky_epoch_on_a_plateau_is_not_a_fall_over_the_window() -> None:
    """VER_S on a plateau moves by several points from epoch to epoch by noise alone (a small
    validation set): the last epoch's drop can fake a fall that the window's slope averages
    out."""
    plateau = [60.0, 45.0, 38.0, 44.0, 40.0, 44.0, 38.0]
    assert _falling(plateau, window=2) == ["ver_s_still_falling"]  # 44 -> 38: 6 points
    assert _falling(plateau, window=3) == []  # 40, 44, 38: 1 point per epoch


def test_a_steady_fall_is_still_falling_over_the_window() -> None:
    """The eSpeak NG corpus's improvable cap-4 run (VER_S 60, 43, 26, 17 %): 9 points in its
    last epoch, 13 per epoch over its last three."""
    steady = [60.0, 43.0, 26.0, 17.0]
    assert _falling(steady, window=2, points=10.0) == []
    assert _falling(steady, window=3, points=10.0) == ["ver_s_still_falling"]
    # The slope of the defaults' window, in the reason.
    history = [_epoch(e, v, 5.0 - e) for e, v in enumerate(steady, start=1)]
    document = _document(history=history, best_epoch=4)
    document["training"]["anonymized-seed0"] |= {"stopped": "cap", "epochs_cap": 4}
    [reason] = assess_trust(document, Settings(trust_max_ver_s_percent=40.0)).reasons
    assert reason.value == pytest.approx(13.0) and "over its last 3 epochs (43 -> 17 %)" in (
        reason.message
    )


def test_the_window_needs_the_epoch_used_and_a_finite_ver_s() -> None:
    # Best epoch 2, before the last three: training had turned; a flat end is not a fall.
    assert _falling([50.0, 10.0, 30.0, 20.0, 12.0], window=3) == []  # best = epoch 2 (10 %)
    assert _falling([50.0, 30.0, 25.0, 12.0, 11.0], window=3) == ["ver_s_still_falling"]
    assert _falling([50.0, 30.0, 12.0, 12.0, 12.0], window=3) == []
    # An epoch without VER_S in the window: no slope, no reason.
    history = [_epoch(1, 50.0, 5.0), _epoch(2, 30.0, 4.0), _epoch(3, 10.0, 3.0)]
    history[1]["ver_source"] = None
    document = _document(history=history, best_epoch=3)
    document["training"]["anonymized-seed0"] |= {"stopped": "cap", "epochs_cap": 3}
    settings = SETTINGS.model_copy(update={"trust_still_falling_window_epochs": 3})
    assert assess_trust(document, settings).trustworthy


@pytest.mark.parametrize(("final", "flagged"), [(4.9, False), (5.0, True)])
def test_loss_not_falling(final: float, flagged: bool) -> None:
    history = [_epoch(1, 30.0, 5.0), _epoch(2, 20.0, 6.0), _epoch(3, 21.0, final)]
    trust = assess_trust(_document(history=history, best_epoch=2), SETTINGS)
    assert ("loss_not_falling" in _codes(trust)) is flagged


def test_the_block_round_trips_through_the_document() -> None:
    trust = assess_trust(_document(original_eer=20.0), SETTINGS)
    document = {"trust": trust.to_json()}
    assert document["trust"]["trustworthy"] is False
    assert set(document["trust"]["reasons"][0]) == {"code", "message", "value", "threshold"}
    assert trust_from_document(document) == trust
    assert trust_from_document({}) is None
    assert trust_from_document({"trust": {"trustworthy": "yes"}}) is None


def _zoo_document(weak_eer: float) -> dict[str, Any]:
    """Two attackers: ``strong`` (well trained) and ``weak`` (under-trained: VER_S 60 %)."""
    eer = catalogue.EER.key
    summary, training = [], {}
    for name, semi, history in (
        ("strong", 20.0, [_epoch(1, 30.0, 5.0), _epoch(2, 12.0, 3.0), _epoch(3, 14.0, 2.5)]),
        ("weak", weak_eer, [_epoch(1, 70.0, 5.0), _epoch(2, 60.0, 4.0), _epoch(3, 61.0, 3.9)]),
    ):
        summary += [
            {
                "attacker": name,
                "scenario": "semi-informed",
                "backend": "cosine",
                eer: {"mean": semi},
            },
            {"attacker": name, "scenario": "original", "backend": "cosine", eer: {"mean": 3.0}},
        ]
        training[f"{name}-anonymized-seed0"] = {
            "attacker": name, "best_epoch": 2, "history": history,
        }  # fmt: skip
    worst = "weak" if weak_eer < 20.0 else "strong"
    return {
        "summary": summary,
        "training": training,
        "worst_case": {"semi-informed": {"attacker": worst}, "original": {"attacker": "strong"}},
    }


def test_a_zoo_is_judged_by_its_worst_case_attacker() -> None:
    # The strong attacker made the verdict: the weak one's reasons are information only.
    trust = assess_trust(_zoo_document(weak_eer=45.0), SETTINGS)
    assert trust.trustworthy and trust.attacker == "strong"
    block = trust.to_json()
    assert block["attacker"] == "strong"
    assert [r["code"] for r in block["other_attackers"]["weak"]] == ["ver_s_high"]
    # The weak attacker made the verdict (lowest EER): its reasons count.
    trust = assess_trust(_zoo_document(weak_eer=15.0), SETTINGS)
    assert not trust.trustworthy and trust.attacker == "weak"
    assert _codes(trust) == ["ver_s_high"] and trust.others["strong"] == ()
    again = trust_from_document({"trust": trust.to_json()})
    assert again is not None and again.attacker == "weak" and not again.trustworthy


def test_without_a_zoo_the_block_is_unchanged() -> None:
    assert set(assess_trust(_document(), SETTINGS).to_json()) == {"trustworthy", "reasons"}


def _capped(stopped: str, cap: int, **entry: Any) -> dict[str, Any]:
    """A document whose recognizer ran 3 epochs, VER_S falling 30 -> 14 -> 6 points."""
    history = [_epoch(1, 30.0, 5.0), _epoch(2, 14.0, 3.0), _epoch(3, 6.0, 2.5)]
    document = _document(history=history, best_epoch=3)
    document["training"]["anonymized-seed0"] |= {
        "condition": "anonymized",
        "stopped": stopped,
        "epochs_cap": cap,
        **entry,
    }
    return document


def test_still_falling_means_the_cap_was_hit_and_names_the_key_to_raise() -> None:
    trust = assess_trust(_capped("cap", 3, start="original"), SETTINGS)
    [reason] = trust.reasons
    assert reason.code == "ver_s_still_falling"
    assert "hit its epochs cap" in reason.message
    assert "raise training.epochs (now 3)" in reason.message
    assert "\n" not in reason.message
    # Patience stopped it (or the cap was not reached): not "stopped while improving".
    assert assess_trust(_capped("patience", 10, start="original"), SETTINGS).trustworthy
    assert assess_trust(_capped("cap", 10, start="original"), SETTINGS).trustworthy


def test_still_falling_applies_to_a_run_that_reached_its_cap_whatever_its_label() -> None:
    """A run still improving at its cap is a cap stop (``stop_reason``); documents written
    before that rule may label it ``patience``: reaching the cap is what counts."""
    for label in ("cap", "patience"):
        [reason] = assess_trust(_capped(label, 3, start="original"), SETTINGS).reasons
        assert reason.code == "ver_s_still_falling"
        assert reason.value == pytest.approx(8.0)
    # A patience stop before the cap (3 of 10 epochs) is not "stopped while improving".
    assert assess_trust(_capped("patience", 10, start="original"), SETTINGS).trustworthy


def test_an_under_trained_scratch_recognizer_is_told_about_transfer() -> None:
    document = _capped("cap", 3, start="scratch")
    document["training"]["anonymized-seed0"]["history"][-1]["ver_source"] = 55.0
    document["training"]["anonymized-seed0"]["best_epoch"] = 2
    document["training"]["anonymized-seed0"]["history"][1]["ver_source"] = 50.0
    [reason] = assess_trust(document, SETTINGS).reasons
    assert reason.code == "ver_s_high"
    assert "raise training.epochs (now 3)" in reason.message
    assert "training.start: original" in reason.message


def test_unusable_speech_is_not_called_under_trained() -> None:
    """At chance on silence, more training cannot help: the message says why instead."""
    document = _capped("patience", 10, start="original")
    for record in document["training"]["anonymized-seed0"]["history"]:
        record["ver_source"] = 95.0
    document["utility"] = {"usable_speech": {"usable": False, "reasons": ["silence"]}}
    [reason] = assess_trust(document, SETTINGS).reasons
    assert reason.code == "ver_s_high"
    assert "no speaker information to learn" in reason.message
    assert "under-trained" not in reason.message and "more training could" not in reason.message
    document["utility"]["usable_speech"]["usable"] = True
    [reason] = assess_trust(document, SETTINGS).reasons
    assert "under-trained" in reason.message
