"""How the API runs under uvicorn: the one set of server options every API server uses.

The image's server (``python -m api.server``), the embedded demo's (``cli.demo_platform``) and the
benchmarks' all take :func:`server_options`, so none answers differently from the others: in
particular a request uvicorn's HTTP parser refuses gets the same 400 problem document everywhere
(``api.middleware.header_timeout``), not uvicorn's plain-text "Invalid HTTP request received.".

    python -m api.server --host 0.0.0.0 --port 8000 [any other uvicorn option]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from api.middleware.header_timeout import HeaderTimeoutH11Protocol

APP = "api.app:app"
"""The app every API server serves (an import string: worker processes import it themselves)."""


def server_options() -> dict[str, Any]:
    """The ``uvicorn.Config`` keyword arguments (beyond the app, host, port and logging) of every
    API server; also the defaults of :func:`main`'s command line, hence plain values."""
    protocol = HeaderTimeoutH11Protocol
    return {
        # Times out half-sent request headers; answers unparseable requests with JSON.
        "http": f"{protocol.__module__}:{protocol.__qualname__}",
        # Behind a proxy the client's address is in X-Forwarded-For, believed only from the
        # addresses uvicorn trusts (--forwarded-allow-ips, FORWARDED_ALLOW_IPS; loopback).
        "proxy_headers": True,
    }


def main(argv: Sequence[str] | None = None) -> None:
    """uvicorn's command line on :data:`APP`, with :func:`server_options` as its defaults (an
    option given on the command line, or as a ``UVICORN_*`` variable, still wins)."""
    from uvicorn.main import main as uvicorn_command

    arguments = list(sys.argv[1:] if argv is None else argv)
    uvicorn_command.main(
        args=[APP, *arguments], prog_name="python -m api.server", default_map=server_options()
    )


if __name__ == "__main__":
    main()
