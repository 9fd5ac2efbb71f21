"""Helpers shared by the test folders (a plain package, not collected by pytest).

``tests/conftest.py`` puts ``tests/`` on ``sys.path`` (pytest's default "prepend" import mode for a
conftest outside any package), so every test module imports these as ``support.<module>``:

- :mod:`support.configs`: the tiny evaluation configs (``tiny_config(**overrides)`` and the
  anonymizer-less protocol configs of the platform tests);
- :mod:`support.fake_api`: the API's job JSON and a job-polling handler for the command-line
  and client tests (``unmask submit``, ``unmask-submit``, the client wrapper);
- :mod:`support.seeding`: teams, submissions and jobs written straight through
  ``services.platform``;
- :mod:`support.workers`: the Celery app pointed at a broker with a worker's services installed,
  a worker thread, the boto3 client of the moto S3 server.
"""
