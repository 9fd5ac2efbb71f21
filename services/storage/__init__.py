"""Storage: the relational schema and its repositories, and the blob store.

- ``models``: SQLAlchemy models; ``db``: engine/session factories; ``migrate``: Alembic from
  Python (the functions over these rows live in ``services.platform``).
- ``blob_interface``: ``BlobStore``, the key rule and the blob records; ``blob_local``:
  ``LocalBlobStore``; ``blob_s3``: ``S3BlobStore``; ``blobstore``: the store the settings name;
  ``local_http``: an HTTP front end for the local store's presigned URLs.

See docs/storage.md.
"""
