"""What agent_turn is given: the ports its turns work with, in two groups (where state lives,
and what a turn talks to). The handler builds them from the adapters; unit tests from fakes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nanobot_lambda.core.ports import (
    AlbumBook,
    Channel,
    ChatModel,
    JobStore,
    MediaSource,
    MetricsPort,
    PairingStore,
    Schedules,
    SessionStore,
    Speaker,
    StopFlags,
    TokenCounter,
    Transcriber,
    TurnJournal,
    TurnQueue,
    UsageStore,
    Workspace,
)
from nanobot_lambda.core.remote_tools import RemoteToolServer
from nanobot_lambda.core.sandbox import Sandbox
from nanobot_lambda.core.scopes import Scope


@dataclass(frozen=True, kw_only=True)
class Stores:
    """Where a turn's state lives."""

    workspace: Workspace  # the owner's
    scope_workspace: Callable[[Scope], Workspace]  # a person's or a group's own (core/scopes.py)
    sessions: SessionStore
    journal: TurnJournal
    jobs: JobStore
    usage: UsageStore
    stop_flags: StopFlags
    albums: AlbumBook  # parts of albums, recorded by the webhook
    pairing: PairingStore  # people the owner approved, codes strangers were given


@dataclass(frozen=True, kw_only=True)
class Services:
    """What a turn talks to."""

    channel: Channel
    media: MediaSource
    model: ChatModel
    tokens: TokenCounter  # the model's tokenizer and context window
    queue: TurnQueue
    schedules: Schedules
    transcriber: Transcriber | None = None
    speaker: Speaker | None = None  # voice replies (TTS_MODEL)
    remote_servers: tuple[RemoteToolServer, ...] = ()  # MCP_SERVERS
    sandbox: Sandbox | None = None  # the code sandbox (SANDBOX_FUNCTION): the exec tool
    # Models for background work (HEARTBEAT_MODEL, CONSOLIDATION_MODEL); None: `model`.
    heartbeat_model: ChatModel | None = None
    consolidation_model: ChatModel | None = None


@dataclass(frozen=True)
class TurnPorts:
    stores: Stores
    services: Services
    metrics: MetricsPort
