"""The utility ASR depends only on the protocol: a second submission's job on the same protocol
(another host, its own stage folder, the platform's shared blob store) trains no ASR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def test_a_second_submissions_job_trains_no_asr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    import services.utility.asr as asr_module
    from services.anonymizers.container import ContainerSandbox
    from services.pipeline.config import EvaluationConfig
    from services.pipeline.sets import corpus_stage, original_sets
    from services.pipeline.stages.context import AudioCache, StageContext, no_progress
    from services.pipeline.stages.utility import asr_stage
    from services.pipeline.workspace import StageWorkspace, SyncedStageRunner
    from services.settings import Settings
    from services.storage.blob_local import LocalBlobStore
    from tests.support.configs import micro_protocol_config

    trained: list[int] = []
    real_train = asr_module.train_asr

    def counting_train(audio: list[Any], *args: Any, **kwargs: Any) -> Any:
        trained.append(len(audio))
        return real_train(audio, *args, **kwargs)

    monkeypatch.setattr(asr_module, "train_asr", counting_train)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    store = LocalBlobStore(tmp_path / "blobs", signing_key="test")
    keys, transfers = [], []
    try:
        for job, anonymizer in (("first", "pitch"), ("second", "vtln")):
            config = EvaluationConfig.model_validate(
                micro_protocol_config(
                    name=job,
                    anonymizer={"name": anonymizer},
                    utility={"asr": {"epochs": 1, "hidden_size": 16}},
                )
            )
            stages = tmp_path / job / "stages"  # each job on its own host
            runner = SyncedStageRunner(stages, StageWorkspace(store, stages))
            ctx = StageContext(
                config,
                runner,
                no_progress,
                AudioCache(),
                None,
                ContainerSandbox.from_settings(Settings()),
            )
            protocol, manifest, key = corpus_stage(ctx)
            folder, asr_key, _ = asr_stage(ctx, original_sets(protocol, manifest, key))
            assert (folder / "model.pt").is_file()
            keys.append(asr_key)
            transfers.append([t.direction for t in runner.transfers if t.stage == "utility-asr"])
    finally:
        torch.set_num_threads(before)
    assert len(trained) == 1 and trained[0] > 0  # the first job trained it, the second did not
    assert keys[0] == keys[1]
    assert transfers == [["upload"], ["download"]]
