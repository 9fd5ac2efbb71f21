"""Blob stores: one suite run on the local folder (+ its HTTP front end) and on S3 (moto server)."""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import httpx
import pytest

from services.storage.blob_interface import BlobStore, PresignedRequest
from services.storage.blob_local import LocalBlobStore
from services.storage.blob_s3 import S3BlobStore
from services.storage.errors import (
    BlobIntegrityError,
    BlobNotFoundError,
    BlobStoreError,
    PermissionDeniedError,
)

pytestmark = pytest.mark.integration

# The s3_store fixture's multipart settings (S3's smallest part size is 5 MiB).
TEST_MULTIPART_THRESHOLD = TEST_MULTIPART_CHUNKSIZE = 5 * 1024 * 1024


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tamper(store: BlobStore, key: str, data: bytes) -> None:
    """Replace a blob's bytes behind the store's back, keeping its recorded sha256."""
    if isinstance(store, LocalBlobStore):
        store.path_of(key).write_bytes(data)
    else:
        assert isinstance(store, S3BlobStore)
        recorded = store.stat(key).sha256
        assert recorded is not None
        store.client.put_object(
            Bucket=store.bucket, Key=key, Body=data, Metadata={"sha256": recorded}
        )


def send(request: PresignedRequest, content: bytes | None = None) -> httpx.Response:
    return httpx.request(
        request.method, request.url, content=content, headers=request.headers, timeout=30
    )


def test_bytes_roundtrip_and_metadata(blob_store: BlobStore) -> None:
    data = b"scores" * 1000
    info = blob_store.put_bytes("jobs/1/scores.bin", data, media_type="application/x-test")
    assert (info.size_bytes, info.sha256) == (len(data), sha(data))
    assert blob_store.exists("jobs/1/scores.bin")
    stat = blob_store.stat("jobs/1/scores.bin")
    assert (stat.size_bytes, stat.sha256, stat.media_type) == (
        len(data),
        sha(data),
        "application/x-test",
    )
    assert blob_store.get_bytes("jobs/1/scores.bin") == data
    with blob_store.open_read("jobs/1/scores.bin") as stream:
        assert stream.read() == data
    blob_store.put_bytes("jobs/1/scores.bin", b"v2")  # overwrite
    assert blob_store.get_bytes("jobs/1/scores.bin") == b"v2"
    blob_store.delete("jobs/1/scores.bin")
    blob_store.delete("jobs/1/scores.bin")  # idempotent
    assert not blob_store.exists("jobs/1/scores.bin")
    with pytest.raises(BlobNotFoundError):
        blob_store.stat("jobs/1/scores.bin")
    with pytest.raises(BlobNotFoundError):
        blob_store.get_bytes("jobs/1/scores.bin")


def test_large_file_roundtrip_multipart(blob_store: BlobStore, tmp_path: Path) -> None:
    size = 2 * TEST_MULTIPART_CHUNKSIZE + 123_457  # over the threshold: 3 parts on S3
    assert size > TEST_MULTIPART_THRESHOLD
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(size))
    expected = sha(source.read_bytes())
    info = blob_store.put_file("archives/big.bin", source, expected_sha256=expected)
    assert (info.size_bytes, info.sha256) == (size, expected)
    if isinstance(blob_store, S3BlobStore):
        head = blob_store.client.head_object(Bucket=blob_store.bucket, Key="archives/big.bin")
        # A multipart upload's ETag ends in "-<number of parts>".
        assert head["ETag"].strip('"').endswith("-3")
    target = tmp_path / "out" / "big.bin"
    got = blob_store.get_to_path("archives/big.bin", target)
    assert got.sha256 == expected and sha(target.read_bytes()) == expected


def test_stream_upload(blob_store: BlobStore) -> None:
    data = os.urandom(300_000)
    info = blob_store.put_stream("s/stream.bin", io.BufferedReader(io.BytesIO(data)))
    assert info.sha256 == sha(data)
    assert blob_store.verify("s/stream.bin", expected_sha256=sha(data)).size_bytes == len(data)


def test_expected_hash_or_size_mismatch_stores_nothing(
    blob_store: BlobStore, tmp_path: Path
) -> None:
    data = b"payload"
    with pytest.raises(BlobIntegrityError, match="sha256"):
        blob_store.put_bytes("x/bad.bin", data, expected_sha256=sha(b"other"))
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    with pytest.raises(BlobIntegrityError, match="size"):
        blob_store.put_file("x/bad.bin", path, expected_size=len(data) + 1)
    with pytest.raises(BlobIntegrityError):
        blob_store.put_stream("x/bad.bin", io.BytesIO(data), expected_sha256=sha(b"other"))
    assert not blob_store.exists("x/bad.bin")


def test_corrupted_blob_is_detected_on_read(blob_store: BlobStore, tmp_path: Path) -> None:
    blob_store.put_bytes("x/good.bin", b"original content")
    tamper(blob_store, "x/good.bin", b"tampered content")
    target = tmp_path / "dest.bin"
    with pytest.raises(BlobIntegrityError, match="sha256"):
        blob_store.get_to_path("x/good.bin", target)
    assert not target.exists()  # no partial or wrong file left behind
    with pytest.raises(BlobIntegrityError):
        blob_store.get_bytes("x/good.bin")
    with pytest.raises(BlobIntegrityError):
        blob_store.verify("x/good.bin")
    assert blob_store.get_bytes("x/good.bin", verify=False) == b"tampered content"


def test_presigned_put_then_get(blob_store: BlobStore) -> None:
    data = os.urandom(50_000)
    put = blob_store.presigned_put(
        "uploads/a.tar", media_type="application/x-tar", expected_sha256=sha(data)
    )
    assert put.method == "PUT" and put.url.startswith("http://127.0.0.1")
    assert send(put, data).status_code == 200
    info = blob_store.verify("uploads/a.tar", expected_sha256=sha(data), expected_size=len(data))
    assert info.sha256 == sha(data)
    get = blob_store.presigned_get("uploads/a.tar")
    response = send(get)
    assert response.status_code == 200 and response.content == data


def test_presigned_put_without_hash_is_verified_afterwards(blob_store: BlobStore) -> None:
    data = b"uploaded by a client"
    assert send(blob_store.presigned_put("uploads/b.bin"), data).status_code == 200
    assert blob_store.verify("uploads/b.bin", expected_sha256=sha(data)).sha256 == sha(data)
    # verify recorded the hash, so later reads are checked against it
    assert blob_store.stat("uploads/b.bin").sha256 == sha(data)


def test_presigned_put_of_wrong_content_is_rejected(blob_store: BlobStore) -> None:
    expected = b"what the client promised"
    response = send(
        blob_store.presigned_put("uploads/c.bin", expected_sha256=sha(expected)), b"other bytes"
    )
    if response.status_code == 200:
        # Servers that do not enforce x-amz-checksum-sha256 (moto) accept the PUT; the
        # verification step must then catch and remove it.
        with pytest.raises(BlobIntegrityError):
            blob_store.verify(
                "uploads/c.bin", expected_sha256=sha(expected), delete_on_mismatch=True
            )
    else:
        assert 400 <= response.status_code < 500
    assert not blob_store.exists("uploads/c.bin")


@pytest.mark.parametrize("key", ["", "../etc/passwd", "a//b", ".meta/x", "a/./b", "a b", "/abs"])
def test_unsafe_keys_are_refused(blob_store: BlobStore, key: str) -> None:
    with pytest.raises(BlobStoreError):
        blob_store.put_bytes(key, b"x")


def test_local_presigned_urls_are_checked(local_store: LocalBlobStore) -> None:
    local_store.put_bytes("k/secret.bin", b"secret")
    get = local_store.presigned_get("k/secret.bin", expires_s=60)
    assert send(get).content == b"secret"
    forged = get.url.replace("k/secret.bin", "k/other.bin")
    assert httpx.get(forged).status_code == 403
    assert httpx.put(get.url, content=b"overwrite").status_code == 403  # a GET URL cannot PUT
    assert httpx.get(get.url.split("&signature=")[0] + "&signature=" + "0" * 64).status_code == 403
    query = dict(part.split("=", 1) for part in get.url.split("?", 1)[1].split("&"))
    with pytest.raises(PermissionDeniedError, match="expired"):
        local_store.check_presigned("GET", "k/secret.bin", query, now=get.expires_at + 1)
    assert local_store.get_bytes("k/secret.bin") == b"secret"


def test_local_presign_without_base_url_is_a_file_uri(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "b", signing_key="k")
    store.put_bytes("a/b.bin", b"x")
    url = store.presigned_get("a/b.bin").url
    assert url.startswith("file://") and url.endswith("/a/b.bin")
    assert Path(url.removeprefix("file://")).read_bytes() == b"x"


def test_s3_store_creates_its_bucket(s3_store: S3BlobStore) -> None:
    s3_store.client.head_bucket(Bucket=s3_store.bucket)  # raises if missing
    s3_store.ensure_bucket()  # idempotent
    assert s3_store.transfer_config.multipart_threshold == TEST_MULTIPART_THRESHOLD
    assert s3_store.transfer_config.multipart_chunksize == TEST_MULTIPART_CHUNKSIZE


def test_store_from_settings(moto_endpoint: str, tmp_path: Path) -> None:
    from services.settings import Settings
    from services.storage.blobstore import blob_store_from_settings

    settings = Settings(
        blob_backend="s3",
        s3_endpoint_url=moto_endpoint,
        s3_public_endpoint_url=moto_endpoint.replace("127.0.0.1", "localhost"),
        s3_bucket="unmask-from-settings",
        s3_access_key_id="testing",
        s3_secret_access_key="testing",
        s3_presign_expiry_s=30,
    )
    store = blob_store_from_settings(settings)
    assert isinstance(store, S3BlobStore)
    store.put_bytes("a.bin", b"abc")
    request = store.presigned_get("a.bin")
    # Presigned URLs name the public endpoint, and expire after s3_presign_expiry_s.
    assert request.url.startswith(moto_endpoint.replace("127.0.0.1", "localhost"))
    assert "X-Amz-Expires=30" in request.url
    assert send(request).content == b"abc"
    local = blob_store_from_settings(Settings(data_dir=tmp_path))
    assert isinstance(local, LocalBlobStore) and local.root == tmp_path / "blobs"
