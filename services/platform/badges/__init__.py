"""README badges of submissions (worst-case semi-informed EER, trust mark, colour)."""

from services.platform.badges.service import (
    BADGE_FILLS,
    BADGE_LABEL,
    BADGE_SCENARIO,
    EER_COLOURS,
    BadgeData,
    NoSucceededJobError,
    badge_data,
    badge_markdown,
    badge_svg,
    badge_title,
    eer_colour,
    pending_badge_svg,
)

__all__ = [
    "BADGE_FILLS",
    "BADGE_LABEL",
    "BADGE_SCENARIO",
    "EER_COLOURS",
    "BadgeData",
    "NoSucceededJobError",
    "badge_data",
    "badge_markdown",
    "badge_svg",
    "badge_title",
    "eer_colour",
    "pending_badge_svg",
]
