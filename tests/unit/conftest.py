"""Fixtures of the unit tests (no servers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.storage.db import Database
from services.storage.models import Base


@pytest.fixture()
def database(tmp_path: Path) -> Iterator[Database]:
    """A :class:`Database` on a fresh SQLite file with the ORM's schema (``create_all``, no
    migrations: tests/integration checks those)."""
    db = Database(f"sqlite:///{tmp_path / 'unit.db'}")
    Base.metadata.create_all(db.engine)
    yield db
    db.dispose()
