"""Unmask's Python client (the ``unmask-client`` distribution, clients/python).

- :class:`Client` (``unmask_client.wrapper``): typed, raising calls, pagination, a job waiter;
- ``unmask_client.api_client``: the client generated from the API's OpenAPI document (every
  operation, ``sync`` / ``sync_detailed`` / ``asyncio``), ``make client`` regenerates it;
- :class:`JobConfigView` (``unmask_client.job_config``): a typed view of ``JobOut.config``
  (``Client.job_config``);
- :class:`RetryAfterTransport` (``unmask_client.retry``): waits out 429/503 as
  ``Retry-After`` asks.

Its only dependencies are httpx, attrs and python-dateutil.
"""

from unmask_client.job_config import JobConfigView
from unmask_client.retry import RetryAfterTransport, retry_after_seconds
from unmask_client.wrapper import FINISHED_JOB_STATES, Client, UnmaskError

__all__ = [
    "FINISHED_JOB_STATES",
    "Client",
    "JobConfigView",
    "RetryAfterTransport",
    "UnmaskError",
    "retry_after_seconds",
]
