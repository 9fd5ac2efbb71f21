"""The platform wing: the records and rules behind the HTTP API and the workers.

The science half of ``services/`` measures privacy; this half runs the service around it: who
calls (``identity``), who may see or change what (``access``), the registered ``protocols``, the
``submissions``, per-team ``quotas``, the ``jobs`` and their stages, their ``results`` and
artifacts, and the ``leaderboard``.

Shape, the same for every aggregate: one package ``services/platform/<name>/`` with

- ``__init__.py`` re-exporting the package's public names (callers import from the package),
- ``service.py``: functions taking an open :class:`~sqlalchemy.orm.Session` first, then keyword
  arguments; they flush but never commit, so several calls compose into one transaction
  (``Database.session_scope()`` commits),
- ``errors.py`` when the aggregate has errors of its own: subclasses of
  :mod:`services.storage.errors` / :mod:`services.errors` types, so interfaces map them to a
  status or exit code without knowing the aggregate.

Nothing here imports FastAPI, Starlette, Celery, kombu or redis: ``api/``, ``workers/`` and
``cli/`` call these functions and translate their errors. Helpers shared by several aggregates
live in ``pagination.py`` (keyset pages), ``hashing.py`` (canonical JSON hashes, hex digests) and
``rows.py`` (rows by id, row counts in a window).
"""
