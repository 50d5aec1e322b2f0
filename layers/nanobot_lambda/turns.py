"""agent_turn's logic: take one queued job, run the agent, reply in Telegram, save the turn.

Jobs: a Telegram message; the heartbeat; a scheduled task (cron); a background task
(subagent, started with the spawn tool); and the announcement of a finished background task to
its chat. Each runs with a `TurnScope` (whose chat, which thread, what kind of turn) that the
chat tools (cron, message, spawn) act within.

The reply is sent before the turn is saved: if sending fails the job is retried by SQS and the
session holds no answer the user never saw. A model failure gets the user a short apology and
saves nothing, so the user can simply send the message again. Memory consolidation runs after
the reply is out, so the user never waits for it; if it fails it is retried on a later turn.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from nanobot_lambda import heartbeat, texts
from nanobot_lambda.agent import AgentLoop, TurnOutcome, for_saving
from nanobot_lambda.commands import StopFlags
from nanobot_lambda.consolidation import ConsolidationError, Consolidator
from nanobot_lambda.context import ContextBuilder, RuntimeContext
from nanobot_lambda.cronjobs import JobStore, ScheduleClient
from nanobot_lambda.jobs import (
    AnnouncementJob,
    AnyJob,
    CronTaskJob,
    HeartbeatJob,
    SubagentJob,
    TelegramUpdateJob,
    TurnQueue,
)
from nanobot_lambda.media import MediaResolver, Transcriber
from nanobot_lambda.model import ChatModel, ModelError
from nanobot_lambda.recall import HistoryRecall
from nanobot_lambda.sessions import SessionHistory, SessionStore
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.skills import builtin_skill_files
from nanobot_lambda.telegram.client import TelegramBot, TelegramError
from nanobot_lambda.telegram.inbound import (
    Ignored,
    InboundMessage,
    addressed_to_bot,
    is_group_chat,
    session_key_for,
    to_inbound,
)
from nanobot_lambda.telegram.models import Update
from nanobot_lambda.tools import Tool, ToolRegistry
from nanobot_lambda.tools.chat import (
    CronTool,
    CurrentTurn,
    MessageTool,
    SpawnTool,
    TurnOrigin,
    TurnScope,
)
from nanobot_lambda.tools.files import file_tools
from nanobot_lambda.workspace import WithBuiltinFiles, Workspace

logger = logging.getLogger(__name__)

BLOCKED_STATUS = 403


def agent_tools(
    settings: AgentSettings,
    current: CurrentTurn,
    workspace: Workspace,
    jobs: JobStore,
    schedules: ScheduleClient,
    queue: TurnQueue,
    bot: TelegramBot,
    clock: Callable[[], datetime],
) -> tuple[list[Tool], list[Tool]]:
    """The agent's tools: (workspace tools, chat tools). The benchmarks count these schemas."""
    # The file tools also see the built-in skills' files, read-only, where the summary says.
    builtins = {path: text.encode() for path, text in builtin_skill_files().items()}
    workspace_tools = file_tools(WithBuiltinFiles(workspace, builtins))
    chat_tools: list[Tool] = [
        CronTool(current, jobs, schedules, timezone=settings.timezone, clock=clock),
        MessageTool(current, bot, settings.allow_from),
        SpawnTool(
            current,
            queue,
            lambda chat_id: jobs.running_subagents(chat_id, now=int(time.time())),
            max_running=settings.max_subagents,
            on_spawn=lambda job: jobs.start_subagent(
                job.chat_id, job.subagent_id, now=int(time.time())
            ),
        ),
    ]
    return workspace_tools, chat_tools


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
        jobs: JobStore,
        schedules: ScheduleClient,
        queue: TurnQueue,
        environ: Mapping[str, str],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        transcriber: Transcriber | None = None,
    ) -> None:
        self._settings = settings
        self._workspace = workspace
        self._sessions = sessions
        self._model = model
        self._bot = bot
        self._stop_flags = stop_flags
        self._jobs = jobs
        self._queue = queue
        self._clock = clock
        self._current = CurrentTurn()
        self._remembered_private_chat: int | None = None
        self._media = MediaResolver(bot, workspace, settings, transcriber)
        self._context = ContextBuilder(workspace, environ)
        self._recall = HistoryRecall(workspace, max_chars=settings.recall_max_chars)
        workspace_tools, chat_tools = agent_tools(
            settings, self._current, workspace, jobs, schedules, queue, bot, clock
        )
        self._agent = self._loop([*workspace_tools, *chat_tools], settings.max_tool_iterations)
        # Background tasks work with the files only: no messages, no jobs, no more tasks.
        self._subagent = self._loop(workspace_tools, settings.subagent_max_iterations)
        self._consolidator = Consolidator(
            model,
            workspace,
            sessions,
            window=settings.history_window,
            timezone=settings.timezone,
            clock=clock,
        )

    def _loop(self, tools: list[Tool], max_iterations: int) -> AgentLoop:
        return AgentLoop(
            self._model,
            ToolRegistry(tools),
            max_iterations,
            tool_result_max_chars=self._settings.tool_result_max_chars,
            tool_hints=self._settings.send_tool_hints,
        )

    def process(self, job: AnyJob) -> None:
        self._workspace.refresh()
        if isinstance(job, TelegramUpdateJob):
            self._telegram_turn(job)
        elif isinstance(job, HeartbeatJob):
            self._heartbeat_turn(job)
        elif isinstance(job, CronTaskJob):
            self._cron_task_turn(job)
        elif isinstance(job, SubagentJob):
            self._subagent_turn(job)
        else:
            self._announcement_turn(job)

    @contextmanager
    def _scope(
        self, chat_id: int, thread_id: int | None, origin: TurnOrigin
    ) -> Iterator[TurnScope]:
        self._current.scope = TurnScope(chat_id, thread_id, origin)
        try:
            yield self._current.scope
        finally:
            self._current.scope = None

    def _runtime(self, chat_id: int, recalled: list[str] | None = None) -> RuntimeContext:
        return RuntimeContext(
            self._clock(),
            self._settings.timezone,
            "telegram",
            str(chat_id),
            tuple(recalled or ()),
        )

    # -- a Telegram message ----------------------------------------------------------------

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
        elif inbound.chat_type == "private":
            self._remember_private_chat(inbound.chat_id)
        if self._command(inbound):
            return
        logger.info("turn started", extra=log)
        with (
            self._scope(inbound.chat_id, inbound.thread_id, "user") as scope,
            self._bot.typing(inbound.chat_id, thread_id=inbound.thread_id),
        ):
            # Files are fetched, stored and transcribed while "typing…" shows.
            content = self._media.resolve(message, inbound.chat_id)
            history = self._sessions.load(inbound.session_key, self._settings.history_window)
            recalled = self._recall.search(content.saved_text)
            request = self._context.messages(
                history.messages, content.model_content, self._runtime(inbound.chat_id, recalled)
            )
            outcome = self._run_agent(self._agent, request, scope, log)
        if outcome is None:
            return
        if outcome.stopped:
            self._stop_flags.clear(inbound.session_key)
        if not self._deliver_reply(scope, outcome.reply):
            return
        self._save(history, self._user_message(content.saved_text, inbound), outcome)
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

    def _command(self, inbound: InboundMessage) -> bool:
        """Handle /start, /help, /new, /stop; True when the message was one of them."""
        command = inbound.command
        if command in ("start", "help"):
            self._deliver(inbound.chat_id, texts.load(command), inbound.thread_id)
        elif command == "new":
            self._new_session(inbound)
        elif command == "stop":
            # A turn that was stopped cleared the flag and told the user; a flag still here
            # means nothing was running.
            if self._stop_flags.clear(inbound.session_key):
                self._deliver(inbound.chat_id, texts.load("nothing_to_stop"), inbound.thread_id)
        else:
            return False
        return True

    def _remember_private_chat(self, chat_id: int) -> None:
        """Note the owner's private chat for the heartbeat (once per container and chat)."""
        if self._remembered_private_chat != chat_id:
            self._jobs.remember_private_chat(chat_id)
            self._remembered_private_chat = chat_id

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

    # -- scheduled and background work -----------------------------------------------------

    def _heartbeat_turn(self, job: HeartbeatJob) -> None:
        """Decide whether a standing task is due; if so run it in a throwaway session and
        report only if there is news."""
        runtime = self._runtime(job.chat_id)
        try:
            tasks = heartbeat.due_tasks(self._model, job.tasks, runtime)
        except ModelError as error:
            logger.error("heartbeat decision failed: %s", error)
            return
        if tasks is None:
            return
        request = self._context.messages([], texts.render("heartbeat_turn", tasks=tasks), runtime)
        with self._scope(job.chat_id, None, "heartbeat") as scope:
            outcome = self._run_agent(self._agent, request, scope, {}, apologise=False)
            if outcome is None or heartbeat.nothing_to_report(outcome.reply):
                logger.info("heartbeat: nothing to report")
                return
            self._deliver_reply(scope, outcome.reply)

    def _cron_task_turn(self, job: CronTaskJob) -> None:
        """A scheduled task, in its own session `cron:<job id>`; its report goes to the chat."""
        key = f"cron:{job.job_id}"
        history = self._sessions.load(key, self._settings.history_window)
        prompt = texts.render("cron_task", name=job.name, message=job.message)
        request = self._context.messages(history.messages, prompt, self._runtime(job.chat_id))
        log = {"job_id": job.job_id, "chat_id": job.chat_id}
        with self._scope(job.chat_id, job.thread_id, "cron") as scope:
            outcome = self._run_agent(self._agent, request, scope, log, apologise=False)
            status = "failed: model unavailable" if outcome is None else "done"
            if outcome is not None and self._deliver_reply(scope, outcome.reply):
                self._save(history, {"role": "user", "content": prompt}, outcome)
        record = self._jobs.get(job.chat_id, job.job_id)
        if record is not None:
            self._jobs.record_run(
                record, at=self._clock().isoformat(timespec="seconds"), status=status
            )

    def _subagent_turn(self, job: SubagentJob) -> None:
        """A background task: run it with the file tools, then hand the result to its chat."""
        prompt = texts.render("subagent_task", label=job.label, task=job.task)
        request = self._context.messages([], prompt, self._runtime(job.chat_id))
        log = {"subagent_id": job.subagent_id, "chat_id": job.chat_id}
        with self._scope(job.chat_id, job.thread_id, "subagent") as scope:
            outcome = self._run_agent(self._subagent, request, scope, log, apologise=False)
        succeeded = outcome is not None and not outcome.hit_iteration_limit
        result = outcome.reply if outcome is not None else texts.load("model_error")
        announcement = AnnouncementJob(
            subagent_id=job.subagent_id,
            chat_id=job.chat_id,
            thread_id=job.thread_id,
            label=job.label,
            succeeded=succeeded,
            result=result,
        )
        # Into the chat's own queue order, after whatever the user said meanwhile.
        self._queue.enqueue(
            announcement,
            group=session_key_for(job.chat_id, job.thread_id),
            dedup_id=f"announce-{job.subagent_id}",
        )
        self._jobs.finish_subagent(job.chat_id, job.subagent_id)
        logger.info("background task finished", extra={**log, "succeeded": succeeded})

    def _announcement_turn(self, job: AnnouncementJob) -> None:
        """The chat's agent hears what a background task did and tells the user itself."""
        key = session_key_for(job.chat_id, job.thread_id)
        note = texts.render(
            "announcement",
            label=job.label,
            outcome="finished" if job.succeeded else "did not finish",
            result=job.result,
        )
        history = self._sessions.load(key, self._settings.history_window)
        request = self._context.messages(history.messages, note, self._runtime(job.chat_id))
        log = {"subagent_id": job.subagent_id, "chat_id": job.chat_id}
        with self._scope(job.chat_id, job.thread_id, "announcement") as scope:
            outcome = self._run_agent(self._agent, request, scope, log, apologise=False)
            if outcome is None:
                raise ModelError("announcement could not be told")  # SQS retries it
            if self._deliver_reply(scope, outcome.reply):
                self._save(history, {"role": "user", "content": note}, outcome)

    # -- shared ------------------------------------------------------------------------------

    def _run_agent(
        self,
        loop: AgentLoop,
        request: list[dict[str, Any]],
        scope: TurnScope,
        log: dict[str, Any],
        *,
        apologise: bool = True,
    ) -> TurnOutcome | None:
        def progress(text: str) -> None:
            self._deliver(scope.chat_id, text, scope.thread_id)

        session_key = session_key_for(scope.chat_id, scope.thread_id)

        def stop_requested() -> bool:
            # Any flag counts: /stop is queued behind the turns it should stop, and it clears
            # the flag when it is processed; a leaked flag expires within the hour.
            return scope.origin == "user" and self._stop_flags.requested_since(session_key, 0)

        show_progress = self._settings.send_progress and scope.origin != "subagent"
        try:
            return loop.run(
                request,
                on_progress=progress if show_progress else None,
                should_stop=stop_requested,
            )
        except ModelError as error:
            logger.error("model call failed: %s", error, extra=log)
            if apologise:
                self._deliver(scope.chat_id, texts.load("model_error"), scope.thread_id)
            return None

    def _deliver_reply(self, scope: TurnScope, text: str) -> bool:
        """The turn's final answer, unless the message tool already sent this very text here."""
        if (scope.chat_id, text.strip()) in scope.sent:
            logger.info("final answer already sent with the message tool")
            return True
        return self._deliver(scope.chat_id, text, scope.thread_id)

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

    def _save(self, history: SessionHistory, first: dict[str, Any], outcome: TurnOutcome) -> None:
        limit = self._settings.saved_tool_result_max_chars
        first = {**first, "ts": self._clock().isoformat(timespec="seconds")}
        saved = [first, *(for_saving(message, limit) for message in outcome.new_messages)]
        self._sessions.append(history, saved)

    def _consolidate_quietly(self, key: str) -> None:
        """Consolidate after the turn is answered and saved: a failure must not fail the job,
        or SQS would run the whole turn again and the user would get the reply twice."""
        try:
            self._consolidator.consolidate(key)
        except ConsolidationError as error:
            logger.warning("consolidation failed, will retry later: %s", error)
        except Exception:
            logger.exception("consolidation failed unexpectedly, will retry later")

    def _user_message(self, text: str, inbound: InboundMessage) -> dict[str, Any]:
        """The user message as saved: its text (with placeholders for files, never their
        bytes), without the runtime-context block."""
        return {
            "role": "user",
            "content": text,
            "message_id": inbound.message_id,
            "update_id": inbound.update_id,
        }
