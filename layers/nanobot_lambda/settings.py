"""Configuration: one pydantic model family, built once per container from the environment.

Every function reads the same variable names (a public contract, see README). Secret values may
be given directly (`TELEGRAM_BOT_TOKEN`) or as a reference the function reads once at start-up:
`TELEGRAM_BOT_TOKEN_PARAM` (an SSM parameter name, decrypted) or
`TELEGRAM_BOT_TOKEN_SECRET_ARN` (a Secrets Manager secret). A direct value wins over a reference.
Reading a reference is an adapter's job: the caller passes the reader in (`fetch`; the handlers
give `adapters.aws.secrets.fetch_secret`, the command line its own), and without one a
reference is a configuration error rather than a silent call to AWS.

Each function validates only what it needs (`WebhookSettings`, `AgentSettings`,
`SchedulerSettings`), so the webhook does not fail for want of an LLM key. `from_env` returns
the class it is called on, so a misspelt setting fails `mypy --strict` (tests/typecheck/).
Nothing below the handlers reads `os.environ`: the settings object is passed down.

This module sits between the adapters and the core (import-linter's layers contract): the
adapters read their settings classes, and it imports nothing but the core and pydantic.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import ClassVar, Literal, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.approvals import ApprovalPolicy, Policy, RulesError, parse_rules
from nanobot_lambda.core.errors import ConfigError
from nanobot_lambda.core.model_choice import ModelPreset, parse_presets
from nanobot_lambda.core.reactions import telegram_reaction
from nanobot_lambda.core.remote_tools import SECRETS_PREFIX, ServerAccess
from nanobot_lambda.core.spend import SpendLimits

# Secret fields that may come from SSM Parameter Store or Secrets Manager instead of a value.
SECRET_VARIABLES = (
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_SECRET_TOKEN",
    "LLM_API_KEY",
    "TRANSCRIPTION_API_KEY",
    "WEB_SEARCH_API_KEY",
)
# How a secret variable names where its value is kept, and what kind of store that is.
SECRET_REFERENCES = (("_PARAM", "param"), ("_SECRET_ARN", "secret"))
SECRET_REFERENCE_SUFFIXES = tuple(suffix for suffix, _ in SECRET_REFERENCES)


SecretFetcher = Callable[[str, str], str]
"""(kind, reference) -> value, where kind is "param" or "secret"."""


def resolve_secret_references(
    environ: Mapping[str, str],
    names: Iterable[str] = SECRET_VARIABLES,
    fetch: SecretFetcher | None = None,
) -> dict[str, str]:
    """Return the environment with the `X_PARAM` / `X_SECRET_ARN` references of `names` read
    with `fetch`; with no `fetch`, a reference is a ConfigError naming it.

    Empty values count as unset, except ALLOW_FROM where empty means "nobody".
    """
    resolved = {key: value for key, value in environ.items() if value != ""}
    for name in names:
        if resolved.get(name):
            continue  # a direct value wins over a reference
        for suffix, kind in SECRET_REFERENCES:
            reference = resolved.get(name + suffix)
            if reference:
                if fetch is None:
                    raise ConfigError(
                        f"{name}{suffix}: secret references are not read here; give {name} itself"
                    )
                try:
                    resolved[name] = fetch(kind, reference).strip()
                except Exception as error:
                    # The reference (a name or ARN) is not secret; the error type is enough.
                    raise ConfigError(
                        f"{name}{suffix}: could not read {reference!r} ({type(error).__name__})"
                    ) from None
                break
    if "ALLOW_FROM" in environ:
        resolved["ALLOW_FROM"] = environ["ALLOW_FROM"]  # empty is meaningful: nobody
    return resolved


class _Settings(BaseModel):
    """Base for the per-function settings: fields are addressed by their environment names."""

    # defer_build: a function builds the validator of its own settings class only, when
    # from_env first validates, not those of the other functions' classes at import.
    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=False, defer_build=True)

    purpose: ClassVar[str] = "this function"

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, fetch: SecretFetcher | None = None
    ) -> Self:
        """The settings of `environ` (default: the process environment), secret references
        read with `fetch`; ConfigError naming each variable that is missing or invalid."""
        environ = os.environ if environ is None else environ
        # Only the secrets this function declares are fetched: no needless SSM calls at start-up.
        declared = {field.alias or name for name, field in cls.model_fields.items()}
        values = resolve_secret_references(environ, declared.intersection(SECRET_VARIABLES), fetch)
        try:
            return cls.model_validate(values)
        except ValidationError as error:
            raise ConfigError(_describe(error, cls.purpose)) from None

    def secret_values(self) -> list[str]:
        """The values of every secret field that is set: what the logs and tools redact."""
        values = [getattr(self, name) for name in type(self).model_fields]
        return [value.get_secret_value() for value in values if isinstance(value, SecretStr)]


def _describe(error: ValidationError, purpose: str) -> str:
    problems = []
    for item in error.errors():
        variable = ".".join(str(part) for part in item["loc"]) or "environment"
        if item["type"] == "missing":
            problems.append(f"{variable} is not set")
        else:
            # item["msg"] never holds the input value, so a bad secret is not echoed here.
            problems.append(f"{variable}: {item['msg']}")
    return f"Invalid configuration for {purpose}: " + "; ".join(problems)


class TelegramBotSettings(_Settings):
    telegram_bot_token: SecretStr = Field(alias="TELEGRAM_BOT_TOKEN", min_length=1)
    telegram_api_base: str = Field(
        default="https://api.telegram.org", alias="TELEGRAM_API_BASE", pattern=r"^https?://\S+$"
    )

    @field_validator("telegram_api_base")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")


class AllowListSettings(_Settings):
    allow_from: AllowList = Field(
        alias="ALLOW_FROM",
        description="Comma-separated Telegram user ids and/or usernames; * for everyone; "
        "empty for nobody.",
    )

    @field_validator("allow_from", mode="before")
    @classmethod
    def _parse_allow_list(cls, value: object) -> AllowList:
        if isinstance(value, AllowList):
            return value
        if not isinstance(value, str):
            raise ValueError("must be a comma-separated string")
        return AllowList.parse(value)


class OwnerSettings(AllowListSettings):
    # The owner: told when a spending limit is reached. Default: the first user id in ALLOW_FROM.
    owner_id: int | None = Field(default=None, alias="OWNER_ID", gt=0)

    @property
    def owner(self) -> int | None:
        return self.owner_id or self.allow_from.first_user_id


class SpendSettings(_Settings):
    """Spending limits in US dollars, by what the usage counters record (litellm's prices;
    calls of a model without a price cost nothing here). Unset: no limit. The first two hold for
    all chats together, the PERSON ones for each chat (a person's private chat, or a group)."""

    spend_limit_daily_usd: Decimal | None = Field(default=None, alias="SPEND_LIMIT_DAILY_USD", gt=0)
    spend_limit_monthly_usd: Decimal | None = Field(
        default=None, alias="SPEND_LIMIT_MONTHLY_USD", gt=0
    )
    spend_limit_person_daily_usd: Decimal | None = Field(
        default=None, alias="SPEND_LIMIT_PERSON_DAILY_USD", gt=0
    )
    spend_limit_person_monthly_usd: Decimal | None = Field(
        default=None, alias="SPEND_LIMIT_PERSON_MONTHLY_USD", gt=0
    )

    @property
    def spend_limits(self) -> SpendLimits:
        return SpendLimits(
            daily=self.spend_limit_daily_usd,
            monthly=self.spend_limit_monthly_usd,
            person_daily=self.spend_limit_person_daily_usd,
            person_monthly=self.spend_limit_person_monthly_usd,
        )


HeaderValue = str | dict[str, str]
"""A header's value: as written, or `{"param": "/nanobot/mcp/…"}` (an SSM SecureString) or
`{"secret": "nanobot/mcp/…"}` (a Secrets Manager secret), read once at start-up."""


class McpServerConfig(BaseModel):
    """One remote MCP server (streamable HTTP) whose tools the model is offered, in the chats
    its `access` names (core/remote_tools.py: `may_use_server`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,19}$")  # the tools' prefix: `<name>_<tool>`
    url: str = Field(pattern=r"^https?://\S+$", max_length=2000)
    headers: dict[str, HeaderValue] = Field(default_factory=dict)
    tools: tuple[str, ...] | None = None  # an allow-list; None: every tool the server lists
    timeout_seconds: float = Field(default=30, gt=0, le=300)
    # "owner" (configurations from before access existed mean this), "allowed", or chat ids.
    access: ServerAccess = "owner"
    # Header secrets are the owner's: a server that has them is opened to others only when the
    # operator says so here, and `doctor` warns about it.
    share_secret_headers: bool = False

    @field_validator("access", mode="before")
    @classmethod
    def _access(cls, value: object) -> object:
        if value in ("owner", "allowed"):
            return value
        if isinstance(value, list | tuple) and value:
            chats = [chat for chat in value if isinstance(chat, int) and not isinstance(chat, bool)]
            if len(chats) == len(value) and 0 not in chats:
                return frozenset(chats)
        raise ValueError(
            'give "owner", "allowed" or a list of Telegram chat ids (people\'s user ids, '
            "groups' negative ids)"
        )

    @property
    def secret_headers(self) -> list[str]:
        """The headers whose values are read from a secret."""
        return [header for header, value in self.headers.items() if not isinstance(value, str)]

    @model_validator(mode="after")
    def _secret_headers_stay_the_owner_s(self) -> McpServerConfig:
        if self.access != "owner" and self.secret_headers and not self.share_secret_headers:
            raise ValueError(
                f"{self.name}: its header {self.secret_headers[0]} is read from a secret, which "
                "serves the owner only; to let others use the server with it, add "
                '"share_secret_headers": true (everyone it is opened to acts with that '
                'credential), or keep "access": "owner"'
            )
        return self

    @field_validator("headers")
    @classmethod
    def _header_references(cls, headers: dict[str, HeaderValue]) -> dict[str, HeaderValue]:
        for header, value in headers.items():
            if not re.fullmatch(r"[A-Za-z0-9-]{1,64}", header):
                raise ValueError(f"header name {header!r} is not a plain HTTP header name")
            if isinstance(value, str):
                continue
            if set(value) == {"param"} and value["param"].startswith(f"/{SECRETS_PREFIX}"):
                continue
            if set(value) == {"secret"} and value["secret"].startswith(SECRETS_PREFIX):
                continue
            raise ValueError(
                f'header {header}: give a value, {{"param": "/{SECRETS_PREFIX}…"}} or '
                f'{{"secret": "{SECRETS_PREFIX}…"}} (agent_turn may read no other secrets)'
            )
        return headers


class SandboxSettings(_Settings):
    # The code sandbox function's name (template: !Ref SandboxFunction); unset: no exec tool.
    sandbox_function: str | None = Field(default=None, alias="SANDBOX_FUNCTION", min_length=1)


class McpSettings(_Settings):
    # JSON: a list of McpServerConfig. Operator configuration only (a template parameter).
    mcp_servers: tuple[McpServerConfig, ...] = Field(default=(), alias="MCP_SERVERS")

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _json_list(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else []
            except json.JSONDecodeError as error:
                raise ValueError(f"is not JSON ({error.msg})") from None
            if not isinstance(value, list):
                raise ValueError("must be a JSON list of servers")
        return value

    @field_validator("mcp_servers")
    @classmethod
    def _unique_names(cls, servers: tuple[McpServerConfig, ...]) -> tuple[McpServerConfig, ...]:
        names = [server.name for server in servers]
        if len(set(names)) != len(names):
            raise ValueError("server names must be unique")
        return servers


class ApprovalSettings(_Settings):
    """Which tool calls ask a person first (core/approvals.py), and how long a question waits."""

    # `tool=allow|ask|deny` pairs, comma-separated, or a JSON object; keys: a tool's name,
    # `mcp:SERVER` or `mcp:SERVER/TOOL`. Empty: the defaults only.
    approvals: dict[str, Policy] = Field(default_factory=dict, alias="APPROVALS")
    # A question unanswered this long is denied, and the model told.
    approval_timeout_minutes: int = Field(
        default=60, alias="APPROVAL_TIMEOUT_MINUTES", ge=1, le=7 * 24 * 60
    )

    @field_validator("approvals", mode="before")
    @classmethod
    def _rules(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return parse_rules(value)
            except RulesError as error:
                raise ValueError(str(error)) from None
        return value

    @property
    def approval_policy(self) -> ApprovalPolicy:
        return ApprovalPolicy(self.approvals)


class QueueSettings(_Settings):
    turn_queue_url: str = Field(alias="TURN_QUEUE_URL", pattern=r"^https?://\S+\.fifo$")


class StorageSettings(_Settings):
    workspace_bucket: str = Field(alias="WORKSPACE_BUCKET", min_length=3)
    sessions_table: str = Field(alias="SESSIONS_TABLE", min_length=3)


class ModelMenuSettings(_Settings):
    """The models a chat may choose (/model, /think): agent_turn's, and the console shows them."""

    # Models a chat may switch to with /model (core/model_choice.py): a JSON object of name →
    # litellm model or {"model": …, "reasoning_effort", "temperature", "max_tokens", "api_base",
    # "description"}, or the short form fast=openai/gpt-4o-mini,smart=anthropic/claude-….
    model_presets: tuple[ModelPreset, ...] = Field(default=(), alias="MODEL_PRESETS")
    # Who may use /model and /think: the owner (default), or everyone the chat is heard from.
    model_switchers: Literal["owner", "everyone"] = Field(default="owner", alias="MODEL_SWITCHERS")
    # How hard the model thinks where a chat chose nothing (/think); unset: the provider's default.
    llm_thinking: Literal["off", "low", "medium", "high"] | None = Field(
        default=None, alias="LLM_THINKING"
    )

    @field_validator("model_presets", mode="before")
    @classmethod
    def _presets(cls, value: object) -> object:
        if value is None or isinstance(value, str | dict):
            return parse_presets(value)
        return value


class LlmSettings(ModelMenuSettings):
    llm_model: str = Field(alias="LLM_MODEL", min_length=1)
    llm_api_base: str | None = Field(default=None, alias="LLM_API_BASE", pattern=r"^https?://\S+$")
    llm_api_key: SecretStr | None = Field(default=None, alias="LLM_API_KEY")
    llm_temperature: float | None = Field(default=None, alias="LLM_TEMPERATURE", ge=0, le=2)
    llm_max_tokens: int = Field(default=4096, alias="LLM_MAX_TOKENS", ge=1)
    llm_timeout_seconds: float = Field(default=120, alias="LLM_TIMEOUT_SECONDS", gt=0)
    llm_num_retries: int = Field(default=2, alias="LLM_NUM_RETRIES", ge=0, le=10)
    # Tried in order when LLM_MODEL fails after its retries (comma-separated litellm names).
    # A fallback of the same provider reuses LLM_API_KEY / LLM_API_BASE; another provider reads
    # its own key from litellm's usual variable (e.g. ANTHROPIC_API_KEY).
    llm_fallback_models: tuple[str, ...] = Field(default=(), alias="LLM_FALLBACK_MODELS")
    # Cheaper models for background work (unset: LLM_MODEL), falling back to LLM_MODEL. Like a
    # fallback, one of LLM_MODEL's provider reuses LLM_API_KEY / LLM_API_BASE, another reads
    # its provider's usual variable.
    heartbeat_model: str | None = Field(default=None, alias="HEARTBEAT_MODEL", min_length=1)
    consolidation_model: str | None = Field(default=None, alias="CONSOLIDATION_MODEL", min_length=1)

    @field_validator("llm_fallback_models", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(name.strip() for name in value.split(",") if name.strip())
        return value


class TimezoneSettings(_Settings):
    # The user's IANA time zone: days and months of usage, the agent's clock.
    timezone: str = Field(default="UTC", alias="TIMEZONE")

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown timezone {value!r} (use an IANA name such as Europe/Paris)"
            ) from None
        return value


class AgentBehaviourSettings(TimezoneSettings):
    max_tool_iterations: int = Field(default=40, alias="MAX_TOOL_ITERATIONS", ge=1, le=200)
    # History is sized by tokens: past HISTORY_MAX_TOKENS of unconsolidated history, the older
    # part is summarised into memory, keeping the newest exchanges filling half of it. Default:
    # a quarter of the request budget (below), at most 24,000.
    history_max_tokens: int | None = Field(
        default=None, alias="HISTORY_MAX_TOKENS", ge=500, le=1_000_000
    )
    # A backstop in messages: past this many unconsolidated messages, consolidation is due too
    # (and no more are read per turn).
    history_window: int = Field(default=200, alias="HISTORY_WINDOW", ge=2, le=500)
    # The model's context window in tokens. Default: litellm's figure for LLM_MODEL (32,768
    # for a model litellm does not know). Each request is kept within it, less LLM_MAX_TOKENS.
    context_window_tokens: int | None = Field(
        default=None, alias="CONTEXT_WINDOW_TOKENS", ge=2_000, le=10_000_000
    )
    # Budget for HISTORY entries recalled into the runtime context (0 turns recall off).
    recall_max_chars: int = Field(default=1200, alias="RECALL_MAX_CHARS", ge=0, le=20_000)
    # litellm embedding model for hybrid recall (core/hybrid_recall.py), e.g.
    # openai/text-embedding-3-small; unset: recall by words (BM25) only, at no cost.
    embedding_model: str | None = Field(default=None, alias="EMBEDDING_MODEL", min_length=1)
    # Vector size asked of models that can shorten theirs (text-embedding-3-*): smaller, faster.
    embedding_dimensions: int | None = Field(
        default=None, alias="EMBEDDING_DIMENSIONS", ge=16, le=4096
    )
    # Base URL of the embedding provider (e.g. a local Ollama); unset: LLM_API_BASE for a model
    # of LLM_MODEL's provider, else the provider's own.
    embedding_api_base: str | None = Field(
        default=None, alias="EMBEDDING_API_BASE", pattern=r"^https?://\S+$"
    )
    # Least cosine similarity for a chunk to be recalled by meaning (models differ: see
    # docs/memory.md).
    recall_min_similarity: float = Field(
        default=0.3, alias="RECALL_MIN_SIMILARITY", ge=-1.0, le=1.0
    )


class InputSettings(_Settings):
    """How agent_turn treats Telegram input beyond plain text."""

    # mention: in groups, act only when mentioned or replied to; open: on every message.
    group_policy: Literal["mention", "open"] = Field(default="mention", alias="GROUP_POLICY")
    # Largest file fetched from Telegram (its getFile API stops at 20 MB).
    media_max_bytes: int = Field(default=20_000_000, alias="MEDIA_MAX_BYTES", ge=1, le=20_000_000)
    # Largest image passed to the model inline (base64); larger ones are only stored.
    image_max_bytes: int = Field(default=5_000_000, alias="IMAGE_MAX_BYTES", ge=1)
    # litellm transcription model for voice and audio (e.g. whisper-1, groq/whisper-large-v3);
    # unset: the model is told a voice message arrived that it cannot hear.
    transcription_model: str | None = Field(default=None, alias="TRANSCRIPTION_MODEL")
    # Credentials for a transcription provider other than the chat model's (the chat model's
    # key is reused only for the same provider, never sent to another one).
    transcription_api_key: SecretStr | None = Field(default=None, alias="TRANSCRIPTION_API_KEY")
    transcription_api_base: str | None = Field(
        default=None, alias="TRANSCRIPTION_API_BASE", pattern=r"^https?://\S+$"
    )
    # litellm speech model (e.g. openai/tts-1): a voice note is also answered with one, the
    # answer read aloud; unset: voice replies are off. LLM_MODEL's key only for its provider.
    tts_model: str | None = Field(default=None, alias="TTS_MODEL", min_length=1)
    tts_voice: str = Field(default="alloy", alias="TTS_VOICE", min_length=1)
    # litellm image model (e.g. openai/gpt-image-1, bedrock/amazon.nova-canvas-v1:0): the model
    # gets a generate_image tool; unset: no tool. LLM_MODEL's key only for its provider.
    image_model: str | None = Field(default=None, alias="IMAGE_MODEL", min_length=1)
    # The size asked for (e.g. 1024x1024); unset: the image model's default.
    image_size: str | None = Field(default=None, alias="IMAGE_SIZE", pattern=r"^\d{2,5}x\d{2,5}$")


class LoopSettings(_Settings):
    """The agent loop's limits and what it shows the user while it works."""

    # Tool results longer than this are cut (with a marker) before the model sees them.
    tool_result_max_chars: int = Field(
        default=16_000, alias="TOOL_RESULT_MAX_CHARS", ge=500, le=500_000
    )
    # Tool results saved in the session longer than this are cut. Unset: saved as the model saw
    # them (up to 50,000 characters, a DynamoDB item's room), so later turns send them again
    # byte for byte and the provider's prompt cache serves them; a cut result is sent shorter
    # from the next turn on, which costs that turn the cache from there.
    saved_tool_result_max_chars: int | None = Field(
        default=None, alias="SAVED_TOOL_RESULT_MAX_CHARS", ge=100, le=500_000
    )
    # Send the text the model writes alongside tool calls to the chat as progress.
    send_progress: bool = Field(default=True, alias="SEND_PROGRESS")
    # Also send a short hint per tool call, e.g. 🔎 grep("lisbon").
    send_tool_hints: bool = Field(default=False, alias="SEND_TOOL_HINTS")
    # In private chats, show the answer as it is written (Telegram message drafts).
    stream_replies: bool = Field(default=True, alias="STREAM_REPLIES")
    # One short line before the next answer when earlier conversation was summarised into
    # memory by automatic consolidation (functions/agent_turn/delivery.py); /compact and /new say
    # so themselves.
    compaction_notice: bool = Field(default=True, alias="COMPACTION_NOTICE")
    # At most one such line per this many hours: a summary made sooner after the last notice
    # is told with the first answer once they have passed. 0: every summary is told.
    compaction_notice_interval_hours: float = Field(
        default=24, alias="COMPACTION_NOTICE_INTERVAL_HOURS", ge=0, le=8760
    )
    # Days a session's messages are kept once consolidation has summarised them (their content
    # is in HISTORY.md, and the versioned bucket keeps that file's versions). 0: kept forever.
    session_retention_days: int = Field(default=90, alias="SESSION_RETENTION_DAYS", ge=0, le=3650)
    # Seconds of the Lambda invocation kept back from model calls: when less remains, the
    # turn records where it is and continues in a new invocation.
    turn_time_reserve_seconds: float = Field(
        default=30, alias="TURN_TIME_RESERVE_SECONDS", ge=1, le=600
    )
    # How many times one turn may continue in a new invocation before it gives up.
    max_continuations: int = Field(default=5, alias="MAX_CONTINUATIONS", ge=0, le=50)


class RetrySettings(_Settings):
    """What agent_turn does with a queue message whose turn failed."""

    # The queue's maxReceiveCount (the template sets both from one parameter): on the last
    # attempt the user is told the message could not be processed.
    turn_max_receive_count: int = Field(default=3, alias="TURN_MAX_RECEIVE_COUNT", ge=1, le=1000)
    # A failed message is retried after this many seconds, doubled per attempt (not after the
    # queue's 30-minute visibility timeout, which would hold up the chat).
    retry_backoff_seconds: int = Field(default=10, alias="RETRY_BACKOFF_SECONDS", ge=0, le=900)


class WebSettings(_Settings):
    """The web tools: web_search's provider, and what web_fetch may reach and read."""

    # Unset (or no key): web_search answers that it is not configured.
    web_search_provider: Literal["brave", "tavily"] | None = Field(
        default=None, alias="WEB_SEARCH_PROVIDER"
    )
    web_search_api_key: SecretStr | None = Field(default=None, alias="WEB_SEARCH_API_KEY")
    # The provider's base URL, e.g. a stand-in server in tests (default: the provider's own).
    web_search_api_base: str | None = Field(
        default=None, alias="WEB_SEARCH_API_BASE", pattern=r"^https?://\S+$"
    )
    # Networks exempt from web_fetch's ban on private addresses (an intranet), as CIDRs.
    web_fetch_allow_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = Field(
        default=(), alias="WEB_FETCH_ALLOW_NETWORKS"
    )
    web_fetch_max_bytes: int = Field(
        default=2_000_000, alias="WEB_FETCH_MAX_BYTES", ge=1_000, le=20_000_000
    )
    web_fetch_timeout_seconds: float = Field(
        default=15, alias="WEB_FETCH_TIMEOUT_SECONDS", gt=0, le=120
    )

    @field_validator("web_fetch_allow_networks", mode="before")
    @classmethod
    def _parse_networks(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        networks = []
        for item in filter(None, (part.strip() for part in value.split(","))):
            try:
                networks.append(ipaddress.ip_network(item))
            except ValueError as error:
                raise ValueError(f"{item!r} is not a network in CIDR form ({error})") from None
        return tuple(networks)


class JobSettings(_Settings):
    """Where scheduled jobs live: their records, and their schedules' group and target."""

    jobs_table: str = Field(alias="JOBS_TABLE", min_length=3)


class ScheduleTargetSettings(JobSettings):
    """Where the jobs' schedules are made, and what they fire."""

    schedule_group: str = Field(alias="SCHEDULE_GROUP", min_length=1)
    scheduler_target_arn: str = Field(alias="SCHEDULER_TARGET_ARN", pattern=r"^arn:")
    scheduler_role_arn: str = Field(alias="SCHEDULER_ROLE_ARN", pattern=r"^arn:")


class SchedulingSettings(ScheduleTargetSettings):
    # Background tasks (spawn): their own iteration cap, and how many may run per chat.
    subagent_max_iterations: int = Field(default=15, alias="SUBAGENT_MAX_ITERATIONS", ge=1, le=200)
    max_subagents: int = Field(default=3, alias="MAX_SUBAGENTS", ge=0, le=50)


class HookSettings(_Settings):
    """The event hooks' base URL (the stack's HooksUrl), which /hooks shows with each hook.
    Empty: /hooks shows the path only."""

    hooks_url: str = Field(default="/hooks", alias="HOOKS_URL")


class ConsoleLinkSettings(_Settings):
    # The console's page (the stack's ConsoleUrl), which /console opens; unset: no console.
    console_url: str | None = Field(default=None, alias="CONSOLE_URL", pattern=r"^https?://\S+$")


class SignOfLifeSettings(_Settings):
    """What the webhook's answer asks Telegram to show the user as soon as an update is queued."""

    # Empty: "typing…" (sendChatAction); an emoji Telegram allows: that reaction on the message.
    ack_reaction: str = Field(default="", alias="ACK_REACTION")
    # agent_turn's GROUP_POLICY (InputSettings): with `open`, every group message gets one too.
    group_policy: Literal["mention", "open"] = Field(default="mention", alias="GROUP_POLICY")

    @field_validator("ack_reaction")
    @classmethod
    def _telegram_reaction(cls, value: str) -> str:
        return telegram_reaction(value) if value.strip() else ""


class WebhookSettings(AllowListSettings, QueueSettings, SignOfLifeSettings):
    purpose: ClassVar[str] = "the webhook function"
    # on: a stranger's private message is answered with a code the owner may approve
    # (/approve CODE); approved people are heard like those in ALLOW_FROM (core/pairing.py).
    pairing: Literal["on", "off"] = Field(default="off", alias="PAIRING")
    # Codes everyone together gets an hour (each person: one open code, 3 a day).
    pairing_codes_per_hour: int = Field(default=100, alias="PAIRING_CODES_PER_HOUR", ge=1)
    sessions_table: str = Field(alias="SESSIONS_TABLE", min_length=3)  # /stop flags
    # Updates already queued (Powertools Idempotency), so a re-sent update is queued once.
    idempotency_table: str = Field(alias="IDEMPOTENCY_TABLE", min_length=3)
    telegram_secret_token: SecretStr = Field(
        alias="TELEGRAM_SECRET_TOKEN", min_length=1, max_length=256
    )


class AgentSettings(
    TelegramBotSettings,
    StorageSettings,
    LlmSettings,
    AgentBehaviourSettings,
    InputSettings,
    LoopSettings,
    RetrySettings,
    SchedulingSettings,
    QueueSettings,
    OwnerSettings,
    SpendSettings,
    WebSettings,
    McpSettings,
    SandboxSettings,
    HookSettings,
    ApprovalSettings,
    ConsoleLinkSettings,
):
    purpose: ClassVar[str] = "the agent_turn function"


class SchedulerSettings(TelegramBotSettings, QueueSettings, JobSettings):
    purpose: ClassVar[str] = "the scheduler function"
    workspace_bucket: str = Field(alias="WORKSPACE_BUCKET", min_length=3)
    heartbeat_chat_id: int | None = Field(default=None, alias="HEARTBEAT_CHAT_ID")
    sessions_table: str = Field(alias="SESSIONS_TABLE", min_length=3)  # approvals' deadlines


class ConsoleSettings(
    TelegramBotSettings,
    StorageSettings,
    OwnerSettings,
    SpendSettings,
    ScheduleTargetSettings,
    QueueSettings,
    HookSettings,
    ModelMenuSettings,
    TimezoneSettings,
):
    """The owner's console (functions/console/): the bot token checks the launch data's signature
    (and welcomes a person approved there); the rest is what the chat commands it mirrors use."""

    purpose: ClassVar[str] = "the console function"
    # How old a launch's data (its auth_date) may be: past it, every request is refused (401)
    # until the console is opened again from Telegram.
    console_launch_max_age_seconds: int = Field(
        default=3600, alias="CONSOLE_LAUNCH_MAX_AGE_SECONDS", ge=60, le=86_400
    )
    pairing: Literal["on", "off"] = Field(default="off", alias="PAIRING")
    # The dead-letter queue, shown (and replayed) under Activity; unset: not shown.
    turn_dlq_url: str | None = Field(
        default=None, alias="TURN_DLQ_URL", pattern=r"^https?://\S+\.fifo$"
    )
    # For Models: what answers a chat that chose nothing (unset: not shown).
    llm_model: str | None = Field(default=None, alias="LLM_MODEL", min_length=1)
    # For Schedules: the heartbeat's schedule (the template's HeartbeatScheduleExpression).
    heartbeat_schedule: str | None = Field(
        default=None, alias="HEARTBEAT_SCHEDULE_EXPRESSION", min_length=1
    )


class OperatorSettings(_Settings):
    """The `nanobot-lambda` command line without `--stack` (a stack's outputs win over these).

    The same variables the functions read, plus `TURN_DLQ_URL`; all optional: each command
    says which one it is missing.
    """

    purpose: ClassVar[str] = "the nanobot-lambda command line"
    workspace_bucket: str | None = Field(default=None, alias="WORKSPACE_BUCKET", min_length=3)
    sessions_table: str | None = Field(default=None, alias="SESSIONS_TABLE", min_length=3)
    turn_queue_url: str | None = Field(
        default=None, alias="TURN_QUEUE_URL", pattern=r"^https?://\S+\.fifo$"
    )
    turn_dlq_url: str | None = Field(
        default=None, alias="TURN_DLQ_URL", pattern=r"^https?://\S+\.fifo$"
    )
    hooks_url: str | None = Field(default=None, alias="HOOKS_URL", pattern=r"^https?://\S+$")
    jobs_table: str | None = Field(default=None, alias="JOBS_TABLE", min_length=3)
    schedule_group: str | None = Field(default=None, alias="SCHEDULE_GROUP", min_length=1)
    telegram_bot_token: SecretStr | None = Field(default=None, alias="TELEGRAM_BOT_TOKEN")
    telegram_api_base: str = Field(
        default="https://api.telegram.org", alias="TELEGRAM_API_BASE", pattern=r"^https?://\S+$"
    )
