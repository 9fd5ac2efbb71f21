"""Storage: the relational schema and its repositories, and the blob store.

- ``models``: SQLAlchemy models; ``db``: engine/session factories; ``migrate``: Alembic from
  Python; ``repository``: a TEMPORARY re-export shim (the functions over these rows live in
  ``services.platform``).
- ``blobstore``: ``BlobStore`` with ``LocalBlobStore`` and ``S3BlobStore``; ``local_http``: an
  HTTP front end for the local store's presigned URLs.

See docs/storage.md.
"""
