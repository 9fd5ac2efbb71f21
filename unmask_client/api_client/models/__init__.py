"""Contains all the data models used in inputs/outputs"""

from .archive_upload_complete import ArchiveUploadComplete
from .archive_upload_create import ArchiveUploadCreate
from .archive_upload_create_visibility import ArchiveUploadCreateVisibility
from .archive_upload_out import ArchiveUploadOut
from .artifact_out import ArtifactOut
from .artifact_out_headers import ArtifactOutHeaders
from .artifacts_out import ArtifactsOut
from .builtin_spec import BuiltinSpec
from .builtin_spec_name import BuiltinSpecName
from .builtin_spec_params import BuiltinSpecParams
from .builtin_submission_create import BuiltinSubmissionCreate
from .builtin_submission_create_visibility import BuiltinSubmissionCreateVisibility
from .cancelled_jobs_out import CancelledJobsOut
from .challenger_attacker_out import ChallengerAttackerOut
from .challenger_out import ChallengerOut
from .challenger_out_scenarios import ChallengerOutScenarios
from .challenger_scenario_out import ChallengerScenarioOut
from .check_out import CheckOut
from .check_out_status import CheckOutStatus
from .comparison_out import ComparisonOut
from .comparison_out_det_curves import ComparisonOutDetCurves
from .comparison_out_det_curves_additional_property import (
    ComparisonOutDetCurvesAdditionalProperty,
)
from .comparison_out_paired_notes import ComparisonOutPairedNotes
from .comparison_out_per_speaker_eer import ComparisonOutPerSpeakerEer
from .completed_part import CompletedPart
from .container_spec import ContainerSpec
from .container_submission_create import ContainerSubmissionCreate
from .container_submission_create_visibility import ContainerSubmissionCreateVisibility
from .cost_limits import CostLimits
from .field_problem import FieldProblem
from .job_create import JobCreate
from .job_create_config_overrides import JobCreateConfigOverrides
from .job_out import JobOut
from .job_out_config import JobOutConfig
from .job_out_evaluator_type_0 import JobOutEvaluatorType0
from .job_out_state import JobOutState
from .job_page_out import JobPageOut
from .job_summary import JobSummary
from .job_summary_state import JobSummaryState
from .jobs_list_jobs_state_type_0 import JobsListJobsStateType0
from .leaderboard_out import LeaderboardOut
from .leaderboard_row import LeaderboardRow
from .leaderboard_row_evaluator_type_0 import LeaderboardRowEvaluatorType0
from .leaderboard_row_metrics import LeaderboardRowMetrics
from .leaderboard_spec import LeaderboardSpec
from .liveness import Liveness
from .me import Me
from .metric_comparison_out import MetricComparisonOut
from .oidc_exchange_request import OidcExchangeRequest
from .oidc_token_issued import OidcTokenIssued
from .per_speaker_out import PerSpeakerOut
from .phase_in import PhaseIn
from .phase_in_allowed_kinds_type_0_item import PhaseInAllowedKindsType0Item
from .phase_out import PhaseOut
from .phase_out_allowed_kinds_type_0_item import PhaseOutAllowedKindsType0Item
from .phase_patch import PhasePatch
from .phase_patch_allowed_kinds_type_0_item import PhasePatchAllowedKindsType0Item
from .phase_visibility import PhaseVisibility
from .problem import Problem
from .protocol_asr_out import ProtocolAsrOut
from .protocol_asr_out_state import ProtocolAsrOutState
from .protocol_create import ProtocolCreate
from .protocol_create_config import ProtocolCreateConfig
from .protocol_out import ProtocolOut
from .protocol_out_config import ProtocolOutConfig
from .protocol_out_limits import ProtocolOutLimits
from .quota_usage import QuotaUsage
from .quotas import Quotas
from .readiness import Readiness
from .readiness_checks import ReadinessChecks
from .rerun_out import RerunOut
from .rerun_out_current_evaluator import RerunOutCurrentEvaluator
from .rerun_out_queued import RerunOutQueued
from .rerun_request import RerunRequest
from .result_out import ResultOut
from .results_out import ResultsOut
from .results_out_state import ResultsOutState
from .results_out_worst_case_type_0 import ResultsOutWorstCaseType0
from .service_spec import ServiceSpec
from .service_submission_create import ServiceSubmissionCreate
from .service_submission_create_visibility import ServiceSubmissionCreateVisibility
from .side_out import SideOut
from .stage_out import StageOut
from .stage_out_state import StageOutState
from .submission_kind import SubmissionKind
from .submission_out import SubmissionOut
from .submission_out_kind import SubmissionOutKind
from .submission_out_status import SubmissionOutStatus
from .submission_out_visibility import SubmissionOutVisibility
from .submission_page_out import SubmissionPageOut
from .submissions_upload_archive_visibility import SubmissionsUploadArchiveVisibility
from .team_create import TeamCreate
from .team_out import TeamOut
from .token_create import TokenCreate
from .token_create_scopes_item import TokenCreateScopesItem
from .token_issued import TokenIssued
from .token_out import TokenOut
from .trust_out import TrustOut
from .trust_reason_out import TrustReasonOut
from .trusted_submitter_create import TrustedSubmitterCreate
from .trusted_submitter_out import TrustedSubmitterOut
from .upload_part import UploadPart
from .upload_part_headers import UploadPartHeaders
from .webhook_attempt_out import WebhookAttemptOut
from .webhook_create import WebhookCreate
from .webhook_create_events_item import WebhookCreateEventsItem
from .webhook_created import WebhookCreated
from .webhook_delivery_out import WebhookDeliveryOut
from .webhook_delivery_out_payload import WebhookDeliveryOutPayload
from .webhook_delivery_out_state import WebhookDeliveryOutState
from .webhook_delivery_page_out import WebhookDeliveryPageOut
from .webhook_out import WebhookOut
from .worst_case_metric_out import WorstCaseMetricOut
from .worst_case_out import WorstCaseOut
from .worst_case_out_metrics import WorstCaseOutMetrics

__all__ = (
    "ArchiveUploadComplete",
    "ArchiveUploadCreate",
    "ArchiveUploadCreateVisibility",
    "ArchiveUploadOut",
    "ArtifactOut",
    "ArtifactOutHeaders",
    "ArtifactsOut",
    "BuiltinSpec",
    "BuiltinSpecName",
    "BuiltinSpecParams",
    "BuiltinSubmissionCreate",
    "BuiltinSubmissionCreateVisibility",
    "CancelledJobsOut",
    "ChallengerAttackerOut",
    "ChallengerOut",
    "ChallengerOutScenarios",
    "ChallengerScenarioOut",
    "CheckOut",
    "CheckOutStatus",
    "ComparisonOut",
    "ComparisonOutDetCurves",
    "ComparisonOutDetCurvesAdditionalProperty",
    "ComparisonOutPairedNotes",
    "ComparisonOutPerSpeakerEer",
    "CompletedPart",
    "ContainerSpec",
    "ContainerSubmissionCreate",
    "ContainerSubmissionCreateVisibility",
    "CostLimits",
    "FieldProblem",
    "JobCreate",
    "JobCreateConfigOverrides",
    "JobOut",
    "JobOutConfig",
    "JobOutEvaluatorType0",
    "JobOutState",
    "JobPageOut",
    "JobSummary",
    "JobSummaryState",
    "JobsListJobsStateType0",
    "LeaderboardOut",
    "LeaderboardRow",
    "LeaderboardRowEvaluatorType0",
    "LeaderboardRowMetrics",
    "LeaderboardSpec",
    "Liveness",
    "Me",
    "MetricComparisonOut",
    "OidcExchangeRequest",
    "OidcTokenIssued",
    "PerSpeakerOut",
    "PhaseIn",
    "PhaseInAllowedKindsType0Item",
    "PhaseOut",
    "PhaseOutAllowedKindsType0Item",
    "PhasePatch",
    "PhasePatchAllowedKindsType0Item",
    "PhaseVisibility",
    "Problem",
    "ProtocolAsrOut",
    "ProtocolAsrOutState",
    "ProtocolCreate",
    "ProtocolCreateConfig",
    "ProtocolOut",
    "ProtocolOutConfig",
    "ProtocolOutLimits",
    "QuotaUsage",
    "Quotas",
    "Readiness",
    "ReadinessChecks",
    "RerunOut",
    "RerunOutCurrentEvaluator",
    "RerunOutQueued",
    "RerunRequest",
    "ResultOut",
    "ResultsOut",
    "ResultsOutState",
    "ResultsOutWorstCaseType0",
    "ServiceSpec",
    "ServiceSubmissionCreate",
    "ServiceSubmissionCreateVisibility",
    "SideOut",
    "StageOut",
    "StageOutState",
    "SubmissionKind",
    "SubmissionOut",
    "SubmissionOutKind",
    "SubmissionOutStatus",
    "SubmissionOutVisibility",
    "SubmissionPageOut",
    "SubmissionsUploadArchiveVisibility",
    "TeamCreate",
    "TeamOut",
    "TokenCreate",
    "TokenCreateScopesItem",
    "TokenIssued",
    "TokenOut",
    "TrustOut",
    "TrustReasonOut",
    "TrustedSubmitterCreate",
    "TrustedSubmitterOut",
    "UploadPart",
    "UploadPartHeaders",
    "WebhookAttemptOut",
    "WebhookCreate",
    "WebhookCreateEventsItem",
    "WebhookCreated",
    "WebhookDeliveryOut",
    "WebhookDeliveryOutPayload",
    "WebhookDeliveryOutState",
    "WebhookDeliveryPageOut",
    "WebhookOut",
    "WorstCaseMetricOut",
    "WorstCaseOut",
    "WorstCaseOutMetrics",
)
