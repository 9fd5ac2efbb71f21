"""README badges of submissions (worst-case semi-informed EER, trust mark, colour)."""

from services.platform.badges.service import (
    BADGE_SCENARIO,
    EER_COLOURS,
    BadgeData,
    NoSucceededJobError,
    badge_data,
    badge_markdown,
    badge_svg,
    eer_colour,
)

__all__ = [
    "BADGE_SCENARIO",
    "EER_COLOURS",
    "BadgeData",
    "NoSucceededJobError",
    "badge_data",
    "badge_markdown",
    "badge_svg",
    "eer_colour",
]
