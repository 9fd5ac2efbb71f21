"""Challenge phases of a protocol: windows, per-team limits, results hidden until a reveal."""

from services.platform.phases.errors import (
    PhaseClosedError,
    PhaseDefinitionError,
    PhaseInUseError,
    PhaseKindError,
    PhaseLimitError,
    PhaseOverlapError,
)
from services.platform.phases.service import (
    PhaseSpec,
    charged_jobs_in_phase,
    create_phase,
    delete_phase,
    get_phase,
    hidden_from,
    is_hidden,
    is_open,
    list_phases,
    phase_for_new_job,
    phases_due_for_release,
    revealed_jobs_clause,
    update_phase,
    withholds_events,
)

__all__ = [
    "PhaseClosedError",
    "PhaseDefinitionError",
    "PhaseInUseError",
    "PhaseKindError",
    "PhaseLimitError",
    "PhaseOverlapError",
    "PhaseSpec",
    "charged_jobs_in_phase",
    "create_phase",
    "delete_phase",
    "get_phase",
    "hidden_from",
    "is_hidden",
    "is_open",
    "list_phases",
    "phase_for_new_job",
    "phases_due_for_release",
    "revealed_jobs_clause",
    "update_phase",
    "withholds_events",
]
