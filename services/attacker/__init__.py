"""The attacker's speaker recognizer: presets, training with a target classifier, embeddings.

See ``docs/attacker.md``. Entry points: ``train_attacker`` (training.py), ``extract_embeddings``
and ``model_hash`` (embeddings.py), ``load_encoder`` (checkpoint.py), ``PRESETS`` (models.py).
"""
