"""Kaldi / VoicePrivacy data folders: import, protocols from the published lists, bad folders.

The tree is the tiny VoicePrivacy layout of ``tests.support.voiceprivacy`` (synthetic speech).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli.main import main
from services.corpus.importers import import_corpus
from services.corpus.loaders import read_manifest, write_manifest
from services.corpus.protocol import load_protocol
from services.corpus.voiceprivacy import build_vpc_protocol
from services.errors import CorpusError
from support.voiceprivacy import VPCTree, build_vpc_tree


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> VPCTree:
    return build_vpc_tree(tmp_path_factory.mktemp("vpc"))


def _copy(tree: VPCTree, dest: Path) -> Path:
    """A copy of the tree's original data folders (no anonymized copies), paths made absolute,
    in a toolkit root ``dest`` whose ``corpus`` links to the tree's (as a toolkit's ``corpora``
    links to another disk: wav.scp paths stay under the toolkit root, the link is followed)."""
    (dest / "corpus").symlink_to(tree.root.resolve() / "corpus", target_is_directory=True)
    data = dest / "data"
    for name in tree.folders:
        shutil.copytree(tree.data / name, data / name)
        scp = data / name / "wav.scp"
        lines = []
        for line in scp.read_text().splitlines():
            utt, path = line.split(" ", 1)
            p = Path(path)
            below = (p if p.is_absolute() else tree.root / p).resolve()
            lines.append(f"{utt} {dest / below.relative_to(tree.root.resolve())}")
        scp.write_text("\n".join(lines) + "\n")
    return data


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("unmask: ")
    return lines[0]


def test_import_reads_every_original_folder_and_skips_the_anonymized_copies(
    tree: VPCTree,
) -> None:
    manifest = import_corpus("kaldi", tree.data).manifest
    expected = {u for ids in tree.folders.values() for u in ids}
    assert {u.utt_id for u in manifest} == expected  # no *_anon audio came in
    assert all("_anon" not in u.path for u in manifest)
    corpus = {u.utt_id: u for u in tree.corpus}
    for u in manifest:
        # Relative wav.scp paths (toolkit root) and absolute ones both reach the same files.
        assert Path(u.path).resolve() == tree.corpus.resolve(corpus[u.utt_id]).resolve()
        assert u.gender == corpus[u.utt_id].gender
        assert u.duration_s == pytest.approx(corpus[u.utt_id].duration_s, abs=1e-3)
        assert u.text  # from the text files


def test_one_data_folder_imports_alone_and_utt2dur_is_used(tree: VPCTree, tmp_path: Path) -> None:
    data = _copy(tree, tmp_path)
    folder = data / "libri_dev_enrolls"
    ids = tree.folders["libri_dev_enrolls"]
    (folder / "utt2dur").write_text("".join(f"{u} 7.25\n" for u in ids))
    manifest = import_corpus("kaldi", folder).manifest
    assert [u.utt_id for u in manifest] == ids
    assert {u.duration_s for u in manifest} == {7.25}


def test_protocol_uses_exactly_the_lists(tree: VPCTree, tmp_path: Path) -> None:
    manifest = write_manifest(import_corpus("kaldi", tree.data).manifest, tmp_path / "m.jsonl")
    protocol = build_vpc_protocol(manifest, tree.data, manifest_path="m.jsonl")
    fixed = protocol.fixed_trials
    assert fixed is not None
    enrolls = tree.folders["libri_dev_enrolls"] + tree.folders["libri_test_enrolls"]
    assert sorted(protocol.enrollment) == sorted(enrolls)
    trials = [u for n, ids in tree.folders.items() if "_trials_" in n for u in ids]
    assert sorted(protocol.trial) == sorted(trials)
    assert {t.name: (sum(t.is_target), len(t) - sum(t.is_target)) for t in fixed.lists} == (
        tree.trial_counts
    )
    assert {t.name: (t.dataset, t.gender) for t in fixed.lists}["libri_test_trials_m"] == (
        "libri_test",
        "m",
    )
    train = set(tree.folders["train-clean-360"])
    assert set(protocol.attacker_train) | set(protocol.attacker_validation) == train
    assert not set(protocol.attacker_train) & set(protocol.attacker_validation)
    assert protocol.speaker_roles.target == ()
    assert fixed.train_folder == "train-clean-360"


def test_protocol_cli_round_trip_and_old_hashes_unchanged(
    tree: VPCTree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    m = tmp_path / "m.jsonl"
    assert main(["corpus", "import", "--layout", "kaldi", str(tree.data), "--out", str(m)]) == 0
    p = tmp_path / "protocol.json"
    args = ["corpus", "protocol", str(m), "--out", str(p), "--vpc-lists", str(tree.data)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "libri_dev_trials_f 19" in out
    loaded = load_protocol(p)
    assert loaded.fixed_trials is not None and loaded.fixed_trials.n_trials() == 76
    # A protocol without fixed lists neither writes the field nor hashes it.
    plain_args = ["--enrollments", "3", "--trials", "3"]
    assert (
        main(["corpus", "protocol", str(m), "--out", str(tmp_path / "plain.json"), *plain_args])
        == 0
    )
    plain = json.loads((tmp_path / "plain.json").read_text())
    assert "fixed_trials" not in plain
    assert load_protocol(tmp_path / "plain.json").fixed_trials is None


def _import_fails(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], *, src: Path | None = None
) -> str:
    out = tmp_path / "out" / "m.jsonl"
    assert main(["corpus", "import", "--layout", "kaldi", str(src or data), "--out", str(out)]) == 2
    assert not out.exists() and not out.parent.exists()
    return _one_error_line(capsys)


def test_missing_utt2spk_is_one_line(
    tree: VPCTree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _copy(tree, tmp_path)
    (data / "libri_dev_trials_f" / "utt2spk").unlink()
    assert "libri_dev_trials_f: no utt2spk" in _import_fails(data, tmp_path, capsys)


def test_pipe_and_segments_are_refused_naming_the_line(
    tree: VPCTree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _copy(tree, tmp_path)
    scp = data / "libri_dev_enrolls" / "wav.scp"
    lines = scp.read_text().splitlines()
    utt = lines[1].split(" ")[0]
    lines[1] = f"{utt} flac -c -d -s /corpora/{utt}.flac |"
    scp.write_text("\n".join(lines) + "\n")
    line = _import_fails(data, tmp_path, capsys)
    assert f"{scp}:2: a pipe command" in line and utt in line
    scp.write_text("\n".join(lines[:1]) + "\n")
    (data / "libri_dev_enrolls" / "segments").write_text(f"{utt} rec 0.0 1.0\n")
    assert "segments" in _import_fails(data, tmp_path, capsys)


def test_conflicting_duplicate_ids_are_an_error(
    tree: VPCTree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _copy(tree, tmp_path)
    a = tree.folders["libri_dev_enrolls"][0]
    other = (data / "libri_test_enrolls" / "wav.scp").read_text().splitlines()[0].split(" ", 1)[1]
    spk = a.split("-")[0]
    gender = next(u.gender for u in tree.corpus if u.utt_id == a)
    for table, line in (
        ("wav.scp", f"{a} {other}"),
        ("utt2spk", f"{a} {spk}"),
        ("spk2gender", f"{spk} {gender}"),
    ):
        with (data / "libri_test_enrolls" / table).open("a") as f:
            f.write(f"{line}\n")
    line = _import_fails(data, tmp_path, capsys)
    assert f"utterance id {a!r} is in libri_dev_enrolls" in line and "different audio" in line
    # The same id twice in one file names both lines.
    scp = data / "libri_dev_enrolls" / "wav.scp"
    first = scp.read_text().splitlines()[0]
    scp.write_text(scp.read_text() + first + "\n")
    assert "duplicate id" in _import_fails(data, tmp_path, capsys)


def test_unknown_speaker_in_trials_is_one_line_and_writes_nothing(
    tree: VPCTree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _copy(tree, tmp_path)
    m = tmp_path / "m.jsonl"
    assert main(["corpus", "import", "--layout", "kaldi", str(data), "--out", str(m)]) == 0
    trials = data / "libri_dev_trials_m" / "trials"
    utt = tree.folders["libri_dev_trials_m"][0]
    trials.write_text(trials.read_text() + f"nobody {utt} nontarget\n")
    n = len(trials.read_text().splitlines())
    p = tmp_path / "protocol.json"
    args = ["corpus", "protocol", str(m), "--out", str(p), "--vpc-lists", str(data)]
    assert main(args) == 2
    line = _one_error_line(capsys)
    assert f"{trials}:{n}: unknown speaker 'nobody'" in line
    assert not p.exists()
    # A label that contradicts the speakers is refused too.
    lines = trials.read_text().splitlines()[:-1]
    lines[0] = lines[0].rsplit(" ", 1)[0] + (
        " nontarget" if lines[0].endswith(" target") else " target"
    )
    trials.write_text("\n".join(lines) + "\n")
    assert main(args) == 2
    assert f"{trials}:1: labelled" in _one_error_line(capsys)


def test_listed_utterance_missing_from_the_manifest(tree: VPCTree, tmp_path: Path) -> None:
    manifest = import_corpus("kaldi", tree.data).manifest
    drop = tree.folders["libri_test_enrolls"][2]
    partial = manifest.subset(u.utt_id for u in manifest if u.utt_id != drop)
    with pytest.raises(CorpusError, match=f"enrolls:3: enrollment utterance '{drop}'"):
        build_vpc_protocol(partial, tree.data)


def test_train_folder_must_exist_and_be_disjoint(tree: VPCTree, tmp_path: Path) -> None:
    manifest = import_corpus("kaldi", tree.data).manifest
    with pytest.raises(CorpusError, match="train-other-500: the attacker-train folder"):
        build_vpc_protocol(manifest, tree.data, train="train-other-500")
    with pytest.raises(CorpusError, match="must be disjoint"):
        build_vpc_protocol(manifest, tree.data, train="libri_dev_enrolls")


def test_manifest_reads_back(tree: VPCTree, tmp_path: Path) -> None:
    written = write_manifest(import_corpus("kaldi", tree.data).manifest, tmp_path / "x/m.jsonl")
    again = read_manifest(tmp_path / "x/m.jsonl")
    assert again.content_hash() == written.content_hash()
