"""Pre-anonymized submissions in the VoicePrivacy layout: ``<folder><suffix>/wav/<utt>.wav``,
from a local folder or an archive; suffix detected, missing and extra utterances named."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from services.anonymizers.archive import ArchiveAnonymizer, validate_archive
from services.anonymizers.archive_members import pack_folder
from services.anonymizers.archive_request import expected_from_protocol, vpc_folders_of
from services.anonymizers.base import AnonymizationItem
from services.corpus.importers import import_corpus
from services.corpus.loaders import write_manifest
from services.corpus.protocol import Protocol
from services.corpus.voiceprivacy import build_vpc_protocol
from services.pipeline.vpc_export import read_result
from support.voiceprivacy import VPCTree, build_vpc_tree


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> VPCTree:
    return build_vpc_tree(tmp_path_factory.mktemp("vpc"))


@pytest.fixture(scope="module")
def protocol(tree: VPCTree) -> Protocol:
    manifest = write_manifest(import_corpus("kaldi", tree.data).manifest, tree.root / "m.jsonl")
    return build_vpc_protocol(manifest, tree.data, manifest_path="m.jsonl")


def _validate(tree: VPCTree, protocol: Protocol, source: Path, out: Path):  # type: ignore[no-untyped-def]
    durations = {u.utt_id: u.duration_s for u in tree.corpus}
    return validate_archive(
        source,
        expected_from_protocol(protocol),
        out,
        original_durations_s=durations,
        vpc_folders=vpc_folders_of(protocol),
    )


def _anon_only(tree: VPCTree, dest: Path) -> Path:
    for folder in tree.data.iterdir():
        if folder.name.endswith("_anon"):
            shutil.copytree(folder, dest / folder.name)
    return dest


def test_the_makers_data_folder_is_accepted_and_the_suffix_detected(
    tree: VPCTree, protocol: Protocol, tmp_path: Path
) -> None:
    # The whole data/ folder: original Kaldi folders (no audio) beside the anonymized copies.
    report = _validate(tree, protocol, tree.data, tmp_path / "out")
    assert report.ok, report.problems
    assert report.vpc_suffix == "_anon"
    assert set(report.files) == protocol.utterance_ids()
    anonymizer = ArchiveAnonymizer(tmp_path / "out")
    utt = protocol.trial[0]
    original = next(u for u in tree.corpus if u.utt_id == utt)
    wav, _ = sf.read(str(tree.corpus.resolve(original)), dtype="float32")
    item = AnonymizationItem(
        utt_id=utt,
        waveform=wav,
        sample_rate=16_000,
        source_speaker_id=original.speaker_id,
        source_gender=original.gender,
    )
    (out,) = anonymizer.anonymize([item], seed=0)
    folder = next(n for n, ids in tree.folders.items() if utt in ids)
    expected, _ = sf.read(str(tree.data / f"{folder}_anon" / "wav" / f"{utt}.wav"))
    np.testing.assert_allclose(out, expected[: out.size], atol=1e-4)
    assert not np.allclose(out, wav[: out.size], atol=1e-3)  # the anonymized audio, not the source


def test_an_archive_of_the_suffixed_folders_with_a_wrapper(
    tree: VPCTree, protocol: Protocol, tmp_path: Path
) -> None:
    folder = _anon_only(tree, tmp_path / "submission")
    archive = tmp_path / "submission.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(folder, arcname="submission")
    report = _validate(tree, protocol, archive, tmp_path / "out")
    assert report.ok, report.problems
    assert report.vpc_suffix == "_anon"


def test_missing_and_extra_utterances_are_named_and_counted(
    tree: VPCTree, protocol: Protocol, tmp_path: Path
) -> None:
    folder = _anon_only(tree, tmp_path / "submission")
    train = sorted((folder / "train-clean-360_anon" / "wav").iterdir())
    for path in train[:25]:
        path.unlink()
    extra = folder / "libri_dev_enrolls_anon" / "wav" / "not-an-utterance.wav"
    shutil.copy(train[30], extra)
    report = _validate(tree, protocol, folder, tmp_path / "out")
    assert not report.ok
    text = " | ".join(report.problems)
    assert "missing utterance(s): " in text and "(and 5 more, 25 in all)" in text
    assert repr(train[0].stem) in text
    assert "extra utterance(s) (not in the protocol): 'libri_dev_enrolls_anon/wav/not-an" in text
    assert not (tmp_path / "out" / "audio").exists()  # nothing kept of a failed validation


def test_a_file_in_the_wrong_folder_and_two_suffixes(
    tree: VPCTree, protocol: Protocol, tmp_path: Path
) -> None:
    folder = _anon_only(tree, tmp_path / "submission")
    utt = tree.folders["libri_test_enrolls"][0]
    shutil.move(
        folder / "libri_test_enrolls_anon" / "wav" / f"{utt}.wav",
        folder / "libri_dev_enrolls_anon" / "wav" / f"{utt}.wav",
    )
    report = _validate(tree, protocol, folder, tmp_path / "out")
    assert "in the wrong folder" in " | ".join(report.problems)
    assert "belongs to libri_test_enrolls_anon" in " | ".join(report.problems)
    shutil.copytree(folder / "libri_dev_enrolls_anon", folder / "libri_dev_enrolls_b2")
    report = _validate(tree, protocol, folder, tmp_path / "out")
    assert "several anonymized copies (suffixes): '_anon', '_b2'" in " | ".join(report.problems)


def test_the_archive_contract_still_holds(
    tree: VPCTree, protocol: Protocol, tmp_path: Path
) -> None:
    folder = _anon_only(tree, tmp_path / "submission")
    utt = tree.folders["libri_dev_trials_m"][1]
    bad = folder / "libri_dev_trials_m_anon" / "wav" / f"{utt}.wav"
    sf.write(str(bad), np.zeros(8000, dtype=np.float32), 8000)
    (folder / "libri_dev_trials_m_anon" / "wav" / "link.wav").symlink_to(bad)
    report = _validate(tree, protocol, folder, tmp_path / "out")
    assert "a symlink" in " | ".join(report.problems)
    (folder / "libri_dev_trials_m_anon" / "wav" / "link.wav").unlink()
    report = _validate(tree, protocol, folder, tmp_path / "out")
    assert "sample rate 8000 Hz, 16000 Hz is required" in " | ".join(report.problems)


def test_read_result_names_a_folder_without_results(tmp_path: Path) -> None:
    from services.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=r"no results\.json"):
        read_result(tmp_path)


def test_a_packed_folder_validates_like_the_folder(
    tree: VPCTree, protocol: Protocol, tmp_path: Path
) -> None:
    """`unmask submit --archive DIR` packs the folder's audio (not its Kaldi files) first."""
    packed = pack_folder(tree.data, tmp_path / "data.tar")
    with tarfile.open(packed) as tf:
        names = tf.getnames()
    assert names and all(n.endswith(".wav") for n in names)
    assert all("_anon/wav/" in n for n in names)
    report = _validate(tree, protocol, packed, tmp_path / "out")
    assert report.ok, report.problems
    assert report.vpc_suffix == "_anon"
