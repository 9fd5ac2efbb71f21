"""Fixtures and hooks shared by every test folder."""

from __future__ import annotations

import os
import sys
import warnings

import pytest

# The test suites run servers (PostgreSQL) with the default token key, which a deployment refuses;
# worker and API processes started by the tests inherit this.
os.environ.setdefault("UNMASK_ALLOW_DEV_TOKEN_HMAC_KEY", "1")


def _drop_unloadable_lazy_modules() -> None:
    """Remove SpeechBrain's lazy module shims whose target cannot be imported (e.g. k2).

    Hypothesis' pytest plugin reads ``__file__`` of every module in ``sys.modules``; on such a
    shim that raises ImportError instead of AttributeError and aborts the whole test session.
    SpeechBrain is imported first so that all of its shims are registered before we look.
    """
    import speechbrain.lobes.models.ECAPA_TDNN  # noqa: F401
    from speechbrain.utils.importutils import LazyModule

    for name, module in list(sys.modules.items()):
        if isinstance(module, LazyModule):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # SpeechBrain's redirect notices
                    getattr(module, "__file__", None)
            except ImportError:
                del sys.modules[name]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _drop_unloadable_lazy_modules()


@pytest.fixture(autouse=True, scope="session")
def _job_reactions() -> None:
    """The reactions to a job's state change (leaderboard summary, webhook event), installed as the
    API and the workers install them at start: tests that drive jobs through the services
    directly, without creating either app, see what a deployment does."""
    from services.platform.jobs.reactions import register_job_reactions

    register_job_reactions()
