"""What a turn depends on: the ports agent_turn is given, and the wiring built from them.

`TurnPorts` is what the composition root (functions/agent_turn/app.py) hands in: where state
lives (`Stores`) and what a turn talks to (`Services`), adapters in Lambda and fakes in the unit
tests. `build_turn_deps` builds `TurnDeps` from them once per container: a plain frozen record
of what a turn uses (turn.py and the job kinds read it; nothing writes it). Its services hold
clients, settings and caches, never a job: what is one job's is its context (tools/context.py),
made by the dispatcher and passed down, and what belongs to one run of a turn is in its
`TurnRun`. What a container keeps across jobs lives in the object that owns it, as a cache: each
scope's workspace view in `ScopeWorkspaces`, the remote servers' tools in `RemoteToolbox`, the
sandbox's programs in `SandboxPrograms`, the chats that refused drafts in `Drafts`, the owner's
private chat in `OwnerChatNote` (tests/unit/test_architecture.py checks that no other state
outlives a job).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from nanobot_lambda.core.albums import Albums
from nanobot_lambda.core.allowlist import Audience
from nanobot_lambda.core.approvals import ApprovalBook, ApprovalDeadlines
from nanobot_lambda.core.budget import HistoryBudget, default_history_tokens
from nanobot_lambda.core.context import ContextBuilder
from nanobot_lambda.core.images import ImageGenerator
from nanobot_lambda.core.inbound_events import HookCommands, HookStore
from nanobot_lambda.core.invites import Invites, InviteStore
from nanobot_lambda.core.memory_versions import VersionedFiles
from nanobot_lambda.core.model_choice import ChatModels, ModelMenu, ModelOptions
from nanobot_lambda.core.pairing import Pairing
from nanobot_lambda.core.ports import (
    AlbumBook,
    Channel,
    ChatModel,
    Embedder,
    JobStore,
    MediaSource,
    MetricsPort,
    PairingStore,
    RecallIndexObjects,
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
from nanobot_lambda.core.reactions_and_edits import FeedbackBook
from nanobot_lambda.core.remote_tools import RemoteToolServer
from nanobot_lambda.core.sandbox import Sandbox, describe_programs
from nanobot_lambda.core.scopes import Scope, ScopeWorkspaces
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.functions.agent_turn.agent_runner import AgentLoops, AgentRunner, GoingOn
from nanobot_lambda.functions.agent_turn.approvals import Approvals
from nanobot_lambda.functions.agent_turn.commands import CommandDeps, Commands
from nanobot_lambda.functions.agent_turn.consolidation import Consolidation
from nanobot_lambda.functions.agent_turn.continuation import Continuation
from nanobot_lambda.functions.agent_turn.delivery import Delivery
from nanobot_lambda.functions.agent_turn.draft_stream import Drafts
from nanobot_lambda.functions.agent_turn.memory_commands import MemoryCommands
from nanobot_lambda.functions.agent_turn.recall import TurnRecall
from nanobot_lambda.functions.agent_turn.saving import TurnSaver
from nanobot_lambda.functions.agent_turn.spending import SetupNotices, SpendNotices
from nanobot_lambda.functions.agent_turn.toolbox import (
    RequirementsRecord,
    SandboxPrograms,
    Toolbox,
    ToolServices,
    agent_tools,
)
from nanobot_lambda.functions.agent_turn.turn_request import TurnRequests
from nanobot_lambda.functions.agent_turn.turn_run import TurnStarter
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.remote import RemoteToolbox


@dataclass(frozen=True, kw_only=True)
class Stores:
    """Where a turn's state lives."""

    workspace: Workspace  # the owner's
    scope_workspace: Callable[[Scope], Workspace]  # a person's or a group's own (core/scopes.py)
    # Any scope's files with their versions, the owner's too (/memory: core/memory_versions.py).
    versioned_workspace: Callable[[Scope], VersionedFiles]
    sessions: SessionStore
    journal: TurnJournal
    jobs: JobStore
    usage: UsageStore
    stop_flags: StopFlags
    albums: AlbumBook  # parts of albums, recorded by the webhook
    pairing: PairingStore  # people the owner approved, codes strangers were given
    hooks: HookStore  # the owner's event hooks (/hooks)
    feedback: FeedbackBook  # reactions and edits, recorded by the webhook
    approvals: ApprovalBook  # approvals asked for, standing permissions (core/approvals.py)
    recall_indexes: RecallIndexObjects | None = None  # each scope's recall index (hybrid recall)
    invites: InviteStore | None = None  # the owner's invite links (/invite); None: no /invite


@dataclass(frozen=True, kw_only=True)
class Services:
    """What a turn talks to."""

    channel: Channel
    media: MediaSource
    model: ChatModel
    tokens: TokenCounter  # the model's tokenizer and context window
    queue: TurnQueue
    schedules: Schedules
    deadlines: ApprovalDeadlines  # a schedule at each approval's deadline
    transcriber: Transcriber | None = None
    speaker: Speaker | None = None  # voice replies (TTS_MODEL)
    remote_servers: tuple[RemoteToolServer, ...] = ()  # MCP_SERVERS
    sandbox: Sandbox | None = None  # the code sandbox (SANDBOX_FUNCTION): the exec tool
    images: ImageGenerator | None = None  # IMAGE_MODEL: the generate_image tool
    # Models for background work (HEARTBEAT_MODEL, CONSOLIDATION_MODEL); None: `model`.
    heartbeat_model: ChatModel | None = None
    consolidation_model: ChatModel | None = None
    # The models a chat may choose with /model and /think (MODEL_PRESETS, LLM_THINKING);
    # None: every chat is answered by `model`.
    models: ChatModels | None = None
    embedder: Embedder | None = None  # EMBEDDING_MODEL: hybrid recall; None: words only


@dataclass(frozen=True)
class TurnPorts:
    """What agent_turn is given: the handler builds it from the adapters, unit tests from
    fakes."""

    stores: Stores
    services: Services
    metrics: MetricsPort


class OwnerChatNote:
    """The owner's private chat, noted for the heartbeat (one write per container and chat).
    The heartbeat works in the owner's workspace: another person's chat is never its target."""

    def __init__(self, jobs: JobStore, owner: int | None) -> None:
        self._jobs = jobs
        self._owner = owner
        self._noted: int | None = None

    def private_chat(self, chat_id: int) -> None:
        if self._owner is not None and chat_id != self._owner:
            return
        if self._noted != chat_id:
            self._jobs.remember_private_chat(chat_id)
            self._noted = chat_id


@dataclass(frozen=True, kw_only=True)
class TurnDeps:
    """What a turn is made of, built once per container (`build_turn_deps`)."""

    settings: AgentSettings
    ports: TurnPorts
    clock: Callable[[], datetime]
    meter: UsageMeter  # makes each job's meter, for its subject's chat
    audience: Audience  # who may talk to the bot
    scopes: ScopeWorkspaces  # each scope's workspace (a job's context holds its scope's)
    tools: Toolbox  # the container's tools, and each job's (with the remote ones its chat may use)
    menu: ModelMenu  # the operator's presets: a session's chat's choice of model
    loops: AgentLoops  # the agent loops, made for each job: the chat's, the heartbeat's, a task's
    context: ContextBuilder  # the system prompt and the request's messages
    requests: TurnRequests  # the runtime block, a request that fits
    albums: Albums
    commands: Commands
    owner_chat: OwnerChatNote
    starter: TurnStarter
    runner: AgentRunner
    drafts: Drafts
    delivery: Delivery
    saver: TurnSaver
    consolidation: Consolidation  # each job's consolidator, and when a session is due
    recall: TurnRecall  # BM25, or hybrid with EMBEDDING_MODEL; indexes after each job


def build_turn_deps(
    settings: AgentSettings,
    ports: TurnPorts,
    environ: Mapping[str, str],
    clock: Callable[[], datetime],
) -> TurnDeps:
    """The one factory of a turn's wiring. `environ`: what skills' `requires.env` is checked
    against."""
    stores, services = ports.stores, ports.services
    meter = UsageMeter(stores.usage, ports.metrics, clock=clock, limits=settings.spend_limits)
    menu = ModelMenu(
        settings.model_presets,
        default_model=settings.llm_model,
        default_thinking=settings.llm_thinking,
        switchers=settings.model_switchers,
    )
    # The model each chat's choice (/model, /think) answers with: the agent loops, the fitter
    # and consolidation ask it for the job's choice.
    models = ModelOptions(
        services.models,
        services.model,
        services.tokens,
        default_window=settings.context_window_tokens,
        reply_tokens=settings.llm_max_tokens,
    )
    pairing = Pairing(stores.pairing, clock=clock)
    # Who may talk to the bot: for the MCP servers' access, and for jobs nobody sent now.
    audience = Audience(settings.owner, settings.allow_from, pairing.is_approved)
    workspace_tools, chat_tools = agent_tools(
        settings,
        ToolServices(
            stores.jobs,
            services.schedules,
            services.queue,
            images=services.images,
            sandbox=services.sandbox,
        ),
        clock,
    )
    # Who may use which remote MCP server is decided per job, by its chat (Toolbox.for_job).
    remote = RemoteToolbox(services.remote_servers, settings.tool_result_max_chars, audience)
    loops = AgentLoops(settings, models, services.heartbeat_model)
    # The session's history is budgeted by LLM_MODEL's window, whichever model a chat chose.
    history_budget = request_budget(settings, services.tokens)
    consolidation = Consolidation(
        stores.sessions,
        HistoryBudget(
            services.tokens,
            settings.history_max_tokens or default_history_tokens(history_budget),
            settings.history_window,
            max_summarised_tokens=history_budget // 2,
        ),
        models,
        services.consolidation_model,  # None: the chat's model
        timezone=settings.timezone,
        clock=clock,
    )
    # Recall in the job's scope; with an embedder it indexes the scope at each job's end.
    recall = TurnRecall(settings, services.embedder, stores.recall_indexes)
    approvals = Approvals(
        settings, stores.approvals, services.deadlines, stores.journal, settings.owner, clock
    )
    saver = TurnSaver(
        stores.sessions,
        stores.journal,
        settings.saved_tool_result_max_chars,
        clock,
        stores.feedback,
    )
    return TurnDeps(
        settings=settings,
        ports=ports,
        clock=clock,
        meter=meter,
        audience=audience,
        scopes=ScopeWorkspaces(stores.workspace, stores.scope_workspace),
        tools=Toolbox(workspace_tools, chat_tools, remote),
        menu=menu,
        loops=loops,
        context=_context_builder(
            services.sandbox, environ, clock, RequirementsRecord(stores.jobs, environ, clock)
        ),
        requests=TurnRequests(recall, loops.fits, consolidation, stores.sessions, settings, clock),
        albums=Albums(stores.albums),
        commands=Commands(
            CommandDeps(
                channel=services.channel,
                stop_flags=stores.stop_flags,
                memory=MemoryCommands(
                    services.channel,
                    consolidation,
                    stores.versioned_workspace,
                    owner=settings.owner,
                    timezone=settings.timezone,
                ),
                meter=meter,
                pairing=pairing,
                owner=settings.owner,
                sessions=stores.sessions,
                menu=menu,
                hooks=HookCommands(stores.hooks, settings.hooks_url, clock),
                console_url=settings.console_url,
                journal=stores.journal,
                feedback=stores.feedback,
                approvals=stores.approvals,
                invites=(
                    Invites(stores.invites, stores.pairing, clock=clock)
                    if stores.invites is not None
                    else None
                ),
            )
        ),
        owner_chat=OwnerChatNote(stores.jobs, settings.owner),
        starter=TurnStarter(
            stores.sessions,
            stores.journal,
            services.channel,
            ports.metrics,
            settings.history_window,
        ),
        runner=AgentRunner(
            stores.journal,
            stores.stop_flags,
            GoingOn(Continuation(stores.journal, services.queue), approvals),
            saver,
            settings,
            SetupNotices(stores.usage, settings.owner, clock),
        ),
        # Live replies: the answer shown as it is written, in private chats.
        drafts=Drafts(services.channel, settings.stream_replies),
        delivery=Delivery(
            stores.journal,
            SpendNotices(stores.usage, settings.owner, clock),
            services.speaker,
            clock,
            compaction_notice=settings.compaction_notice,
            compaction_notice_interval=timedelta(hours=settings.compaction_notice_interval_hours),
        ),
        saver=saver,
        consolidation=consolidation,
        recall=recall,
    )


def _context_builder(
    sandbox: Sandbox | None,
    environ: Mapping[str, str],
    clock: Callable[[], datetime],
    record: RequirementsRecord,
) -> ContextBuilder:
    """The prompt's builder; skills' `requires.bins` are checked against what the sandbox has
    when there is one. `record` keeps what they are checked against, once."""
    if sandbox is None:
        return ContextBuilder(environ, programs_line=record.without_sandbox)
    programs = SandboxPrograms(sandbox, clock, on_found=record)
    return ContextBuilder(
        environ,
        which=lambda name: name if name in programs() else None,
        programs_line=lambda: describe_programs(programs()),
    )


def request_budget(settings: AgentSettings, tokens: TokenCounter) -> int:
    """The most input tokens a request may have: the context window, less room for the reply
    and a margin for tokenizers that count a little differently from litellm's."""
    window = settings.context_window_tokens or tokens.context_window
    return max(window // 2, int(window * 0.95) - settings.llm_max_tokens)
