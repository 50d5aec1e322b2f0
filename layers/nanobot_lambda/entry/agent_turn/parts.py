"""Everything a turn is made of, built once per container from the settings and the ports.

The job kinds' turns (messages.py, scheduled.py, background.py) take what they need from here:
the prompt's parts, the agent loops and their tools, the steps every turn shares (start, run,
deliver, save), and the slot that tells the chat tools which turn they act for. What belongs to
one run of a turn is in its `TurnRun`, never here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime

from nanobot_lambda.adapters.telegram.media import MediaResolver
from nanobot_lambda.core.agent import AgentLoop, TurnOutcome
from nanobot_lambda.core.albums import Albums
from nanobot_lambda.core.allowlist import Audience
from nanobot_lambda.core.budget import HistoryBudget, RequestFitter
from nanobot_lambda.core.consolidation import Consolidator
from nanobot_lambda.core.context import ContextBuilder, RuntimeContext, earlier_blocks
from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.pairing import Pairing
from nanobot_lambda.core.ports import ChatModel, TokenCounter
from nanobot_lambda.core.recall import HistoryRecall
from nanobot_lambda.core.sandbox import describe_programs
from nanobot_lambda.core.scopes import ScopeSwitch
from nanobot_lambda.core.sessions import Message, SessionHistory
from nanobot_lambda.core.subjects import Subject
from nanobot_lambda.core.tools import Tool, ToolRegistry
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.entry.agent_turn.commands import Commands
from nanobot_lambda.entry.agent_turn.continuation import Continuation
from nanobot_lambda.entry.agent_turn.delivery import deliver_reply, send_voice_reply
from nanobot_lambda.entry.agent_turn.drafts import Drafts
from nanobot_lambda.entry.agent_turn.ports import TurnPorts
from nanobot_lambda.entry.agent_turn.run import TurnRun, TurnStarter
from nanobot_lambda.entry.agent_turn.running import AgentRunner
from nanobot_lambda.entry.agent_turn.saving import TurnSaver, consolidate_quietly
from nanobot_lambda.entry.agent_turn.spending import SpendNotices
from nanobot_lambda.entry.agent_turn.toolbox import agent_tools
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.chat import CurrentTurn, TurnOrigin, TurnScope
from nanobot_lambda.tools.remote import RemoteToolbox
from nanobot_lambda.tools.sandbox import ExecTool

# Consolidations a turn may run first to make its request fit the model's window (each one
# summarises what fits one model request).
BUDGET_CONSOLIDATIONS = 3
# After the sandbox could not say which programs it has: seconds before it is asked again.
SANDBOX_ASK_AGAIN_SECONDS = 60


logger = logging.getLogger(__name__)


class TurnParts:
    def __init__(
        self,
        settings: AgentSettings,
        ports: TurnPorts,
        environ: Mapping[str, str],
        clock: Callable[[], datetime],
    ) -> None:
        stores, services = ports.stores, ports.services
        self.settings = settings
        self.ports = ports
        self.clock = clock
        # Every model call is counted for the job's chat.
        self.meter = UsageMeter(
            stores.usage, ports.metrics, clock=clock, limits=settings.spend_limits
        )
        self.spend_notices = SpendNotices(stores.usage, settings.owner, clock)
        self.model = self.meter.metered(services.model)
        # Background work may use cheaper models (HEARTBEAT_MODEL, CONSOLIDATION_MODEL).
        self.heartbeat_model = self._metered_or_main(services.heartbeat_model)
        consolidation_model = self._metered_or_main(services.consolidation_model)
        # The workspace of the job's scope (core/scopes.py): the owner's, a person's, a group's.
        self.workspace = ScopeSwitch(stores.workspace, stores.scope_workspace)
        # Skills check `requires.env`, and `requires.bins` against what the sandbox has.
        self._sandbox = services.sandbox
        self._sandbox_found: frozenset[str] | None = None
        self._sandbox_retry_at = 0.0  # when to ask again after a failed ask (a timestamp)
        if services.sandbox is None:
            self.context = ContextBuilder(self.workspace, environ)
        else:
            self.context = ContextBuilder(
                self.workspace,
                environ,
                which=lambda name: name if name in self.sandbox_programs() else None,
                programs_line=lambda: describe_programs(self.sandbox_programs()),
            )
        self.recall = HistoryRecall(self.workspace, max_chars=settings.recall_max_chars)
        self.albums = Albums(stores.albums)
        transcriber = self.meter.metered_transcriber(services.transcriber)
        self.media = MediaResolver(services.media, self.workspace, settings, transcriber)
        self.speaker = self.meter.metered_speaker(services.speaker)
        self.current = CurrentTurn()
        self._subject: Subject | None = None  # the job being run's (`enter_scope`)
        self.remembered_private_chat: int | None = None  # a write saved per container
        workspace_tools, chat_tools = agent_tools(
            settings,
            self.current,
            self.workspace,
            stores.jobs,
            services.schedules,
            services.queue,
            clock,
        )
        if services.sandbox is not None:  # the code sandbox: background tasks may run code too
            workspace_tools.append(
                ExecTool(services.sandbox, self.workspace, settings.tool_result_max_chars)
            )
        # Who may use which remote MCP server is decided per job, by its chat (enter_scope).
        self.pairing = Pairing(stores.pairing, clock=clock)
        # Who may talk to the bot: for the MCP servers' access, and for jobs nobody sent now.
        self.audience = Audience(settings.owner, settings.allow_from, self.pairing.is_approved)
        self.remote = RemoteToolbox(
            services.remote_servers, settings.tool_result_max_chars, self.audience
        )
        self._registries: list[ToolRegistry] = []
        self.fitter = RequestFitter(services.tokens, request_budget(settings, services.tokens))
        every_tool = [*workspace_tools, *chat_tools]
        self.agent = self._loop(every_tool, settings.max_tool_iterations)
        self.heartbeat_agent = self._loop(
            every_tool, settings.max_tool_iterations, self.heartbeat_model
        )
        # Background tasks work with the files only: no messages, no jobs, no more tasks.
        self.subagent = self._loop(workspace_tools, settings.subagent_max_iterations)
        history_budget = HistoryBudget(
            services.tokens,
            settings.history_max_tokens or min(24_000, self.fitter.max_tokens // 4),
            settings.history_window,
            max_summarised_tokens=self.fitter.max_tokens // 2,
        )
        self.consolidator = Consolidator(
            consolidation_model,
            self.workspace,
            stores.sessions,
            history_budget,
            timezone=settings.timezone,
            clock=clock,
        )
        self.starter = TurnStarter(
            stores.sessions,
            stores.journal,
            services.channel,
            ports.metrics,
            settings.history_window,
        )
        self.saver = TurnSaver(
            stores.sessions,
            stores.journal,
            self.meter,
            settings.saved_tool_result_max_chars,
            clock,
        )
        continuation = Continuation(stores.journal, services.queue)
        self.runner = AgentRunner(
            stores.journal, stores.stop_flags, continuation, self.saver, settings
        )
        # Live replies: the answer shown as it is written, in private chats.
        self.drafts = Drafts(services.channel, settings.stream_replies)
        self.commands = Commands(
            services.channel,
            stores.stop_flags,
            self.consolidator,
            self.meter,
            self.pairing,
            settings.owner,
        )

    def sandbox_programs(self) -> frozenset[str]:
        """The programs the sandbox's runs find: asked once per container. If it could not be
        asked, not again for a minute: one prompt checks every skill's `requires.bins`, and a
        sandbox that is down must not be called for each."""
        if self._sandbox_found is None and self._sandbox is not None:
            now = self.clock().timestamp()
            if now < self._sandbox_retry_at:
                return frozenset()
            try:
                self._sandbox_found = self._sandbox.programs()
            except ToolError as error:
                logger.warning("sandbox programs unknown: %s", error)
                self._sandbox_retry_at = now + SANDBOX_ASK_AGAIN_SECONDS
                return frozenset()
        return self._sandbox_found or frozenset()

    def enter_scope(self, subject: Subject) -> None:
        """Work for the job's subject (core/subjects.py): in its scope (its person's, its
        group's, or the owner's), answering in its chat, with the tools of the remote servers
        that chat may use and no others."""
        self._subject = subject
        self.workspace.enter(subject.scope)
        self.workspace.refresh()
        remote = self.remote.tools_for(subject.chat_id)
        for registry in self._registries:
            registry.offer(remote)

    @property
    def subject(self) -> Subject:
        """The subject of the job being run: its chat, topic, person and scope."""
        if self._subject is None:
            raise RuntimeError("no job is being run")
        return self._subject

    def _metered_or_main(self, model: ChatModel | None) -> ChatModel:
        return self.model if model is None else self.meter.metered(model)

    def _loop(
        self, tools: list[Tool], max_iterations: int, model: ChatModel | None = None
    ) -> AgentLoop:
        registry = ToolRegistry(tools)
        self._registries.append(registry)
        return AgentLoop(
            model or self.model,
            registry,
            max_iterations,
            tool_result_max_chars=self.settings.tool_result_max_chars,
            tool_hints=self.settings.send_tool_hints,
            fitter=self.fitter,
        )

    def runtime(self, chat_id: int, recalled: list[str] | None = None) -> RuntimeContext:
        """The runtime block of the request: the time, the chat, what recall found."""
        return RuntimeContext(
            self.clock(), self.settings.timezone, "telegram", str(chat_id), tuple(recalled or ())
        )

    def request_that_fits(
        self, history: SessionHistory, build: Callable[[list[Message]], list[Message]]
    ) -> list[Message]:
        """The turn's first request, `build` from the history: when it would not fit the
        model's window (the consolidation after an earlier turn failed, or a turn added a great
        deal), the oldest exchanges are summarised first, a slice at a time, and it is built
        again. What still does not fit, the request fitter leaves out."""
        request = build(history.messages)
        tools = self.agent.tool_definitions()
        for _ in range(BUDGET_CONSOLIDATIONS):
            if self.fitter.fits(request, tools) or not self.consolidator.due(history):
                break
            cursor = history.consolidated_upto
            consolidate_quietly(self.consolidator, history.key)
            fresh = self.ports.stores.sessions.load(history.key, self.settings.history_window)
            if fresh.consolidated_upto == cursor:
                break  # it failed: nothing more to try now
            history.messages, history.consolidated_upto = fresh.messages, fresh.consolidated_upto
            request = build(history.messages)
        return request

    def runtime_block(
        self,
        run: TurnRun,
        chat_id: int,
        recall_for: str | None = None,
        history: list[Message] | None = None,
    ) -> str:
        """The run's rendered runtime block: the one an earlier run of the turn recorded (so a
        continued turn sends the very request it sent before), else rendered now, with what
        recall finds for `recall_for`, and kept in the run's record. What a block of `history`
        (the messages the request sends) already states is left out: the standing lines
        (timezone, chat) it states alike, and the recalled entries it shows. When a request must
        then shed its oldest history to fit (`request_that_fits`), it may lack the standing
        lines for that one turn; the time is always there, and the next turn states them again."""
        if run.progress.context is None:
            earlier = earlier_blocks(history or [])
            recalled = self.recall.search(recall_for, "\n".join(earlier)) if recall_for else []
            run.progress.context = self.runtime(chat_id, recalled).render(earlier)
        return run.progress.context

    @contextmanager
    def scope(
        self, run: TurnRun, origin: TurnOrigin, *, quiet: bool = False
    ) -> Iterator[TurnScope]:
        """The run's chat, for the chat tools (cron, message, spawn) and the answer while it is
        open: the subject's chat and topic."""
        subject = self.subject
        self.current.scope = TurnScope(
            subject.chat_id,
            subject.thread_id,
            origin,
            run.outbox,
            quiet=quiet,
            turn_id=run.progress.turn_id,
        )
        try:
            yield self.current.scope
        finally:
            self.current.scope = None

    def deliver_reply(
        self, run: TurnRun, scope: TurnScope, outcome: TurnOutcome, *, voice: bool = False
    ) -> bool:
        """The final answer; with `voice` (the user spoke) and voice replies on, read aloud
        after it too. A turn a spending limit ended says so once (its turn is saved anyway)."""
        if outcome.limited is not None and not self.spend_notices.tell(run, scope, outcome.limited):
            return True
        speaker = self.speaker if voice else None
        journal = self.ports.stores.journal
        if not deliver_reply(journal, run, scope, outcome, more_follows=speaker is not None):
            return False
        if speaker is not None:
            send_voice_reply(speaker, run, scope, outcome.reply)
        return True


def request_budget(settings: AgentSettings, tokens: TokenCounter) -> int:
    """The most input tokens a request may have: the context window, less room for the reply
    and a margin for tokenizers that count a little differently from litellm's."""
    window = settings.context_window_tokens or tokens.context_window
    return max(window // 2, int(window * 0.95) - settings.llm_max_tokens)
