"""The `unmask` command line (`cli.main:main`).

Before anything imports torch: OpenMP threads sleep instead of spinning and default to the CPUs
this process may really use (``services.threads``; the runtime reads these once, at load).
"""

from services.settings import prepare_thread_environment

prepare_thread_environment()
