"""Uncharged re-runs of the results of an older evaluator (the evaluator's identity itself is
``services.pipeline.stage_versions``)."""

from services.platform.evaluator.service import RerunPlan, leaderboard_jobs, rerun_outdated

__all__ = ["RerunPlan", "leaderboard_jobs", "rerun_outdated"]
