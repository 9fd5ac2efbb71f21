"""The outbox: the one after-commit path from a committed transaction to the workers."""

from services.platform.outbox.service import (
    CLAIM_LEASE_S,
    DELIVER_WEBHOOK,
    REVOKE_JOB,
    RUN_PHASE,
    TOPICS,
    VALIDATE_ARCHIVE,
    MessageSender,
    SendReport,
    add_message,
    install_senders,
    installed_senders,
    prune_sent,
    relay_pass,
    send_messages,
    unsent_message_ids,
    withdraw_unsent,
)

__all__ = [
    "CLAIM_LEASE_S",
    "DELIVER_WEBHOOK",
    "REVOKE_JOB",
    "RUN_PHASE",
    "TOPICS",
    "VALIDATE_ARCHIVE",
    "MessageSender",
    "SendReport",
    "add_message",
    "install_senders",
    "installed_senders",
    "prune_sent",
    "relay_pass",
    "send_messages",
    "unsent_message_ids",
    "withdraw_unsent",
]
