"""The HTTP API (FastAPI). In eager mode (``UNMASK_CELERY_EAGER=1``) jobs run in its process, so
OpenMP's wait policy and thread count are set before torch loads (``services.threads``)."""

from services.settings import prepare_thread_environment

prepare_thread_environment()
