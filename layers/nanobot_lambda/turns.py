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
from nanobot_lambda.commands import StopFlags
from nanobot_lambda.consolidation import ConsolidationError, Consolidator
from nanobot_lambda.context import ContextBuilder, RuntimeContext
from nanobot_lambda.jobs import HeartbeatJob, TelegramUpdateJob
from nanobot_lambda.media import MediaResolver, Transcriber
from nanobot_lambda.model import ChatModel, ModelError
from nanobot_lambda.recall import HistoryRecall
from nanobot_lambda.sessions import SessionStore
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.skills import builtin_skill_files
from nanobot_lambda.telegram.client import TelegramBot, TelegramError
from nanobot_lambda.telegram.inbound import (
    Ignored,
    InboundMessage,
    addressed_to_bot,
    is_group_chat,
    to_inbound,
)
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
        stop_flags: StopFlags,
        environ: Mapping[str, str],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        transcriber: Transcriber | None = None,
    ) -> None:
        self._settings = settings
        self._workspace = workspace
        self._sessions = sessions
        self._bot = bot
        self._stop_flags = stop_flags
        self._clock = clock
        self._media = MediaResolver(bot, workspace, settings, transcriber)
        self._context = ContextBuilder(workspace, environ)
        self._recall = HistoryRecall(workspace, max_chars=settings.recall_max_chars)
        # The tools also see the built-in skills' files, read-only, where the summary says.
        builtins = {path: text.encode() for path, text in builtin_skill_files().items()}
        tool_view = WithBuiltinFiles(workspace, builtins)
        self._agent = AgentLoop(
            model,
            ToolRegistry(file_tools(tool_view)),
            settings.max_tool_iterations,
            tool_result_max_chars=settings.tool_result_max_chars,
            tool_hints=settings.send_tool_hints,
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
        update = Update.model_validate(job.update)
        inbound = to_inbound(update)
        if isinstance(inbound, Ignored):
            logger.info("queued update has nothing to answer: %s", inbound.reason)
            return
        log = {"update_id": inbound.update_id, "chat_id": inbound.chat_id}
        message = update.message
        assert message is not None  # to_inbound ignores updates without a message
        # Groups: the webhook queues every message (it cannot know the bot's username); only
        # those addressed to the bot get a turn. getMe is asked once per container, for groups.
        if is_group_chat(message):
            me = self._bot.get_me()
            policy = self._settings.group_policy
            if not addressed_to_bot(message, bot_id=me.id, bot_username=me.username, policy=policy):
                logger.info("group message not addressed to the bot: ignored", extra=log)
                return
        if inbound.command in ("start", "help"):
            self._deliver(inbound.chat_id, texts.load(inbound.command), inbound.thread_id)
            return
        if inbound.command == "new":
            self._new_session(inbound)
            return
        if inbound.command == "stop":
            # A turn that was stopped cleared the flag and told the user; a flag still here
            # means nothing was running.
            if self._stop_flags.clear(inbound.session_key):
                self._deliver(inbound.chat_id, texts.load("nothing_to_stop"), inbound.thread_id)
            return
        logger.info("turn started", extra=log)
        with self._bot.typing(inbound.chat_id, thread_id=inbound.thread_id):
            # Files are fetched, stored and transcribed while "typing…" shows.
            content = self._media.resolve(message, inbound.chat_id)
            history = self._sessions.load(inbound.session_key, self._settings.history_window)
            recalled = self._recall.search(content.saved_text)
            request = self._context.messages(
                history.messages, content.model_content, self._runtime(inbound.chat_id, recalled)
            )
            outcome = self._run_agent(request, inbound, log)
        if outcome is None:
            return
        if outcome.stopped:
            self._stop_flags.clear(inbound.session_key)
        if not self._deliver(inbound.chat_id, outcome.reply, inbound.thread_id):
            return
        saved_limit = self._settings.saved_tool_result_max_chars
        saved = [
            self._user_message(inbound, content.saved_text),
            *(for_saving(message, saved_limit) for message in outcome.new_messages),
        ]
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
        def progress(text: str) -> None:
            self._deliver(inbound.chat_id, text, inbound.thread_id)

        def stop_requested() -> bool:
            # Any flag counts: /stop is queued behind the turns it should stop, and it clears
            # the flag when it is processed; a leaked flag expires within the hour.
            return self._stop_flags.requested_since(inbound.session_key, 0)

        try:
            return self._agent.run(
                request,
                on_progress=progress if self._settings.send_progress else None,
                should_stop=stop_requested,
            )
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

    def _user_message(self, inbound: InboundMessage, text: str) -> dict[str, Any]:
        """The user message as saved: its text (with placeholders for files, never their
        bytes), without the runtime-context block."""
        return {
            "role": "user",
            "content": text,
            "ts": self._clock().isoformat(timespec="seconds"),
            "message_id": inbound.message_id,
            "update_id": inbound.update_id,
        }
