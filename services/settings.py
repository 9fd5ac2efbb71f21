"""The one place where Unmask reads its configuration.

Every deployment knob is an environment variable with the ``UNMASK_`` prefix (12-factor);
``Settings()`` reads them, and ``get_settings()`` caches one instance per process. Scientific
defaults (durations, split sizes, model sizes) are not here: they belong to the evaluation config
(`services.pipeline.config`), because they are part of what a result was computed under.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

log = logging.getLogger(__name__)

DEPLOYMENT_RULE = "x-deployment-rule"
"""The ``json_schema_extra`` key of a request field whose rule is a setting of the deployment
(its value: the setting's name, e.g. ``max_presigned_archive_bytes``); the API's document states
the deployment's rule in its place (``api.app.DEPLOYMENT_RULES``)."""

DEPRECATED_ALLOW_PRIVATE_HOSTS_VARIABLE = "UNMASK_WEBHOOK_ALLOW_PRIVATE_HOSTS"
"""The old name of ``UNMASK_OUTBOUND_ALLOW_PRIVATE_HOSTS``, read when the new one is not set."""


@lru_cache(maxsize=1)  # once per process: every Settings() would repeat it
def _warn_of_the_old_allow_private_hosts_name() -> None:
    log.warning(
        "%s is deprecated: set UNMASK_OUTBOUND_ALLOW_PRIVATE_HOSTS instead (it governs every "
        "outbound call; when both are set, the new name wins and the old one is ignored)",
        DEPRECATED_ALLOW_PRIVATE_HOSTS_VARIABLE,
    )


DEV_TOKEN_HMAC_KEY = "dev-only-change-me"
"""The default token key: fine for the embedded demo, refused by a platform deployment."""


def _default_oidc_issuers() -> dict[str, Literal["github", "gitlab"]]:
    return {"https://token.actions.githubusercontent.com": "github", "https://gitlab.com": "gitlab"}


class Settings(BaseSettings):
    """Deployment settings, read from ``UNMASK_*`` environment variables (and a ``.env`` file)."""

    # populate_by_name: a field with environment aliases is still given by its name in code.
    model_config = SettingsConfigDict(
        env_prefix="UNMASK_", env_file=".env", extra="ignore", populate_by_name=True
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The default sources, in the default order. The deprecated variable name is looked for
        here because only the sources know which name was set: the values they hand on are keyed
        by the first alias whichever one was found."""
        for source in (env_settings, dotenv_settings):
            names = {name.lower() for name in getattr(source, "env_vars", {})}
            if DEPRECATED_ALLOW_PRIVATE_HOSTS_VARIABLE.lower() in names:
                _warn_of_the_old_allow_private_hosts_name()
        return init_settings, env_settings, dotenv_settings, file_secret_settings

    @model_validator(mode="after")
    def _refuse_the_dev_token_key(self) -> Settings:
        """Anyone who knows the default key can forge token hashes: a platform deployment (a
        server database) must set its own; the embedded demo (SQLite) and test suites may not."""
        if self.token_hmac_key == DEV_TOKEN_HMAC_KEY and not (
            self.embedded or self.allow_dev_token_hmac_key
        ):
            raise ValueError(
                "UNMASK_TOKEN_HMAC_KEY: the default development key is refused with a server "
                "database; set a long random string (e.g. `openssl rand -hex 32`)"
            )
        return self

    @property
    def embedded(self) -> bool:
        """Whether this is the embedded deployment (the demo's SQLite database)."""
        return not self.database_url or self.database_url.startswith("sqlite")

    def host_binding_problem(self) -> str | None:
        """Why an API server must not start with these settings, or None.

        Outside the embedded demo, absolute links need ``public_url`` and the ``Host`` header
        needs a check: with neither a public URL nor a trusted-host list, a server would answer
        (and could be led to build links for) any host name.
        """
        if self.embedded or self.public_url or self.trusted_hosts != ["*"]:
            return None
        return (
            "UNMASK_PUBLIC_URL (e.g. https://unmask.example.org) or UNMASK_TRUSTED_HOSTS must be "
            "set for a server database: absolute links are built from the public URL, never "
            "from the request's Host header"
        )

    # Local state of the embedded deployment: SQLite file, blob folder, caches.
    data_dir: Path = Field(Path(".unmask"), description="Folder for embedded-mode state.")

    # Database (SQLAlchemy URL). Embedded default: SQLite under data_dir.
    database_url: str = Field("", description="SQLAlchemy URL; empty = SQLite under data_dir.")
    database_connect_timeout_s: int = Field(
        10,
        ge=1,
        le=300,
        description="How long opening a connection to a server database may take, seconds (a "
        "database that accepts connections but never answers fails requests in seconds).",
    )
    database_tcp_keepalive_s: int = Field(
        30,
        ge=0,
        le=3600,
        description="How long a connection to a server database may be silent before TCP "
        "keepalive probes start, seconds (then every 10 s, 3 unanswered probes; a write "
        "unacknowledged that long fails too): a connection whose network is cut mid-statement "
        "fails after about this plus 30 s instead of hanging for hours. 0 = libpq's and the "
        "operating system's defaults (on Linux: probes after two hours).",
    )
    database_statement_timeout_s: float = Field(
        15.0,
        ge=0,
        le=3600,
        description="Longest one SQL statement of an API request may run on a server database, "
        "waits for locks included, seconds (PostgreSQL statement_timeout); past it the request "
        "is answered 503 with Retry-After and changes nothing. 0 = no limit. Workers, beat, the "
        "CLI and migrations run without it: a migration may rewrite a large table, and a job "
        "phase has its own time limits.",
    )
    sqlite_busy_timeout_s: float = Field(
        30.0,
        gt=0,
        le=600,
        description="Embedded mode (SQLite): how long a transaction waits for another one's "
        "write lock before failing with 'database is locked' (503 with Retry-After), seconds.",
    )

    # Blob store: a local folder (embedded) or an S3-compatible service.
    blob_backend: Literal["local", "s3"] = "local"
    blob_dir: Path | None = Field(None, description="Local blob folder; default data_dir/blobs.")
    s3_endpoint_url: str | None = None
    s3_bucket: str = "unmask"
    s3_region: str = "us-east-1"
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    s3_presign_expiry_s: int = Field(900, description="Presigned URL lifetime, seconds.")
    s3_public_endpoint_url: str | None = Field(
        None, description="S3 endpoint clients reach for presigned URLs; default s3_endpoint_url."
    )
    s3_multipart_threshold_bytes: int = Field(
        64 * 1024 * 1024, description="Uploads at least this large use S3 multipart, bytes."
    )
    s3_multipart_chunksize_bytes: int = Field(
        16 * 1024 * 1024, description="S3 multipart part size, bytes (S3 minimum 5 MiB)."
    )
    s3_connect_timeout_s: float = Field(
        5.0,
        gt=0,
        le=300,
        description="How long opening a connection to the S3 service may take, seconds.",
    )
    s3_read_timeout_s: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="How long one S3 request may wait for the service's next bytes, seconds: a "
        "stalled service fails the request (503 with Retry-After, or a retried job phase) "
        "instead of hanging it.",
    )
    s3_max_attempts: int = Field(
        3,
        ge=1,
        le=10,
        description="Tries of one S3 request after connection errors, timeouts, throttling and "
        "5xx answers (botocore's standard retry mode, with back-off), first try included.",
    )
    public_url: str = Field(
        "",
        description="Base URL clients reach the API at (e.g. https://unmask.example.org); links "
        "the API builds (an upload's complete_url, redirects, badge Markdown) start with it. "
        "Empty = paths without a host. The request's Host header is never echoed. With a server "
        "database, the API refuses to start unless this or trusted_hosts is set.",
    )
    trusted_hosts: list[str] = Field(
        default_factory=lambda: ["*"],
        description='Host header values the API answers (e.g. ["unmask.example.org"]); others '
        'get 400. ["*"] = any (behind a proxy that checks it).',
    )
    blob_public_url: str = Field(
        "", description="Base URL of signed local-blob URLs; empty = file:// URIs."
    )

    # Celery broker. Empty = a filesystem broker under data_dir (embedded mode).
    broker_url: str = ""
    result_backend: str = ""
    celery_eager: bool = Field(False, description="Run tasks in-process (embedded/tests).")
    broker_key_prefix: str = Field(
        "", description="Prefix of every Redis key of the broker (several deployments, one Redis)."
    )

    # Workers (workers/, services/platform/jobs/). Times in seconds.
    work_dir: Path | None = Field(
        None, description="Worker scratch folder (stage cache, job folders); default data_dir/work."
    )
    stage_time_limits_s: dict[str, float] = Field(
        default_factory=dict,
        description='Soft time limit per phase, seconds, e.g. {"train": 86400}; phases not '
        "named use the built-in defaults (services/platform/jobs/phase_queues.py "
        "DEFAULT_STAGE_TIME_LIMITS_S).",
    )
    stage_hard_limit_margin_s: float = Field(
        300.0, gt=0, description="Hard time limit = soft limit + this margin, seconds."
    )
    stage_max_attempts: int = Field(
        3,
        ge=1,
        description=(
            "Runs of one stage (first + retries after lost workers) before failing; retries"
            " after transient errors are not counted here."
        ),
    )
    task_max_retries: int = Field(
        5, ge=0, description="Celery retries of a phase after transient errors (DB/broker/S3)."
    )
    task_retry_backoff_s: float = Field(
        10.0, gt=0, description="First retry delay after a transient error (doubles, max 10 min)."
    )
    heartbeat_interval_s: float = Field(
        15.0, gt=0, description="How often a running stage writes heartbeat and progress."
    )
    stage_stale_after_s: float = Field(
        180.0, gt=0, description="A running stage without heartbeat this long is lost."
    )
    stage_claim_lease_s: float = Field(
        120.0,
        gt=0,
        description="A stage key's cross-host claim lasts this long without a heartbeat (s).",
    )
    stage_claim_heartbeat_s: float = Field(
        20.0, gt=0, description="How often a worker computing a stage renews its claim (s)."
    )
    stage_claim_poll_max_s: float = Field(
        5.0,
        gt=0,
        description="Longest wait between two looks at a stage another worker computes (s).",
    )
    stage_requeue_after_s: float = Field(
        3600.0, gt=0, description="A queued stage whose task was sent this long ago is re-sent."
    )
    # When a verdict cannot be trusted (services/pipeline/trust.py; docs/evaluation.md).
    trust_max_original_eer_percent: float = Field(
        10.0,
        gt=0,
        le=50,
        description="Above this EER (%) on ORIGINAL speech the attacker cannot recognize clear "
        "speech, so its EER on anonymized speech says little (untrustworthy).",
    )
    trust_max_ver_s_percent: float = Field(
        40.0,
        gt=0,
        le=100,
        description="Above this speaker-classification error on validation (VER_S, %) at the "
        "epoch a recognizer uses, it is flagged as under-trained. 40 from "
        "benchmarks/trust_calibration.py (54 runs, two target selections): F1 0.83 with the "
        "still-falling bound; no other bound beat it beyond the runs' spread.",
    )
    challenger: bool = Field(
        True,
        description="Score the challenger in every evaluation: the pretrained GE2E verifier "
        "(Resemblyzer, not trained on the evaluation's data) on the trials of every attack "
        "scenario (ignorant, lazy-informed, semi-informed). When it beats the headline "
        "attacker beyond the paired speaker-bootstrap interval the verdict is not trustworthy; "
        "the ignorant and lazy-informed rows of the verdict are the lower of the trained "
        "attacker's EER and its own. False skips it (its cost: one embedding pass per set).",
    )
    trust_still_falling_ver_s_points: float = Field(
        5.0,
        gt=0,
        description="A recognizer that hit its epochs cap, uses an epoch among its last "
        "UNMASK_TRUST_STILL_FALLING_WINDOW_EPOCHS and whose VER_S fell over them by more than "
        "this many points (%) per epoch (minus the least-squares slope; over 3 epochs, half the "
        "fall from the first to the last) stopped while still improving. 5 with a window of 3 "
        "from benchmarks/outside_attackers.py --trust-caps (both corpora, 3 seeds, 30 judged "
        "runs): recall 0.92 synthetic and 1.00 eSpeak NG, no default-cap run flagged that a "
        "stronger attacker did not beat; every bound from 3 to 10 gave the same decisions.",
    )
    trust_still_falling_window_epochs: int = Field(
        3,
        ge=2,
        description="How many of a recognizer's last epochs the still-falling test fits VER_S's "
        "slope over (2: the last epoch's drop alone, which a noisy VER_S can fake or hide).",
    )
    trust_max_enrollment_leak: float = Field(
        0.2,
        gt=0,
        le=1,
        description="Archive submissions: above this enrollment leak (the share of the gap "
        "between the anonymized trials' similarity to their original utterances and identity "
        "that the anonymized enrollment closes) the enrollment looks un-anonymized.",
    )
    reaper_interval_s: float = Field(
        60.0,
        gt=0,
        description="Period of the reaper (Celery beat; in embedded mode a thread of each worker).",
    )
    outbox_resend_after_s: float = Field(
        5.0,
        gt=0,
        description="An outbox message (next phase, cancel, webhook, archive validation) the "
        "broker did not accept is sent again after this many seconds, by the relay in Celery beat "
        "(in embedded mode a thread of each worker).",
    )

    # Compute.
    device: Literal["auto", "cpu", "cuda"] = "auto"
    num_threads: int = Field(
        0,
        ge=0,
        description="torch intra-op threads of CLI and worker processes; 0 = the CPUs the "
        "process may really use (affinity mask, cgroup CPU quota rounded up). Set it when "
        "several jobs share a machine (e.g. 1 per job).",
    )
    omp_wait_policy: Literal["passive", "active", "unset"] = Field(
        "passive",
        description="How idle OpenMP threads wait (OMP_WAIT_POLICY, set before torch loads "
        "unless already set): passive = sleep (never spin on a shared machine), active = spin, "
        "unset = the runtime's default (libgomp spins a while).",
    )
    dataloader_workers: int = Field(0, description="DataLoader worker processes for training.")
    cache_dir: Path | None = Field(
        None, description="Feature/embedding cache; default data_dir/cache."
    )
    # The VoicePrivacy 2026 attacker (zoo member vpc2026) starts from weights the operator copies
    # onto the machine; nothing is downloaded. Unset: the member is unavailable.
    vpc2026_ssl_model: Path | None = Field(
        None,
        description="Local Hugging Face WavLM-Large folder (config.json + weights) of the "
        "vpc2026 attacker's SSL front end.",
    )
    vpc2026_verifier: Path | None = Field(
        None,
        description="Local SpeechBrain ECAPA-TDNN folder (hyperparams.yaml + "
        "embedding_model.ckpt, 1024 channels, input 1024 = WavLM-Large's hidden size) the "
        "vpc2026 attacker is fine-tuned from.",
    )
    strongest_ecapa: Path | None = Field(
        None,
        description="Local SpeechBrain ECAPA-TDNN folder (hyperparams.yaml + "
        "embedding_model.ckpt, the speechbrain/spkrec-ecapa-voxceleb layout): when set, the "
        "`strongest` zoo adds it, scored as it is, as the attacker `ecapa`.",
    )
    strongest_hf_xvector: Path | None = Field(
        None,
        description="Local Hugging Face speaker-verification folder (config.json naming a "
        "*ForXVector architecture + weights, e.g. microsoft/wavlm-base-plus-sv): when set, the "
        "`strongest` zoo adds it, scored as it is, as the attacker `hf-xvector`.",
    )

    # Anonymizer containers (docs/container-contract.md): engine, sandbox limits per shard run.
    container_engine_url: str = Field(
        "",
        description="Docker Engine API URL (Docker or `podman system service`), e.g. "
        "unix:///run/unmask-podman.sock; empty = DOCKER_HOST or the Docker default.",
    )
    container_memory_mb: int = Field(4096, ge=16, description="Memory limit per container, MiB.")
    container_cpus: float = Field(2.0, gt=0, description="CPU limit per container, cores.")
    container_pids_limit: int = Field(256, ge=8, description="Process/thread limit per container.")
    container_time_limit_s: float = Field(
        1800.0, gt=0, description="Wall-clock limit of one container run (one shard), seconds."
    )
    container_shard_size: int = Field(
        64, ge=1, description="Utterances per container run (a crash loses one shard)."
    )
    container_log_bytes: int = Field(
        65536, ge=1024, description="Container log kept per run (the tail), bytes."
    )
    container_tmpfs_mb: int = Field(
        512, ge=1, description="Size of the tmpfs /tmp (mounted noexec), MiB."
    )
    container_shm_mb: int = Field(64, ge=1, description="Size of /dev/shm per container, MiB.")
    container_user: str = Field("65534:65534", description="uid:gid the container runs as.")
    container_pull: bool = Field(
        True, description="Pull an image that is not present locally (at run time)."
    )
    container_registries: list[str] = Field(
        default_factory=lambda: ["docker.io", "ghcr.io", "quay.io"],
        description=(
            "Registries container images may come from (host[:port], JSON list; `docker.io` for"
            " names without one): a submission naming another is refused (422) and workers pull"
            " from no other. Empty = no container submissions."
        ),
    )

    # Pre-anonymized archives: bounds on what one upload may unpack to.
    archive_max_unpacked_mb: int = Field(20480, ge=1, description="Unpacked size limit, MiB.")
    archive_max_member_mb: int = Field(512, ge=1, description="Per-file size limit, MiB.")
    archive_max_members: int = Field(500_000, ge=1, description="Member (entry) count limit.")
    archive_max_compression_ratio: float = Field(
        100.0, gt=1, description="Declared / compressed size above this is a zip bomb."
    )

    # Security.
    token_hmac_key: str = Field(
        DEV_TOKEN_HMAC_KEY,
        description="Key for HMAC-SHA256 hashing of API tokens; the default is refused outside "
        "the embedded mode (SQLite).",
    )
    allow_dev_token_hmac_key: bool = Field(
        False,
        description="Accept the default token key with a server database (test suites only).",
    )

    # HTTP gateway.
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    max_archive_bytes: int = Field(
        512 * 1024 * 1024,
        description="Largest archive streamed through the API (bytes); larger -> presigned upload.",
    )
    max_presigned_archive_bytes: int = Field(
        50 * 1024 * 1024 * 1024,
        description="Largest archive accepted through presigned (multipart) upload URLs, bytes.",
    )
    upload_part_bytes: int = Field(
        64 * 1024 * 1024, description="Part size of presigned multipart uploads, bytes (>= 5 MiB)."
    )
    artifact_url_expiry_s: int = Field(
        300, description="Lifetime of artifact download links handed out by the API, seconds."
    )
    cpu_pool_processes: int = Field(
        1,
        ge=1,
        le=64,
        description="Child processes per API process doing its CPU-bound work away from the "
        "request handlers: the comparisons' paired bootstrap intervals (results cached in the "
        "blob store) and the plots drawn on request (cached by content).",
    )
    compare_wait_s: float = Field(
        10.0,
        ge=0,
        le=60,
        description="How long a comparison request waits for a paired interval being computed "
        "(seconds; it holds no database session or thread meanwhile); after it the answer "
        "says the interval is still being computed.",
    )
    request_body_timeout_s: float = Field(
        60.0,
        gt=0,
        le=3600,
        description="Longest a request body may take to arrive in all (every route except the "
        "streamed archive uploads, which have upload_max_duration_s), seconds; a body still "
        "arriving after it gets 408, however steadily its bytes trickle in.",
    )
    max_json_body_bytes: int = Field(
        1024 * 1024,
        ge=1024,
        description="Largest request body of every route except the streamed archive uploads "
        "(bytes); larger -> 413 before the body is parsed.",
    )
    # Cost bounds of a job's evaluation config (services/platform/jobs/cost.py): a job above
    # one is a 422. A protocol may override each in its body's `limits` (docs/deploy.md).
    max_job_epochs: int = Field(
        200, ge=1, description="training.epochs of the config and of every zoo attacker, at most."
    )
    max_job_crop_seconds: float = Field(
        10.0,
        gt=0,
        description="training.crop_seconds of the config and of every zoo attacker, at most (s).",
    )
    max_job_attackers: int = Field(8, ge=1, description="Attackers of the zoo, at most.")
    max_job_seeds: int = Field(10, ge=1, description="Entries of `seeds`, at most.")
    max_job_training_work: float = Field(
        20000.0,
        gt=0,
        description="Total training work, at most: entries of `seeds` x trained scenarios x the "
        "sum over attackers of epochs x crop_seconds (crop-seconds per training utterance; "
        "services/platform/jobs/cost.py).",
    )
    max_job_batch_size: int = Field(1024, ge=2, description="training.batch_size, at most.")
    max_job_bootstrap_resamples: int = Field(
        2000,
        ge=0,
        description="metrics.bootstrap_resamples and analyses.srd_representations."
        "bootstrap_resamples, at most.",
    )
    max_job_size_study_samples: int = Field(
        50, ge=1, description="analyses.size_study.samples, at most."
    )
    max_job_size_study_target_seeds: int = Field(
        10, ge=1, description="Entries of analyses.size_study.target_seeds, at most."
    )
    max_job_size_study_counts: int = Field(
        50,
        ge=1,
        description="Entries of each of analyses.size_study.speaker_counts, enrollment_counts "
        "and trial_counts, at most.",
    )
    max_job_phone_units: int = Field(
        1024, ge=2, description="analyses.srd_representations.phone_units, at most."
    )
    max_job_synthetic_speakers: int = Field(
        2000, ge=6, description="synthetic.n_speakers, at most."
    )
    max_job_synthetic_utts_per_speaker: int = Field(
        500, ge=4, description="synthetic.utts_per_speaker, at most."
    )
    quota_submissions_per_day: int = Field(
        50, description="Submissions a team may create per rolling 24 h (rejected not counted)."
    )
    quota_jobs_per_day: int = Field(
        100, description="Jobs a team may create per rolling 24 h (failed/cancelled not counted)."
    )
    quota_concurrent_jobs: int = Field(4, description="Queued + running jobs a team may have.")
    quota_archive_storage_bytes: int = Field(
        20 * 1024**3,
        gt=0,
        description="Archive bytes a team may hold (bytes): stored archives, open presigned "
        "uploads (declared size) and archives rejected in the last 24 h.",
    )

    min_free_disk_bytes: int = Field(
        1024**3,
        ge=0,
        description="Readiness reports `not ready: disk` when a folder the API writes to (data "
        "dir, local blob folder, temporary folder of spooled uploads) has less free space than "
        "this, bytes (0 = no check).",
    )

    # Archive uploads: slow clients, concurrency, abandoned uploads, stuck validations.
    upload_read_timeout_s: float = Field(
        30.0, gt=0, description="Longest wait for the next chunk of a streamed upload, seconds."
    )
    upload_max_duration_s: float = Field(
        3600.0, gt=0, description="Longest a streamed upload may take in all, seconds."
    )
    max_concurrent_uploads_per_team: int = Field(
        4,
        ge=1,
        description="Streamed uploads one team (or, for signed blob PUTs, one client address) "
        "may have in progress at once, per API process.",
    )
    upload_abort_grace_s: float = Field(
        300.0,
        ge=0,
        description="Seconds after its ticket expired before the reaper aborts an unfinished "
        "presigned upload.",
    )
    archive_validation_timeout_s: float = Field(
        3600.0,
        gt=0,
        description="An archive still validating this long after upload is rejected by the "
        "reaper, seconds.",
    )

    # Outgoing webhooks (services/platform/webhooks/, workers/webhooks.py). Times in seconds.
    webhook_timeout_s: float = Field(10.0, gt=0, description="HTTP timeout of one delivery try.")
    webhook_max_attempts: int = Field(
        8, ge=1, description="Tries of one webhook delivery before it is marked failed."
    )
    webhook_retry_backoff_s: float = Field(
        10.0, gt=0, description="Delay before the first webhook retry (doubles, max 1 h)."
    )
    webhook_sweep_interval_s: float = Field(
        30.0, gt=0, description="Period of the beat task that sends overdue webhook deliveries."
    )

    # Every outbound call to a URL a user gave (services/net/policy.py).
    outbound_allow_private_hosts: bool = Field(
        False,
        # The first name found wins; the second is this setting's old name (when it governed
        # webhooks only), still read so that existing deployments keep working.
        validation_alias=AliasChoices(
            "UNMASK_OUTBOUND_ALLOW_PRIVATE_HOSTS", DEPRECATED_ALLOW_PRIVATE_HOSTS_VARIABLE
        ),
        description="Allow every outbound call to a URL a user gave (webhook URLs, HTTP-service "
        "anonymizers, which may then also use plain http, OpenID Connect issuers' key sets) to "
        "reach loopback/private addresses (tests, single-host setups); services/net/policy.py.",
    )

    # OpenID Connect trusted submitters (services/platform/identity/oidc.py, trusted.py).
    oidc_issuers: dict[str, Literal["github", "gitlab"]] = Field(
        default_factory=_default_oidc_issuers,
        description="ID-token issuers trusted submitters may name, each with the claim profile "
        'it speaks (JSON, e.g. {"https://gitlab.example.org": "gitlab"}).',
    )
    oidc_audience: str = Field(
        "",
        description="The `aud` an ID token must carry; empty = UNMASK_PUBLIC_URL without a "
        "trailing slash (what `unmask submit` asks for by default).",
    )
    oidc_token_ttl_s: int = Field(
        900, ge=60, le=3600, description="Lifetime of a token exchanged for an ID token, seconds."
    )
    oidc_leeway_s: int = Field(
        60, ge=0, le=300, description="Clock skew allowed on an ID token's exp/nbf/iat, seconds."
    )
    oidc_max_id_token_bytes: int = Field(
        8192, ge=1024, le=65536, description="Largest ID token accepted for an exchange, bytes."
    )
    oidc_key_set_ttl_s: float = Field(
        3600.0, gt=0, description="How long an issuer's fetched key set (JWKS) is kept, seconds."
    )

    # Anonymizers served over HTTP (services/anonymizers/kinds/service.py).
    service_secret_key: str = Field(
        "",
        description="Fernet key (32 url-safe base64 bytes) encrypting service submissions' "
        "signing secrets and credential headers at rest; empty = derived from "
        "UNMASK_TOKEN_HMAC_KEY. Changing it makes stored service secrets unreadable.",
    )
    service_timeout_s: float = Field(
        30.0, gt=0, description="Connect/read timeout of one call to an anonymizer service."
    )
    service_max_attempts: int = Field(
        4, ge=1, le=10, description="Tries per utterance (5xx, 429, 503, timeouts are retried)."
    )
    service_concurrency: int = Field(
        4, ge=1, le=64, description="Requests in flight to one anonymizer service per job."
    )

    # Failed authentication (bad API tokens, bad page logins), per client address (api/).
    auth_max_failures: int = Field(
        20,
        ge=0,
        description=(
            "Failed authentications a client address may make within auth_failure_window_s;"
            " past it every request of that address gets 429 until the window passes"
            " (0 = no limit)."
        ),
    )
    auth_failure_window_s: float = Field(
        60.0, gt=0, description="Window of the failed-authentication limit, seconds."
    )

    # Server-rendered pages (api/pages/).
    page_session_max_age_s: int = Field(
        12 * 3600, ge=60, description="Lifetime of the pages' login cookie, seconds."
    )

    def oidc_expected_audience(self) -> str:
        """The ``aud`` an exchanged ID token must carry (empty when neither
        ``oidc_audience`` nor ``public_url`` is set: every exchange is then refused)."""
        return self.oidc_audience or self.public_url.rstrip("/")

    def resolved_service_secret_key(self) -> str:
        """The Fernet key of service secrets: ``service_secret_key`` or one derived from
        ``token_hmac_key``."""
        if self.service_secret_key:
            return self.service_secret_key
        digest = hashlib.sha256(b"unmask-service-secrets\x1f" + self.token_hmac_key.encode())
        return base64.urlsafe_b64encode(digest.digest()).decode()

    def resolved_database_url(self) -> str:
        """The database URL, defaulting to an SQLite file inside ``data_dir``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'unmask.db').resolve()}"

    def resolved_blob_dir(self) -> Path:
        """The local blob folder (embedded mode)."""
        return self.blob_dir if self.blob_dir is not None else self.data_dir / "blobs"

    def resolved_work_dir(self) -> Path:
        """The worker's local scratch folder (stage cache and per-job folders)."""
        return self.work_dir if self.work_dir is not None else self.data_dir / "work"

    def resolved_cache_dir(self) -> Path:
        """The folder for cached features and embeddings."""
        return self.cache_dir if self.cache_dir is not None else self.data_dir / "cache"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once from the environment)."""
    return Settings()


def prepare_thread_environment() -> dict[str, str]:
    """Before torch loads: ``OMP_WAIT_POLICY`` from ``omp_wait_policy`` and ``OMP_NUM_THREADS``
    from ``num_threads`` (:func:`services.threads.prepare_openmp_environment`; variables the user
    set are kept). Invalid settings fall back to the defaults here: the entry point reports them
    when it reads the settings (the CLI: one line, exit code 2)."""
    from pydantic import ValidationError

    from services.threads import prepare_openmp_environment

    try:
        settings = Settings()
        threads, policy = settings.num_threads, settings.omp_wait_policy
    except (ValidationError, ValueError):
        fields = Settings.model_fields
        threads, policy = fields["num_threads"].default, fields["omp_wait_policy"].default
    return prepare_openmp_environment(num_threads=threads, wait_policy=policy)


def apply_thread_settings(settings: Settings | None = None) -> int:
    """Set torch's intra-op threads from ``num_threads`` (``UNMASK_NUM_THREADS``; 0 = the CPUs
    this process may really use, :func:`services.threads.available_cpus`); returns the count.

    Every entry point that runs models calls this (CLI, Celery worker processes): OpenMP threads
    that outnumber the free cores spin at barriers, which made 1-thread-per-job sharing of a
    2-core machine 20x slower when the variable was silently ignored. The wait policy is set
    earlier, before torch loads (:func:`services.threads.prepare_openmp_environment`).
    """
    import sys

    from services.threads import choose_threads

    requested = (settings or get_settings()).num_threads
    threads = choose_threads(requested)
    if requested == 0 and "torch" not in sys.modules:
        return threads  # torch is not loaded: it will start from OMP_NUM_THREADS (set earlier)
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads
