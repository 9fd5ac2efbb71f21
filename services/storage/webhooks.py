"""TEMPORARY re-export: the webhooks moved to services/platform/webhooks/.

``repository.transition_job`` (and its successor in services/platform/jobs/records.py) still
imports :func:`record_job_event` from here; point it at ``services.platform.webhooks.payloads``
and delete this module.
"""

from services.platform.webhooks.payloads import record_job_event

__all__ = ["record_job_event"]
