"""Everything a turn is made of, built once per container from the settings and the ports.

The job kinds' turns (messages.py, scheduled.py, background.py) take what they need from here:
the prompt's parts, the agent loops and their tools, the steps every turn shares (start, run,
deliver, save), and the slot that tells the chat tools which turn they act for. What belongs to
one run of a turn is in its `TurnRun`, never here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime

from nanobot_lambda.adapters.telegram.media import MediaResolver
from nanobot_lambda.core.agent import AgentLoop, TurnOutcome
from nanobot_lambda.core.consolidation import Consolidator
from nanobot_lambda.core.context import ContextBuilder, RuntimeContext
from nanobot_lambda.core.recall import HistoryRecall
from nanobot_lambda.core.tools import Tool, ToolRegistry
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.entry.agent_turn.commands import Commands
from nanobot_lambda.entry.agent_turn.continuation import Continuation
from nanobot_lambda.entry.agent_turn.delivery import deliver_reply
from nanobot_lambda.entry.agent_turn.drafts import Drafts
from nanobot_lambda.entry.agent_turn.ports import TurnPorts
from nanobot_lambda.entry.agent_turn.run import TurnRun, TurnStarter
from nanobot_lambda.entry.agent_turn.running import AgentRunner
from nanobot_lambda.entry.agent_turn.saving import TurnSaver
from nanobot_lambda.entry.agent_turn.toolbox import agent_tools
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.chat import CurrentTurn, TurnOrigin, TurnScope


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
        self.meter = UsageMeter(stores.usage, ports.metrics, clock=clock)
        self.model = self.meter.metered(services.model)
        self.context = ContextBuilder(stores.workspace, environ)  # skills check `requires.env`
        self.recall = HistoryRecall(stores.workspace, max_chars=settings.recall_max_chars)
        self.media = MediaResolver(services.media, stores.workspace, settings, services.transcriber)
        self.current = CurrentTurn()
        self.remembered_private_chat: int | None = None  # a write saved per container
        workspace_tools, chat_tools = agent_tools(
            settings,
            self.current,
            stores.workspace,
            stores.jobs,
            services.schedules,
            services.queue,
            clock,
        )
        self.agent = self._loop([*workspace_tools, *chat_tools], settings.max_tool_iterations)
        # Background tasks work with the files only: no messages, no jobs, no more tasks.
        self.subagent = self._loop(workspace_tools, settings.subagent_max_iterations)
        self.consolidator = Consolidator(
            self.model,
            stores.workspace,
            stores.sessions,
            window=settings.history_window,
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
        continuation = Continuation(stores.journal, services.queue, settings.max_continuations)
        self.runner = AgentRunner(stores.journal, stores.stop_flags, continuation, settings)
        self.saver = TurnSaver(
            stores.sessions,
            stores.journal,
            self.meter,
            settings.saved_tool_result_max_chars,
            clock,
        )
        # Live replies: the answer shown as it is written, in private chats.
        self.drafts = Drafts(services.channel, settings.stream_replies)
        self.commands = Commands(services.channel, stores.stop_flags, self.consolidator, self.meter)

    def _loop(self, tools: list[Tool], max_iterations: int) -> AgentLoop:
        return AgentLoop(
            self.model,
            ToolRegistry(tools),
            max_iterations,
            tool_result_max_chars=self.settings.tool_result_max_chars,
            tool_hints=self.settings.send_tool_hints,
        )

    def runtime(self, chat_id: int, recalled: list[str] | None = None) -> RuntimeContext:
        """The runtime block of the request: the time, the chat, what recall found."""
        return RuntimeContext(
            self.clock(), self.settings.timezone, "telegram", str(chat_id), tuple(recalled or ())
        )

    @contextmanager
    def scope(
        self, run: TurnRun, chat_id: int, thread_id: int | None, origin: TurnOrigin
    ) -> Iterator[TurnScope]:
        """The run's chat, for the chat tools (cron, message, spawn) while it is open."""
        self.current.scope = TurnScope(chat_id, thread_id, origin, run.outbox)
        try:
            yield self.current.scope
        finally:
            self.current.scope = None

    def deliver_reply(self, run: TurnRun, scope: TurnScope, outcome: TurnOutcome) -> bool:
        return deliver_reply(self.ports.stores.journal, run, scope, outcome)
