"""The attacker zoo: specs, config validation, the worst-case rule, and a two-attacker run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from services.attacker.recipes import BASELINE, AttackerSpec, resolve_training, zoo_specs
from services.attacker.training_config import AugmentationConfig, TrainingConfig
from services.errors import ConfigError
from services.pipeline.config import EvaluationConfig, attacker_config, parse_config
from services.pipeline.zoo import headline, worst_case


def _row(attacker: str | None, scenario: str, backend: str, seed: int, eer: float, **extra: Any):
    row: dict[str, Any] = {"scenario": scenario, "backend": backend, "seed": seed}
    row["eer_percent"] = eer
    if attacker is not None:
        row["attacker"] = attacker
    row.update(extra)
    return row


# -- specs and config ----------------------------------------------------------------------------


def test_resolve_training_applies_overrides_and_keeps_the_base_without_them() -> None:
    base = TrainingConfig(preset="tiny", epochs=3)
    assert resolve_training(base, AttackerSpec(name="b")) is base
    spec = AttackerSpec(name="aug", training={"epochs": 5, "augmentation": {}})
    resolved = resolve_training(base, spec)
    assert resolved.epochs == 5 and resolved.preset == "tiny"
    assert resolved.augmentation == AugmentationConfig()
    assert base.augmentation is None and base.epochs == 3  # the base is not modified


def test_epochs_scale_stretches_the_whole_schedule() -> None:
    base = TrainingConfig(preset="tiny", epochs=8, adversarial_start_epoch=6)
    long = resolve_training(base, AttackerSpec(name="long", epochs_scale=3))
    assert (long.epochs, long.adversarial_start_epoch) == (24, 18)
    assert long.lr_half_cycle_epochs is None  # None = half the (new) epochs
    cycled = base.model_copy(update={"lr_half_cycle_epochs": 2.0})
    assert resolve_training(cycled, AttackerSpec(name="l", epochs_scale=2.5)).model_dump(
        include={"epochs", "adversarial_start_epoch", "lr_half_cycle_epochs"}
    ) == {"epochs": 20, "adversarial_start_epoch": 15, "lr_half_cycle_epochs": 5.0}
    assert base.epochs == 8  # the base is not modified


def test_no_attackers_is_todays_config_byte_for_byte() -> None:
    cfg = parse_config({"name": "x"})
    assert cfg.attackers is None
    assert "attackers" not in cfg.model_dump(mode="json")
    assert cfg.content_hash() == EvaluationConfig(name="x").content_hash()
    [spec] = zoo_specs(None)
    assert spec.name == BASELINE
    assert attacker_config(cfg, spec) is cfg  # same config object: same stage keys


def test_named_zoos_resolve() -> None:
    cfg = parse_config({"attackers": "strongest", "backends": ["cosine"]})
    specs = zoo_specs(cfg.attackers)
    names = [BASELINE, "finetuned", "finetuned-asnorm", "augmented", "augmented-asnorm", "ge2e"]
    assert [s.name for s in specs] == [*names, "ge2e-finetuned"]
    # The pretrained verifier is scored as it is: nothing to train, cosine.
    assert specs[-2].pretrained == "ge2e" and not specs[-2].training and specs[-2].scored_as_is
    # Fine-tuned, it trains like any attacker: the ge2e preset within the config's cap, on 1.6 s
    # crops at GE2E's own rate, scored with the config's back-ends.
    tuned = attacker_config(cfg, specs[-1])
    assert specs[-1].finetune and not specs[-1].scored_as_is
    assert tuned.training.preset == "ge2e" and tuned.training.epochs == cfg.training.epochs
    assert (tuned.training.crop_seconds, tuned.training.finetune_lr) == (1.6, 1e-4)
    assert tuned.training.patience == cfg.training.patience and tuned.backends == ["cosine"]
    specs = specs[:-2]
    configs = {s.name: attacker_config(cfg, s) for s in specs[1:]}
    assert configs["finetuned"].training.augmentation is None
    assert configs["augmented"].training.augmentation == AugmentationConfig()
    for name, attacker in configs.items():
        assert attacker.training.epochs == 3 * cfg.training.epochs
        assert attacker.backends == ["cosine", "plda"]
        assert attacker.scoring.normalization == ("as-norm" if "asnorm" in name else "none")
        # The zoo mixes the fine-tuned attacker (transfer) and the augmented one from scratch.
        assert attacker.training.start == ("original" if "finetuned" in name else "scratch")
    # The AS-norm variants share their recognizers (the same training).
    assert configs["finetuned"].training == configs["finetuned-asnorm"].training
    assert configs["augmented"].training == configs["augmented-asnorm"].training
    assert attacker_config(cfg, specs[0]) is cfg
    assert "attackers" in cfg.model_dump(mode="json")
    assert cfg.content_hash() != parse_config({"backends": ["cosine"]}).content_hash()


@pytest.mark.parametrize(
    ("attackers", "expected"),
    [
        ([{"name": "fast", "training": {"epochs": 0}}], "attackers[0] (fast): training.epochs"),
        ([{"name": "b"}, {"name": "x", "training": {"bogus": 1}}], "attackers[1] (x)"),
        ([{"name": "x", "training": {"seed": 3}}], "attackers[0] (x): training: "),
        ([{"name": "x", "backends": ["svm"]}], "attackers[0] (x): backends.0"),
        ([{"name": "Bad Name"}], "attackers[0] (Bad Name): name"),
        ([{"name": "a"}, {"name": "a"}], "duplicate names a"),
        ([{"name": "g", "pretrained": "ge2e"}], "at least one trained attacker"),
        (
            [{"name": "b"}, {"name": "g", "pretrained": "ge2e", "epochs_scale": 2}],
            "attackers[1] (g): ",
        ),
        ([{"name": "b"}, {"name": "g", "pretrained": "ge2e", "backends": ["plda"]}], "cosine"),
        ([{"name": "b"}, {"name": "e", "finetune": True}], "finetune fine-tunes pretrained: ge2e"),
        (
            [
                {"name": "b"},
                {
                    "name": "g",
                    "pretrained": "ge2e",
                    "finetune": True,
                    "training": {"init_from": "/models/ecapa"},
                },
            ],
            "pretrained_ecapa_path (a SpeechBrain ECAPA folder) initializes an ECAPA preset",
        ),
        ("nonsense", "unknown zoo 'nonsense'"),
        ([], "empty zoo"),
        (
            [{"name": "x", "epochs_scale": 2, "training": {"epochs": 5}}],
            "attackers[0] (x): (attacker): Value error, set either epochs_scale",
        ),
        ([{"name": "x", "epochs_scale": 0.5}], "attackers[0] (x): epochs_scale"),
    ],
)
def test_bad_attackers_are_named(attackers: Any, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"attackers": attackers})
    assert expected in str(err.value)


# -- the worst case ------------------------------------------------------------------------------


def test_worst_case_names_the_attacker_and_backend_over_seed_means() -> None:
    rows = [
        _row("baseline", "semi-informed", "cosine", 0, 30.0, linkability=0.2),
        _row("baseline", "semi-informed", "cosine", 1, 34.0, linkability=0.3),
        _row("augmented", "semi-informed", "cosine", 0, 20.0, linkability=0.1),
        _row("augmented", "semi-informed", "cosine", 1, 40.0, linkability=0.1),  # mean 30
        _row("augmented", "semi-informed", "plda", 0, 25.0, linkability=0.5),
        _row("augmented", "semi-informed", "plda", 1, 27.0, linkability=0.6),  # mean 26
        _row("baseline", "ignorant", "cosine", 0, 45.0),
    ]
    worst = worst_case(rows)
    semi = worst["semi-informed"]
    # Not the lowest single seed (20 %): the lowest mean over seeds.
    assert (semi["attacker"], semi["backend"], semi["eer_percent"]) == ("augmented", "plda", 26.0)
    assert semi["n_seeds"] == 2
    assert semi["attackers"] == ["augmented", "baseline"]
    link = semi["metrics"]["linkability"]
    assert (link["attacker"], link["backend"]) == ("augmented", "plda")
    assert link["value"] == pytest.approx(0.55)
    assert worst["ignorant"]["attacker"] == "baseline"
    assert headline(worst) == ("semi-informed", "augmented")


def test_rows_without_attacker_are_the_baseline() -> None:
    worst = worst_case([_row(None, "ignorant", "cosine", 0, 40.0)])
    assert worst["ignorant"]["attacker"] == BASELINE


@pytest.mark.parametrize("seed", range(30))
def test_worst_case_is_never_weaker_than_the_baseline_attackers(seed: int) -> None:
    """Property over random fixed scores: adding attackers can only lower the worst-case EER
    and raise the worst-case disclosure, never the other way round."""
    rng = np.random.default_rng(seed)
    scenarios = ["ignorant", "semi-informed"]
    rows = []
    for attacker in ["baseline", *[f"a{i}" for i in range(rng.integers(1, 4))]]:
        for scenario in scenarios:
            for backend in ["cosine", "plda"]:
                for s in range(int(rng.integers(1, 4))):
                    rows.append(
                        _row(
                            attacker,
                            scenario,
                            backend,
                            s,
                            float(rng.uniform(0, 50)),
                            linkability=float(rng.uniform(0, 1)),
                            srd={"empirical": {"mean_disclosure_bits": float(rng.uniform(0, 3))}},
                        )
                    )
    worst = worst_case(rows)
    baseline_only = worst_case([r for r in rows if r["attacker"] == BASELINE])
    for scenario in scenarios:
        assert worst[scenario]["eer_percent"] <= baseline_only[scenario]["eer_percent"]
        for key in ("linkability", "srd_mean_disclosure_bits"):
            assert (
                worst[scenario]["metrics"][key]["value"]
                >= baseline_only[scenario]["metrics"][key]["value"]
            )
        # ...and it is one of the attackers' own seed means, not a mix of them.
        sel = [
            r["eer_percent"]
            for r in rows
            if r["scenario"] == scenario
            and r["attacker"] == worst[scenario]["attacker"]
            and r["backend"] == worst[scenario]["backend"]
        ]
        assert worst[scenario]["eer_percent"] == pytest.approx(float(np.mean(sel)))


# -- the pipeline --------------------------------------------------------------------------------


@pytest.mark.slow
def test_two_cheap_attackers_give_rows_per_attacker_and_a_worst_case(tmp_path: Path) -> None:
    from test_attacker_front_ends import save_tiny_ecapa
    from test_attacker_hf_xvector import save_tiny_wavlm_sv

    from services.pipeline.evaluation import run_evaluation
    from support.configs import tiny_config

    save_tiny_ecapa(tmp_path / "vox")  # an operator's ECAPA folder, scored as it is
    save_tiny_wavlm_sv(tmp_path / "sv")  # and a Hugging Face speaker-verification folder
    data = tiny_config(
        synthetic={"n_speakers": 8, "n_attacker_train_speakers": 4, "n_eval_speakers": 2},
        scenarios=["original", "semi-informed"],
        training={"epochs": 1, "target_classifier": "off"},
        backends=["cosine"],
        metrics={"bootstrap_resamples": 0},
        attackers=[
            {"name": "baseline"},
            {"name": "plda-only", "backends": ["plda"]},  # shares the baseline's recognizers
            {"name": "wider-crops", "training": {"crop_seconds": 1.0}},
            {"name": "ge2e", "pretrained": "ge2e"},  # not trained: cosine rows of its own
            {"name": "vox", "pretrained": "ecapa", "pretrained_path": str(tmp_path / "vox")},
            {"name": "sv", "pretrained": "hf-xvector", "pretrained_path": str(tmp_path / "sv")},
        ],
    )
    result = run_evaluation(parse_config(data), tmp_path / "out")
    rows = result["rows"]
    by = {(r["attacker"], r["scenario"], r["backend"]) for r in rows}
    assert by == {
        (a, s, b)
        for a, b in [
            ("baseline", "cosine"),
            ("plda-only", "plda"),
            ("wider-crops", "cosine"),
            ("ge2e", "cosine"),
            ("vox", "cosine"),
            ("sv", "cosine"),
        ]
        for s in ("original", "semi-informed")
    }
    # Equal training configs share train stages: 2 recognizers x 2 distinct configs.
    train_keys = {s["key"] for s in result["stages"] if s["stage"] == "train"}
    assert len(train_keys) == 4
    assert {t["attacker"] for t in result["training"].values()} == {
        "baseline",
        "plda-only",
        "wider-crops",
    }
    assert {e["attacker"] for e in result["summary"]} == {
        "baseline",
        "plda-only",
        "wider-crops",
        "ge2e",
        "vox",
        "sv",
    }
    worst = result["worst_case"]
    for scenario in ("original", "semi-informed"):
        entry = worst[scenario]
        lowest = min((r for r in rows if r["scenario"] == scenario), key=lambda r: r["eer_percent"])
        assert entry["eer_percent"] == pytest.approx(lowest["eer_percent"])
        tied = {
            r["attacker"]
            for r in rows
            if r["scenario"] == scenario and r["eer_percent"] == lowest["eer_percent"]
        }
        assert entry["attacker"] == min(tied)  # ties: by attacker name
    assert result["trust"]["attacker"] == worst["semi-informed"]["attacker"]
    assert set(result["trust"]["other_attackers"]) == (
        {"baseline", "plda-only", "wider-crops", "ge2e", "vox", "sv"}
        - {result["trust"]["attacker"]}
    )
    # The challenger (GE2E) was scored on the headline's trials and the worst case reports it,
    # unless the verdict's attacker is the zoo's GE2E member itself (then nothing to challenge).
    if worst["semi-informed"]["attacker"] in ("ge2e", "vox", "sv"):
        assert "challenger" not in result
        return
    challenger = result["challenger"]
    assert challenger["attacker"] == "ge2e" and challenger["scenario"] == "semi-informed"
    assert challenger["headline"]["attacker"] == worst["semi-informed"]["attacker"]
    ge2e_semi = next(
        r for r in rows if r["attacker"] == "ge2e" and r["scenario"] == "semi-informed"
    )
    assert challenger["eer_percent"] == pytest.approx(ge2e_semi["eer_percent"])
    assert worst["semi-informed"]["challenger"]["eer_percent"] == challenger["eer_percent"]
    assert result["trust"]["challenger"]["stronger"] == challenger["stronger"]
    assert ("challenger_stronger" in {r["code"] for r in result["trust"]["reasons"]}) is (
        challenger["stronger"]
    )
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["worst_case"] == json.loads(json.dumps(worst))
    assert any(k.startswith("det-wider-crops-") for k in result["plots"])


def test_the_zoo_example_config_names_the_strongest_zoo() -> None:
    from services.pipeline.config import load_config

    path = Path(__file__).resolve().parents[2] / "examples" / "configs" / "zoo-pitch.yaml"
    cfg = load_config(path)
    names = [s.name for s in zoo_specs(cfg.attackers)]
    assert names == [
        BASELINE,
        "finetuned",
        "finetuned-asnorm",
        "augmented",
        "augmented-asnorm",
        "ge2e",
        "ge2e-finetuned",
    ]
    quick = load_config(path.with_name("quick-pitch.yaml"))
    # The zoo's baseline is the quick example's attacker: the same training stages.
    assert attacker_config(cfg, zoo_specs(cfg.attackers)[0]).training == quick.training
