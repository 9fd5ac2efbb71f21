"""Server-rendered pages (HTML, Jinja2), one module per page family.

Not under ``/v1`` and not in the OpenAPI document. Pages read the same stored rows and the same
leaderboard view as the JSON API (no recomputation); plots and other artifacts are streamed from
the blob store after the same visibility check as ``/v1/jobs/{id}/artifacts``. Anonymous visitors
see public submissions only; a team signs in with an API token (``api/pages/session.py``) to see
its private ones too. docs/pages.md describes every page.

- ``rendering``: templates, their filters, the viewer, error pages;
- ``protocols``: the protocol list and the metric definitions;
- ``leaderboard`` (+ ``leaderboard_html``, ``leaderboard_plots``): the leaderboard, its CSV and
  plots;
- ``submissions``: a submission's results, plots and provenance;
- ``jobs``: a job's live progress, its status JSON, its artifacts;
- ``compare``: two submissions side by side, and their overlaid plots;
- ``login``: sign-in and sign-out (the signed session cookie and the forms' CSRF: ``session``).

``challenge_html`` holds the HTML fragments of the challenge features (phases, evaluators,
badges) the leaderboard and submission pages share.
"""

from fastapi import APIRouter

from api.pages import (
    compare,
    jobs,
    leaderboard,
    leaderboard_plots,
    login,
    protocols,
    submissions,
)
from api.pages.rendering import STATIC_DIR

router = APIRouter(include_in_schema=False)
for module in (protocols, leaderboard, leaderboard_plots, submissions, jobs, login, compare):
    router.include_router(module.router)

__all__ = ["STATIC_DIR", "router"]
