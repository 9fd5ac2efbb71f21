"""Which errors are transient on a worker: the storage ones plus the broker's (kombu, redis).

services/ never imports kombu or redis; the workers pass this taxonomy in
(``JobServices.transient_errors``).
"""

from __future__ import annotations

import kombu.exceptions
import redis.exceptions

from services.platform.jobs.host import job_transient_errors

BROKER_ERRORS: tuple[type[BaseException], ...] = (
    kombu.exceptions.OperationalError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
)


def transient_errors() -> tuple[type[BaseException], ...]:
    """Lost connections to the database, the blob store, the container engine or the broker."""
    return job_transient_errors() + BROKER_ERRORS
