"""agent_turn's logic: take one queued job, run the agent, reply in Telegram, save the turn.

The reply is sent before the turn is saved: if sending fails the job is retried by SQS and the
session holds no answer the user never saw. A model failure gets the user a short apology and
saves nothing, so the user can simply send the message again. Memory consolidation runs after
the reply is out, so the user never waits for it; if it fails it is retried on a later turn.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from nanobot_lambda import texts
from nanobot_lambda.agent import AgentLoop, TurnOutcome, for_saving
from nanobot_lambda.consolidation import ConsolidationError, Consolidator
from nanobot_lambda.context import ContextBuilder, RuntimeContext
from nanobot_lambda.jobs import HeartbeatJob, TelegramUpdateJob
from nanobot_lambda.model import ChatModel, ModelError
from nanobot_lambda.recall import HistoryRecall
from nanobot_lambda.sessions import SessionStore
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.skills import builtin_skill_files
from nanobot_lambda.telegram.client import TelegramBot, TelegramError
from nanobot_lambda.telegram.inbound import Ignored, InboundMessage, to_inbound
from nanobot_lambda.telegram.models import Update
from nanobot_lambda.tools import ToolRegistry
from nanobot_lambda.tools.files import file_tools
from nanobot_lambda.workspace import WithBuiltinFiles, Workspace

logger = logging.getLogger(__name__)

HEARTBEAT_OK = "HEARTBEAT_OK"
BLOCKED_STATUS = 403


class TurnService:
    def __init__(
        self,
        settings: AgentSettings,
        *,
        workspace: Workspace,
        sessions: SessionStore,
        model: ChatModel,
        bot: TelegramBot,
        environ: Mapping[str, str],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._settings = settings
        self._workspace = workspace
        self._sessions = sessions
        self._bot = bot
        self._clock = clock
        self._context = ContextBuilder(workspace, environ)
        self._recall = HistoryRecall(workspace, max_chars=settings.recall_max_chars)
        # The tools also see the built-in skills' files, read-only, where the summary says.
        builtins = {path: text.encode() for path, text in builtin_skill_files().items()}
        tool_view = WithBuiltinFiles(workspace, builtins)
        self._agent = AgentLoop(
            model, ToolRegistry(file_tools(tool_view)), settings.max_tool_iterations
        )
        self._consolidator = Consolidator(
            model,
            workspace,
            sessions,
            window=settings.history_window,
            timezone=settings.timezone,
            clock=clock,
        )

    def process(self, job: TelegramUpdateJob | HeartbeatJob) -> None:
        self._workspace.refresh()
        if isinstance(job, TelegramUpdateJob):
            self._telegram_turn(job)
        else:
            self._heartbeat_turn(job)

    def _runtime(self, chat_id: int, recalled: list[str] | None = None) -> RuntimeContext:
        return RuntimeContext(
            self._clock(),
            self._settings.timezone,
            "telegram",
            str(chat_id),
            tuple(recalled or ()),
        )

    def _telegram_turn(self, job: TelegramUpdateJob) -> None:
        inbound = to_inbound(Update.model_validate(job.update))
        if isinstance(inbound, Ignored):
            logger.info("queued update has nothing to answer: %s", inbound.reason)
            return
        log = {"update_id": inbound.update_id, "chat_id": inbound.chat_id}
        if inbound.command == "new":
            self._new_session(inbound)
            return
        logger.info("turn started", extra=log)
        with self._bot.typing(inbound.chat_id, thread_id=inbound.thread_id):
            history = self._sessions.load(inbound.session_key, self._settings.history_window)
            recalled = self._recall.search(inbound.text)
            request = self._context.messages(
                history.messages, inbound.text, self._runtime(inbound.chat_id, recalled)
            )
            outcome = self._run_agent(request, inbound, log)
        if outcome is None:
            return
        if not self._deliver(inbound.chat_id, outcome.reply, inbound.thread_id):
            return
        saved = [self._user_message(inbound), *map(for_saving, outcome.new_messages)]
        self._sessions.append(history, saved)
        logger.info(
            "turn finished",
            extra={
                **log,
                "iterations": outcome.iterations,
                "tool_calls": outcome.tool_calls,
                "recalled": len(recalled),
                "prompt_tokens": outcome.usage.prompt_tokens,
                "completion_tokens": outcome.usage.completion_tokens,
            },
        )
        if self._consolidator.due(history):
            self._consolidate_quietly(inbound.session_key)

    def _consolidate_quietly(self, key: str) -> None:
        """Consolidate after the turn is answered and saved: a failure must not fail the job,
        or SQS would run the whole turn again and the user would get the reply twice."""
        try:
            self._consolidator.consolidate(key)
        except ConsolidationError as error:
            logger.warning("consolidation failed, will retry later: %s", error)
        except Exception:
            logger.exception("consolidation failed unexpectedly, will retry later")

    def _new_session(self, inbound: InboundMessage) -> None:
        """/new: archive the conversation into memory, then start afresh; keep it on failure."""
        with self._bot.typing(inbound.chat_id, thread_id=inbound.thread_id):
            try:
                self._consolidator.consolidate(inbound.session_key, everything=True)
            except ConsolidationError as error:
                logger.warning("/new: archiving failed, session kept: %s", error)
                self._deliver(inbound.chat_id, texts.load("new_session_failed"), inbound.thread_id)
                return
        self._deliver(inbound.chat_id, texts.load("new_session"), inbound.thread_id)

    def _run_agent(
        self, request: list[dict[str, Any]], inbound: InboundMessage, log: dict[str, Any]
    ) -> TurnOutcome | None:
        try:
            return self._agent.run(request)
        except ModelError as error:
            logger.error("model call failed: %s", error, extra=log)
            self._deliver(inbound.chat_id, texts.load("model_error"), inbound.thread_id)
            return None

    def _deliver(self, chat_id: int, text: str, thread_id: int | None = None) -> bool:
        """Send a reply; False when the user blocked the bot (nothing to retry)."""
        try:
            self._bot.send_text(chat_id, text, thread_id=thread_id)
        except TelegramError as error:
            if error.status == BLOCKED_STATUS:
                logger.warning("chat %s blocked the bot; reply dropped", chat_id)
                return False
            raise
        return True

    def _heartbeat_turn(self, job: HeartbeatJob) -> None:
        """Run the heartbeat tasks in a throwaway session; report only if there is news."""
        request = self._context.messages(
            [], texts.render("heartbeat_turn", tasks=job.tasks), self._runtime(job.chat_id)
        )
        try:
            outcome = self._agent.run(request)
        except ModelError as error:
            logger.error("heartbeat model call failed: %s", error)
            return
        if HEARTBEAT_OK in outcome.reply:
            logger.info("heartbeat: nothing to report")
            return
        self._deliver(job.chat_id, outcome.reply)

    def _user_message(self, inbound: InboundMessage) -> dict[str, Any]:
        """The user message as saved: the text without the runtime-context block."""
        return {
            "role": "user",
            "content": inbound.text,
            "ts": self._clock().isoformat(timespec="seconds"),
            "message_id": inbound.message_id,
            "update_id": inbound.update_id,
        }
