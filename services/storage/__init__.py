"""Storage: the relational schema and its repositories, and the blob store.

- ``models``: SQLAlchemy models; ``db``: engine/session factories; ``repository``: the service
  functions the API and workers call; ``tokens``: API token hashing; ``migrate``: Alembic from
  Python.
- ``blobstore``: ``BlobStore`` with ``LocalBlobStore`` and ``S3BlobStore``; ``local_http``: an
  HTTP front end for the local store's presigned URLs.

See docs/storage.md.
"""
