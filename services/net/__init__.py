"""Outbound network access: the one policy every call the platform makes to a URL it was given
obeys (webhooks, OpenID Connect key sets, anonymizers served over HTTP). See ``policy``."""
