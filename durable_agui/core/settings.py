"""Configuration, read from ``DURABLE_AGUI_*`` environment variables (pydantic-settings)."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Literal

import httpx
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from durable_agui.core.agent_queues import task_queue_problem
from durable_agui.core.decision_links import MIN_KEY_BYTES

MIN_RETENTION_DAYS = 1 / 86_400
"""The shortest ``event_retention_days`` but 0: one second."""


class Settings(BaseSettings):
    """Every setting the API, the worker and the CLI read.

    Each field is also the environment variable ``DURABLE_AGUI_<FIELD>``, for example
    ``DURABLE_AGUI_TEMPORAL_ADDRESS=temporal:7233``.
    """

    # An empty variable counts as unset (compose passes ``${VAR:-}`` through as "").
    model_config = SettingsConfigDict(
        env_prefix="DURABLE_AGUI_", extra="ignore", env_ignore_empty=True
    )

    temporal_address: str = "127.0.0.1:7233"
    """``host:port`` of the Temporal frontend."""
    temporal_namespace: str = "default"
    task_queue: str = "durable-agui"
    """Where threads' workflows run. Each agent's turns run on ``<task_queue>.agent.<name>``,
    polled only by workers that serve that agent (``core/agent_queues.py``); at most 929
    characters, so every agent's queue is a valid Temporal name."""
    worker_check_seconds: float = Field(default=5.0, ge=0, le=3600, allow_inf_nan=False)
    """How long the API trusts its answer to "does a worker serve this agent?" (Temporal's
    ``DescribeTaskQueue`` of the agent's queue) before it asks again; a run for an agent no
    worker serves is refused with 503 ``NoWorkerForAgent``. ``0``: no check; at most 3,600."""
    temporal_ui_url: str = "http://127.0.0.1:8233"
    """Base URL of the Temporal Web UI, used for links to a thread's workflow."""

    data_dir: Path = Path("./data")
    """Root of local state: ``sessions/`` (the ``file`` session store) and the dev server's
    SQLite file."""

    session_store: Literal["file", "postgres", "s3"] = "file"
    """Where threads' messages live (``sessions/store.py``): ``file`` under ``data_dir``;
    ``postgres`` at ``postgres_url``, for several workers and API replicas; ``s3`` in
    ``s3_bucket`` (Strands ``S3SessionManager``). Workers and API must use the same one."""
    postgres_url: str | None = None
    """SQLAlchemy URL of the ``postgres`` store: ``postgresql+psycopg://user:pass@host:5432/db``."""
    postgres_pool_size: int = Field(default=5, ge=1)
    """Connections each process keeps to PostgreSQL (as many again may open under load)."""
    postgres_timeout_ms: int = Field(default=3000, ge=100)
    """Longest one session-store call may wait for a connection, a lock or a statement (ms).
    Strands writes the session from the worker's event loop, so this must stay under the
    activities' 5 s heartbeat timeout: a stalled database then fails one turn (retried), not
    every turn on the worker."""
    postgres_migrate: bool = True
    """Bring the schema up to date on first use (Alembic, one process at a time). Set false
    to run ``durable-agui migrate`` yourself, for example from a deploy job."""
    s3_bucket: str | None = None
    s3_prefix: str = ""
    s3_region: str | None = None
    s3_endpoint_url: str | None = None
    """For S3-compatible servers (MinIO and the like); credentials come from the AWS chain
    (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, profiles, instance roles)."""

    agents: str | None = None
    """Import path of the agents to serve: ``module`` (its ``AGENTS``, else every
    ``durable_agui.AgentDefinition`` it defines) or ``module:attribute``; unset: the demo
    agent. The API must load every agent it answers for; a worker may serve some of them
    (its agents' turns come to it alone: ``core/agent_queues.py``)."""

    model: str = "offline"
    """Model of agents that name none: ``offline``, ``bedrock:<model-id>``, ``anthropic:<model-id>``,
    ``openai:<model-id>`` (with ``OPENAI_BASE_URL`` for compatible servers) or
    ``ollama:<model-id>`` (with ``OLLAMA_HOST``)."""
    offline_first_chunk_delay_ms: float = 0.0
    offline_chunk_delay_ms: float = 0.0

    api_host: str = "127.0.0.1"
    api_port: int = 8000

    auth: Literal["none", "api_key", "jwt"] = "none"
    """``none`` only on a loopback ``api_host``; ``api_key``: ``Authorization: Bearer <key>``
    (or ``X-API-Key``); ``jwt``: bearer JWTs, principal = ``sub``."""
    api_keys: dict[str, str] = Field(default_factory=dict)
    """API key -> principal name, as JSON: ``DURABLE_AGUI_API_KEYS='{"k3y": "alice"}'``."""
    jwt_key: str | None = None
    """Shared secret (HS*) or PEM public key (RS*/ES*) that signs the JWTs."""
    jwt_jwks_url: str | None = None
    """Where to fetch the signing keys instead (a JWKS document), cached for 5 minutes."""
    jwt_algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256", "HS256"])
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    approver_claims: list[str] = Field(default_factory=lambda: ["email"])
    """JWT claims the API passes on with every decision, for approval policies that compare
    approvers by a claim (``ApprovalRule.identity_claim``), as JSON: ``'["email"]'``."""
    codec_principals: list[str] = Field(default_factory=list)
    """Principals allowed to use ``/codec`` (it decrypts every thread's payloads: the
    Temporal UI's operators), as JSON: ``'["ops"]'``. Unused with ``auth=none``."""

    max_request_bytes: int = Field(default=1_000_000, ge=10_000, le=1_500_000)
    """Largest request body the API takes (413 above). A run's new input travels through
    Temporal history, whose payloads must stay under about 2 MB (hence at most 1.5 MB)."""

    max_messages_per_run: int = 1000
    """Messages one RunAgentInput may carry (its whole transcript); 413 above."""
    max_tools_per_run: int = 128
    """Frontend tools one run may declare; 413 above."""
    max_tools_bytes: int = Field(default=262_144, ge=1_000, le=262_144)
    """UTF-8 bytes of one run's tool declarations (names, descriptions, schemas); the thread
    keeps the last ones, so they count toward its bounded state; 413 above."""
    max_tool_result_bytes: int = Field(default=262_144, ge=1_000, le=262_144)
    """Largest single tool result (UTF-8 bytes of its content and error); 413 above."""
    max_state_bytes: int = Field(default=65_536, ge=2, le=262_144)
    """UTF-8 bytes of the ``state`` one run may send (it travels in the run's Temporal
    update and the turn's input); 413 above."""
    max_thread_state_bytes: int = Field(default=262_144, ge=2, le=4_194_304)
    """UTF-8 bytes of a thread's stored shared state as a whole, after a run's ``state`` is
    merged over it (every turn streams it whole); 413 ``StateTooLarge`` for a run that would
    pass it. At least ``max_state_bytes``."""
    max_context_bytes: int = Field(default=65_536, ge=2, le=262_144)
    """UTF-8 bytes of the ``context`` entries one run may send (they reach the model with
    the turn's system prompt); 413 above."""

    max_media_bytes: int = Field(default=5_000_000, ge=1_000, le=50_000_000)
    """Largest image, audio, video or document one user content part may carry (decoded
    bytes), inline or fetched; 413 above. Inline data also counts toward
    ``max_request_bytes`` (as base64, 4/3 of its size)."""
    media_fetch_hosts: list[str] = Field(default_factory=list)
    """Hosts whose URL media sources a turn fetches, as JSON: ``'["cdn.example.com"]'``
    (an entry ``host:port`` allows that port only). Empty (the default): fetching is off and
    a URL source is refused with 422. Only ``https``, except for loopback hosts."""
    media_fetch_timeout_s: float = Field(default=10.0, gt=0, le=60)
    """Longest one media fetch may take, redirects included (seconds)."""

    answer_timeout_s: float = 24 * 3600
    """How long a frontend call or approval waits for its answer before it is closed with an
    explicit "no answer" result (seconds). Applies to threads started afterwards."""

    turns_per_workflow_run: int = 100
    """A thread continues as new (a fresh workflow history) after this many turns, at its
    next idle moment; it also does whenever Temporal suggests it."""

    history_bound_bytes: int = Field(default=10 * 1024 * 1024, ge=100_000, le=40_000_000)
    """A thread continues as new once its history holds this many bytes, even where the
    server suggests it later (Temporal's default suggestion is at 4 MiB, its hard limit
    50 MB, where it terminates the workflow); while its history is past the bound, a busy
    thread takes no new run until its queue has drained. Applies to threads started
    afterwards."""

    stored_payload_bytes: int = Field(default=32_768, ge=0, le=2_000_000)
    """Temporal payloads of at least this many bytes (a run's request carrying a long
    message, the turn input that passes it on, a large state) are stored once in the
    session store, and the thread's history holds a reference (Temporal's external storage,
    ``sessions/payloads.py``); 0 keeps every payload in the history. Every process that
    talks to Temporal reads references whatever this says."""

    search_attributes: bool = True
    """Threads keep the ``ThreadStatus``, ``AgentName`` and ``PendingToolCalls`` search
    attributes current. ``durable-agui dev`` registers them; on another server register
    them first (``temporal operator search-attribute create``) or set this to false."""

    payload_encryption_key: str | None = None
    """Base64 of 32 random bytes (``python -c "from durable_agui.core.codec import new_key;
    print(new_key())"``): Temporal then stores every payload encrypted (AES-256-GCM), and
    the API serves ``/codec`` for the Temporal UI. Workers and API need the same key."""

    max_cached_workflows: int = 1000
    """Workflows a worker keeps in memory between tasks; 0 replays history on every task."""

    max_concurrent_activities: int = Field(default=100, ge=1)
    """Activities (turns, answers written, webhooks) a worker runs at once; a worker that
    runs as many asks for no more (Temporal's ``max_concurrent_activities``)."""

    stream_batch_interval_ms: int = 50
    """How long an activity buffers AG-UI events before appending them to the event log
    (or publishing them to the workflow's stream)."""
    event_log: Literal["store", "workflow"] = "store"
    """Where threads started from now on keep their AG-UI events: ``store``, the event log
    beside the session store (a SQLite file in the file store's directory, a table in the
    PostgreSQL database; ``durable_agui.event_store``); ``workflow``, the thread's workflow
    stream in Temporal's history (what the S3 store always uses). Threads keep the one they
    started with."""
    event_log_poll_ms: int = Field(default=10, ge=1, le=1000)
    """How often an API that follows a run checks the SQLite event log for new events
    (milliseconds; PostgreSQL notifies instead, and this bounds a reread after a lost
    notification)."""
    event_retention_days: float = Field(default=30, ge=0, le=3650, allow_inf_nan=False)
    """How long the event log keeps a finished run's events (days, fractions allowed; at
    most 3,650): a run whose ``RUN_FINISHED`` or ``RUN_ERROR`` is older is pruned by the
    workers (``durable_agui.event_store.retention``), and a reconnect to it gets 410
    ``RunEventsPruned``. The thread's messages and its Temporal history stay. ``0``: keep
    every run's events for ever (no pruning); else at least one second
    (``MIN_RETENTION_DAYS``)."""
    stream_poll_cooldown_ms: int = 20
    """Pause between two stream polls of one SSE subscriber when it is caught up."""

    thread_ttl_s: float | None = Field(default=None, gt=0)
    """An idle thread (no run, nothing waiting for a person) expires this long after its
    last run ended (seconds): its workflow completes. Unset (the default): threads never
    expire. Applies to threads started afterwards."""
    thread_ttl_removes_session: bool = False
    """On expiry, remove the session from the store too (the thread is gone for good);
    false (the default): keep it, and a later run with the same ``threadId`` continues it."""

    webhook_url: str | None = None
    """Where the workers POST ``run.finished`` and ``thread.waiting`` deliveries (http or
    https), signed with ``webhook_secret``; unset (the default): no webhooks. Applies to
    threads started afterwards (and to every delivery's URL at the time it is sent)."""
    webhook_secret: SecretStr | None = None
    """The HMAC-SHA256 key of the ``X-Durable-Agui-Signature`` header; required with
    ``webhook_url``."""
    decision_link_key: SecretStr | None = None
    """The HMAC-SHA256 key (at least 32 bytes) that signs decision links: each waiting
    approval in ``thread.waiting`` deliveries and ``GET /threads/{id}`` then carries
    ``decisionLinks``, URLs that decide it with no other credential
    (``durable_agui.core.decision_links``). Unset (the default): no links, and
    ``/decisions/...`` answers 404. Workers and API need the same key; requires
    ``public_url``."""
    decision_link_previous_key: SecretStr | None = None
    """The key ``decision_link_key`` replaces: links it signed keep working until
    ``decision_link_previous_key_until`` (a key rotation loses no link already mailed)."""
    decision_link_previous_key_until: datetime | None = None
    """When ``decision_link_previous_key`` stops verifying (ISO 8601, with a time zone);
    required with it. Links expire with their approvals anyway: the longest answer timeout
    after the rotation is enough."""
    public_url: str | None = None
    """Where people reach this API, with the prefix it is mounted at
    (``https://agents.example.com/ai``): the base of decision links."""
    webhook_attempts: int = Field(default=6, ge=1, le=20)
    """Attempts per delivery, 1 s apart then doubling (at most 60 s): 6 take about 30 s.
    A delivery that fails them all is recorded on the thread (``webhookFailures``)."""

    pending_tool_call_ids: bool = False
    """``RUN_FINISHED``'s success outcome names the frontend calls still waiting
    (``pendingToolCallIds``). False (the default): the key is left out, which AG-UI 1.0
    allows (an absent list means the client derives the waiting calls from the stream: the
    run's frontend ``TOOL_CALL_START``s with no ``TOOL_CALL_RESULT``) and which every client
    reads; the calls stay pending in the thread either way. Set true for AG-UI 1.0 clients
    that read the list; clients on the TypeScript ``@ag-ui/core`` 0.0.x (the CopilotKit
    runtime 1.61, the AG-UI Dojo) fail the whole run on it, as their success outcome is a
    closed object."""

    subagent_events: bool = True
    """Runs stream AG-UI 1.0's ``SUBAGENT_STARTED`` / ``SUBAGENT_FINISHED`` /
    ``SUBAGENT_ERROR`` (docs "Sub-agents"). False: every stream leaves them out (the event
    log keeps them), for clients on the TypeScript ``@ag-ui/core`` 0.0.x (the CopilotKit
    runtime 1.61, the AG-UI Dojo), whose event union has no such type and fails the run;
    a sub-agent's own events keep their ``subagentRunId``, a field those clients pass."""

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Records below this level are not written (serving commands)."""
    log_format: Literal["auto", "json", "text"] = "auto"
    """``json``: one JSON object per line; ``text``: one line of text; ``auto``: JSON
    unless standard error is a terminal. Every line names its thread, run and trace."""
    metrics_address: str | None = None
    """``host:port`` where this process serves its Prometheus metrics (``/metrics``;
    Temporal's runtime metrics included), for example ``127.0.0.1:9464``; unset (the
    default): none. The worker and the API of one machine need one each."""
    trace_content: bool = False
    """Let spans carry message contents (prompts, answers, tool arguments and results, as
    Strands records them). Off (the default): every content attribute is redacted."""

    @field_validator("task_queue")
    @classmethod
    def _agent_queues_fit(cls, task_queue: str) -> str:
        problem = task_queue_problem(task_queue)
        if problem is not None:
            raise ValueError(f"the task queue {problem}")
        return task_queue

    @field_validator("event_retention_days")
    @classmethod
    def _retention_of_a_second_or_more(cls, days: float) -> float:
        # Below a microsecond the pruner's timedelta is 0, which it refuses: the worker
        # stopped with a traceback after the settings had been taken.
        if 0 < days < MIN_RETENTION_DAYS:
            raise ValueError(
                f"{days:g} days is under a second: 0 keeps every run's events, else at least "
                f"{MIN_RETENTION_DAYS:.7f} days (one second)"
            )
        return days

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_in_capitals(cls, level: object) -> object:
        return level.upper() if isinstance(level, str) else level

    @field_validator("metrics_address")
    @classmethod
    def _host_and_port(cls, address: str | None) -> str | None:
        if address is not None:
            host, _, port = address.rpartition(":")
            if not host or "/" in host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{address!r} is not host:port (for example 127.0.0.1:9464)")
        return address

    @property
    def metrics_endpoint(self) -> tuple[str, int] | None:
        """``metrics_address`` as ``(host, port)`` (brackets of an IPv6 host removed)."""
        if self.metrics_address is None:
            return None
        host, _, port = self.metrics_address.rpartition(":")
        return host.strip("[]"), int(port)

    @field_validator("webhook_url")
    @classmethod
    def _webhook_is_http(cls, url: str | None) -> str | None:
        if url is not None and (
            not url.startswith(("http://", "https://")) or httpx.URL(url).host == ""
        ):
            raise ValueError(f"{url!r} is not an http(s) URL")
        return url

    @model_validator(mode="after")
    def _thread_state_holds_a_run_state(self) -> Settings:
        if self.max_thread_state_bytes < self.max_state_bytes:
            raise ValueError(
                "DURABLE_AGUI_MAX_THREAD_STATE_BYTES must be at least DURABLE_AGUI_MAX_STATE_BYTES"
            )
        return self

    @model_validator(mode="after")
    def _webhook_has_a_secret(self) -> Settings:
        if self.webhook_url is not None and self.webhook_secret is None:
            raise ValueError("DURABLE_AGUI_WEBHOOK_URL needs DURABLE_AGUI_WEBHOOK_SECRET")
        return self

    @field_validator("public_url")
    @classmethod
    def _public_url_is_a_base(cls, url: str | None) -> str | None:
        """An http(s) URL with a host, and no credentials, query or fragment: a link's token
        is appended to its path, and the whole URL goes out in every delivery."""
        if url is not None and not _is_base_url(url):
            raise ValueError(
                f"{url!r} is not a base URL: http(s)://host[:port][/prefix], with no "
                "credentials, query or fragment"
            )
        return url

    @model_validator(mode="after")
    def _decision_links_have_a_base(self) -> Settings:
        key = self.decision_link_key
        if key is None:
            return self
        if len(key.get_secret_value().strip().encode()) < MIN_KEY_BYTES:
            raise ValueError(
                f"DURABLE_AGUI_DECISION_LINK_KEY must be at least {MIN_KEY_BYTES} bytes"
            )
        if self.public_url is None:
            raise ValueError("DURABLE_AGUI_DECISION_LINK_KEY needs DURABLE_AGUI_PUBLIC_URL")
        previous = self.decision_link_previous_key
        if previous is not None:
            if len(previous.get_secret_value().strip().encode()) < MIN_KEY_BYTES:
                raise ValueError(
                    f"DURABLE_AGUI_DECISION_LINK_PREVIOUS_KEY must be at least {MIN_KEY_BYTES} "
                    "bytes"
                )
            until = self.decision_link_previous_key_until
            if until is None or until.tzinfo is None:
                raise ValueError(
                    "DURABLE_AGUI_DECISION_LINK_PREVIOUS_KEY needs "
                    "DURABLE_AGUI_DECISION_LINK_PREVIOUS_KEY_UNTIL, a time with its zone "
                    "(2027-01-31T00:00:00Z)"
                )
        return self

    def decision_link_previous_keys(self, now: datetime) -> tuple[str, ...]:
        """The previous decision-link keys that still verify at ``now``."""
        previous, until = self.decision_link_previous_key, self.decision_link_previous_key_until
        if previous is None or until is None or now >= until:
            return ()
        return (previous.get_secret_value(),)

    @field_validator("media_fetch_hosts")
    @classmethod
    def _lowercase_hosts(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if not host or "/" in host or "@" in host or host != host.strip():
                raise ValueError(f"{host!r} is not a host name (host or host:port)")
        return [host.lower() for host in hosts]

    @property
    def sessions_dir(self) -> Path:
        return self.data_dir / "sessions"


def _is_base_url(url: str) -> bool:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return False
    return (
        parsed.scheme in ("http", "https")
        and bool(parsed.host)
        and 0 < (parsed.port or 80) < 65536
        and not (parsed.userinfo or "?" in url or "#" in url)
    )


@lru_cache
def get_settings() -> Settings:
    """The process-wide settings (read once from the environment)."""
    return Settings()
