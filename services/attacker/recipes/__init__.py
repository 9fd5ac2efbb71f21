"""Attacker recipes: the attackers of an evaluation's zoo, trained and pretrained (pretrained
verifiers beside trained ones), and the named zoos.

A privacy verdict is only as strong as the strongest attacker it was measured against. An
evaluation config's ``attackers`` names the attackers a job trains and scores (each an
:class:`AttackerSpec`, ``spec.py``: training overrides on the config's ``training``, back-ends,
score normalization, or a pretrained verifier); every result row carries the name of its
``attacker``, and the pipeline's ``services.pipeline.zoo.worst_case`` picks, per scenario, the
result worst for the anonymizer's maker.

``attackers: null`` (the default) is one attacker, ``baseline``, that is the config itself: the
same stages, stage keys and ``results.json`` as an evaluation without a zoo. Named zoos
(:data:`NAMED_ZOOS`): ``vpc2024``, ``vpc2026`` and ``voiceprivacy`` (the VoicePrivacy
Challenge attackers, ``voiceprivacy.py``), ``baseline`` (that attacker alone) and ``strongest``
(``strongest.py``: the baseline plus ``finetuned``, the anonymized-speech recognizer started
from the same seed's original-speech recognizer (``training.start: original``) and fine-tuned
within 3x the config's epochs, and ``augmented``, trained from scratch within 3x the epochs with
augmentation (the ``AugmentationConfig`` defaults); both scored with cosine and PLDA, and again
with AS-norm as ``finetuned-asnorm`` and ``augmented-asnorm``, which share their recognizers),
``ge2e``, a pretrained verifier scored as it is (``AttackerSpec.pretrained``: no training,
cosine), and ``ge2e-finetuned``, the same verifier fine-tuned on each scenario's training speech
(``finetune: true``: a trained attacker with the config's cap, patience and back-ends).

Attackers whose resolved training configs are equal share their train and embed stages (stages
are keyed by their inputs), so adding a back-end-only variant costs scoring only. ``zoos.py``
holds ``NAMED_ZOOS`` and the checks of a config's ``attackers`` (``parse_attackers``,
``validate_zoo``).
"""

from services.attacker.recipes.spec import (
    ATTACKER_NAME_RE,
    BASELINE,
    NOT_OVERRIDABLE,
    AttackerSpec,
    resolve_training,
)
from services.attacker.recipes.strongest import (
    FINETUNED,
    GE2E_ATTACKER,
    GE2E_FINETUNED,
    STRONGEST_EPOCHS_SCALE,
    long_attacker_pair,
    strongest_zoo,
)
from services.attacker.recipes.zoos import (
    NAMED_ZOOS,
    RECIPE_ZOOS,
    parse_attackers,
    recipe_overrides,
    validate_zoo,
    zoo_specs,
)

__all__ = [
    "ATTACKER_NAME_RE",
    "BASELINE",
    "FINETUNED",
    "GE2E_ATTACKER",
    "GE2E_FINETUNED",
    "NAMED_ZOOS",
    "NOT_OVERRIDABLE",
    "RECIPE_ZOOS",
    "STRONGEST_EPOCHS_SCALE",
    "AttackerSpec",
    "long_attacker_pair",
    "parse_attackers",
    "recipe_overrides",
    "resolve_training",
    "strongest_zoo",
    "validate_zoo",
    "zoo_specs",
]
