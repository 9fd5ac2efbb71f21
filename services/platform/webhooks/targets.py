"""Where a webhook may be delivered: the outbound network policy (``services/net/policy.py``)
applied to webhook URLs.

At creation (:func:`url_refusal`) a URL with control characters or whitespace, a bad port, or a
literal non-global address (in any IPv4 form: ``127.1`` and ``0x7f000001`` are loopback) is
refused. At delivery (:func:`resolve_target`) the host name is resolved once, every address
checked, and the POST goes to the first checked address itself, with the original ``Host`` header
and TLS server name, so a second DNS answer between check and connect (DNS rebinding) cannot
redirect it.
"""

from __future__ import annotations

from services.net.policy import PinnedTarget, resolve
from services.net.policy import url_refusal as _policy_url_refusal

WebhookTarget = PinnedTarget

__all__ = ["WebhookTarget", "resolve_target", "url_refusal"]


def url_refusal(url: str, *, allow_private: bool) -> str | None:
    """Why ``url`` may not be registered (checked without DNS), or None."""
    return _policy_url_refusal(url, allow_private=allow_private, noun="webhook url")


def resolve_target(url: str, *, allow_private: bool) -> WebhookTarget | str:
    """The checked target of ``url`` or, as a string, why it may not be called."""
    return resolve(url, allow_private=allow_private)
