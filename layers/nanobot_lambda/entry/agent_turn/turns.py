"""agent_turn's logic: take one queued job, run the agent, reply in Telegram, save the turn.

Jobs: a Telegram message; the heartbeat; a scheduled task (cron); a background task
(subagent, started with the spawn tool); and the announcement of a finished background task to
its chat. Each runs with a `TurnScope` (whose chat, which thread, what kind of turn) that the
chat tools (cron, message, spawn) act within.

The reply is sent before the turn is saved: if sending fails the job is retried by SQS and the
session holds no answer the user never saw. A model failure gets the user a short apology and
saves nothing, so the user can simply send the message again. Memory consolidation runs after
the reply is out, so the user never waits for it; if it fails it is retried on a later turn.

Exactly once: each turn has an id from its job and a journal (journal.py). A job delivered
again after its turn was saved is skipped; a turn cut short (a crash, an error SQS retries, the
end of the Lambda invocation) resumes from its last completed iteration, and messages it already
sent are not sent again (outbox.py). Near the invocation's time limit the turn records where it
is, tells the user it is still working, and queues a continuation of itself.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.adapters.telegram.inbound import (
    Ignored,
    InboundMessage,
    addressed_to_bot,
    is_group_chat,
    session_key_for,
    to_inbound,
)
from nanobot_lambda.adapters.telegram.media import MediaResolver
from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.adapters.web.netguard import FetchLimits
from nanobot_lambda.core import heartbeat, telemetry, texts
from nanobot_lambda.core.agent import AgentLoop, Resume, TurnOutcome, for_saving
from nanobot_lambda.core.consolidation import ConsolidationError, Consolidator
from nanobot_lambda.core.context import ContextBuilder, RuntimeContext
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.heartbeat import HEARTBEAT_GROUP
from nanobot_lambda.core.jobs import (
    AnnouncementJob,
    AnyJob,
    ContinuationJob,
    CronTaskJob,
    HeartbeatJob,
    StartJob,
    SubagentJob,
    TelegramUpdateJob,
)
from nanobot_lambda.core.journal import TurnProgress, progress_in
from nanobot_lambda.core.ports import (
    ChatModel,
    JobStore,
    MetricsPort,
    Schedules,
    SessionStore,
    StopFlags,
    Transcriber,
    TurnJournal,
    TurnQueue,
    Workspace,
)
from nanobot_lambda.core.recall import HistoryRecall
from nanobot_lambda.core.sessions import SessionConflict, SessionHistory
from nanobot_lambda.core.skills import builtin_skill_files
from nanobot_lambda.core.tools import Tool, ToolRegistry
from nanobot_lambda.core.usage import UsageMeter
from nanobot_lambda.core.workspace import WithBuiltinFiles
from nanobot_lambda.entry.agent_turn.outbox import JournaledOutbox, deliver
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.chat import (
    CronTool,
    CurrentTurn,
    MessageTool,
    SpawnTool,
    TurnOrigin,
    TurnScope,
)
from nanobot_lambda.tools.files import file_tools
from nanobot_lambda.tools.web import web_tools

logger = logging.getLogger(__name__)

RemainingMillis = Callable[[], int]
SAVE_ATTEMPTS = 3


class TurnSuspended(Exception):
    """The turn was recorded and continues in another invocation: nothing more to do here."""


@dataclass
class TurnRun:
    """One run of a turn: its job, its FIFO group, and where its journal item lives."""

    job: StartJob
    group: str
    journal_key: str
    progress: TurnProgress
    outbox: JournaledOutbox


def agent_tools(
    settings: AgentSettings,
    current: CurrentTurn,
    workspace: Workspace,
    jobs: JobStore,
    schedules: Schedules,
    queue: TurnQueue,
    clock: Callable[[], datetime],
) -> tuple[list[Tool], list[Tool]]:
    """The agent's tools: (workspace tools, chat tools). The benchmarks count these schemas.

    Workspace tools (files and web) are also what background tasks get; chat tools act on chats.
    """
    # The file tools also see the built-in skills' files, read-only, where the summary says.
    builtins = {path: text.encode() for path, text in builtin_skill_files().items()}
    workspace_tools = file_tools(WithBuiltinFiles(workspace, builtins))
    workspace_tools += web_tools(
        search_provider=settings.web_search_provider,
        search_api_key=(
            settings.web_search_api_key.get_secret_value() if settings.web_search_api_key else None
        ),
        search_api_base=settings.web_search_api_base,
        allow_networks=settings.web_fetch_allow_networks,
        limits=FetchLimits(settings.web_fetch_max_bytes, settings.web_fetch_timeout_seconds),
        result_max_chars=settings.tool_result_max_chars,
    )
    chat_tools: list[Tool] = [
        CronTool(current, jobs, schedules, timezone=settings.timezone, clock=clock),
        MessageTool(current, settings.allow_from),
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
        schedules: Schedules,
        queue: TurnQueue,
        journal: TurnJournal,
        environ: Mapping[str, str],
        usage: UsageMeter,
        metrics: MetricsPort,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        transcriber: Transcriber | None = None,
    ) -> None:
        model = usage.metered(model)  # every model call is counted for the job's chat
        self._usage = usage
        self._metrics = metrics
        self._settings = settings
        self._workspace = workspace
        self._sessions = sessions
        self._model = model
        self._bot = bot
        self._stop_flags = stop_flags
        self._jobs = jobs
        self._queue = queue
        self._journal = journal
        self._clock = clock
        self._remaining_ms: RemainingMillis | None = None
        self._current = CurrentTurn()
        self._remembered_private_chat: int | None = None
        self._media = MediaResolver(bot, workspace, settings, transcriber)
        self._context = ContextBuilder(workspace, environ)
        self._recall = HistoryRecall(workspace, max_chars=settings.recall_max_chars)
        workspace_tools, chat_tools = agent_tools(
            settings, self._current, workspace, jobs, schedules, queue, clock
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

    def process(self, job: AnyJob, remaining_ms: RemainingMillis | None = None) -> None:
        """Run the job's turn; `remaining_ms` is the invocation's time left (Lambda context).
        What its model calls use is counted for the job's chat."""
        with self._usage.job(job):
            self._process(job, remaining_ms)

    def _process(self, job: AnyJob, remaining_ms: RemainingMillis | None) -> None:
        self._remaining_ms = remaining_ms
        self._workspace.refresh()
        if isinstance(job, ContinuationJob):
            logger.info("continuing a turn", extra={"part": job.part, "job_kind": job.job.kind})
            job = job.job
        try:
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
        except TurnSuspended:
            return

    def give_up(self, job: AnyJob) -> None:
        """The job failed for the last time (it goes to the dead-letter queue): tell the chat
        once, if a person is waiting for it. Never raises."""
        if isinstance(job, ContinuationJob):
            job = job.job
        target: tuple[int, int | None] | None = None
        if isinstance(job, TelegramUpdateJob):
            inbound = to_inbound(Update.model_validate(job.update))
            if not isinstance(inbound, Ignored):
                target = (inbound.chat_id, inbound.thread_id)
        elif isinstance(job, CronTaskJob | SubagentJob):
            target = (job.chat_id, job.thread_id)
        if target is None:
            return
        try:
            deliver(self._bot, target[0], texts.load("could_not_process"), target[1])
        except Exception as error:
            logger.error("could not tell the chat its message failed (%s)", type(error).__name__)

    def _begin(
        self,
        job: StartJob,
        *,
        turn_id: str,
        group: str,
        journal_key: str,
        history: SessionHistory | None,
    ) -> TurnRun | None:
        """The turn's run, resumed from its journal; None when the turn was done before."""
        if history is not None:
            if turn_id in history.recent_turns:
                logger.info("turn already done: repeated delivery skipped", extra={"turn": turn_id})
                telemetry.duplicate_suppressed(self._metrics)
                return None
            progress = progress_in(history, turn_id)
        else:
            progress = self._journal.get(journal_key, turn_id)
            if progress.done:
                logger.info("turn already done: repeated delivery skipped", extra={"turn": turn_id})
                telemetry.duplicate_suppressed(self._metrics)
                return None
        if progress.resumed:
            logger.info(
                "turn resumed",
                extra={
                    "turn": turn_id,
                    "iterations": progress.iterations,
                    "sent": len(progress.sent),
                },
            )
        outbox = JournaledOutbox(self._bot, self._journal, journal_key, progress)
        return TurnRun(job, group, journal_key, progress, outbox)

    def _begin_in_session(
        self, job: StartJob, turn_id: str, key: str
    ) -> tuple[SessionHistory, TurnRun | None]:
        """A turn saved into session `key`, which is also its FIFO group: the history and the
        turn's journal come from one Query."""
        history = self._sessions.load(key, self._settings.history_window)
        run = self._begin(job, turn_id=turn_id, group=key, journal_key=key, history=history)
        return history, run

    @contextmanager
    def _scope(
        self, chat_id: int, thread_id: int | None, origin: TurnOrigin, outbox: JournaledOutbox
    ) -> Iterator[TurnScope]:
        self._current.scope = TurnScope(chat_id, thread_id, origin, outbox)
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
        key = inbound.session_key
        history, run = self._begin_in_session(job, f"update-{inbound.update_id}", key)
        if run is None:
            return
        logger.info("turn started", extra=log)
        with (
            self._scope(inbound.chat_id, inbound.thread_id, "user", run.outbox) as scope,
            self._bot.typing(inbound.chat_id, thread_id=inbound.thread_id),
        ):
            # Files are fetched, stored and transcribed while "typing…" shows.
            content = self._media.resolve(message, inbound.chat_id)
            for notice in content.notices:  # e.g. a file too large to fetch: told at once
                run.outbox.send(inbound.chat_id, notice, inbound.thread_id)
            recalled = self._recall.search(content.saved_text)
            request = self._context.messages(
                history.messages, content.model_content, self._runtime(inbound.chat_id, recalled)
            )
            outcome = self._run_agent(self._agent, request, scope, log, run)
        if outcome is None:
            return
        if outcome.stopped:
            self._stop_flags.clear(key)
        if not self._deliver_reply(scope, outcome, run):
            return
        self._save(history, self._user_message(content.saved_text, inbound), outcome, run)
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
            self._consolidate_quietly(key)

    def _command(self, inbound: InboundMessage) -> bool:
        """Handle /start, /help, /new, /stop, /usage; True when the message was one of them."""
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
        elif command == "usage":
            self._deliver(inbound.chat_id, self._usage.report(inbound.chat_id), inbound.thread_id)
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
        run = self._begin(
            job,
            turn_id=f"heartbeat-{job.fired_at}",
            group=HEARTBEAT_GROUP,
            journal_key=f"heartbeat:{job.chat_id}",
            history=None,
        )
        if run is None:
            return
        runtime = self._runtime(job.chat_id)
        if not run.progress.resumed:
            try:
                tasks = heartbeat.due_tasks(self._model, job.tasks, runtime)
            except ModelError as error:
                logger.error("heartbeat decision failed: %s", error)
                return
            if tasks is None:
                return
        else:
            tasks = job.tasks  # the decision was made by the run that started the turn
        request = self._context.messages([], texts.render("heartbeat_turn", tasks=tasks), runtime)
        with self._scope(job.chat_id, None, "heartbeat", run.outbox) as scope:
            outcome = self._run_agent(self._agent, request, scope, {}, run, apologise=False)
            if outcome is None or heartbeat.nothing_to_report(outcome.reply):
                logger.info("heartbeat: nothing to report")
            else:
                self._deliver_reply(scope, outcome, run)
        self._journal.mark_done(run.journal_key, run.progress)

    def _cron_task_turn(self, job: CronTaskJob) -> None:
        """A scheduled task, in its own session `cron:<job id>`; its report goes to the chat."""
        key = f"cron:{job.job_id}"
        # One firing, one turn (older queued jobs carry no firing time: a fresh id each run).
        firing = job.fired_at or secrets.token_hex(6)
        history, run = self._begin_in_session(job, f"cron-{job.job_id}-{firing}", key)
        if run is None:
            return
        prompt = texts.render("cron_task", name=job.name, message=job.message)
        request = self._context.messages(history.messages, prompt, self._runtime(job.chat_id))
        log = {"job_id": job.job_id, "chat_id": job.chat_id}
        with self._scope(job.chat_id, job.thread_id, "cron", run.outbox) as scope:
            outcome = self._run_agent(self._agent, request, scope, log, run, apologise=False)
            status = "failed: model unavailable" if outcome is None else "done"
            if outcome is not None and self._deliver_reply(scope, outcome, run):
                self._save(history, {"role": "user", "content": prompt}, outcome, run)
        record = self._jobs.get(job.chat_id, job.job_id)
        if record is not None:
            self._jobs.record_run(
                record, at=self._clock().isoformat(timespec="seconds"), status=status
            )

    def _subagent_turn(self, job: SubagentJob) -> None:
        """A background task: run it with the file tools, then hand the result to its chat."""
        group = f"subagent:{job.subagent_id}"
        run = self._begin(
            job,
            turn_id=f"subagent-{job.subagent_id}",
            group=group,
            journal_key=group,
            history=None,
        )
        if run is None:
            return
        prompt = texts.render("subagent_task", label=job.label, task=job.task)
        request = self._context.messages([], prompt, self._runtime(job.chat_id))
        log = {"subagent_id": job.subagent_id, "chat_id": job.chat_id}
        with self._scope(job.chat_id, job.thread_id, "subagent", run.outbox) as scope:
            outcome = self._run_agent(self._subagent, request, scope, log, run, apologise=False)
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
        self._journal.mark_done(run.journal_key, run.progress)
        logger.info("background task finished", extra={**log, "succeeded": succeeded})

    def _announcement_turn(self, job: AnnouncementJob) -> None:
        """The chat's agent hears what a background task did and tells the user itself."""
        key = session_key_for(job.chat_id, job.thread_id)
        history, run = self._begin_in_session(job, f"announce-{job.subagent_id}", key)
        if run is None:
            return
        note = texts.render(
            "announcement",
            label=job.label,
            outcome="finished" if job.succeeded else "did not finish",
            result=job.result,
        )
        request = self._context.messages(history.messages, note, self._runtime(job.chat_id))
        log = {"subagent_id": job.subagent_id, "chat_id": job.chat_id}
        with self._scope(job.chat_id, job.thread_id, "announcement", run.outbox) as scope:
            outcome = self._run_agent(self._agent, request, scope, log, run, apologise=False)
            if outcome is None:
                raise ModelError("announcement could not be told")  # SQS retries it
            if self._deliver_reply(scope, outcome, run):
                self._save(history, {"role": "user", "content": note}, outcome, run)

    # -- shared ------------------------------------------------------------------------------

    def _run_agent(
        self,
        loop: AgentLoop,
        request: list[dict[str, Any]],
        scope: TurnScope,
        log: dict[str, Any],
        run: TurnRun,
        *,
        apologise: bool = True,
    ) -> TurnOutcome | None:
        """Run (or resume) the turn's loop. None when the model failed (the user was told, if
        `apologise`); raises TurnSuspended when the turn goes on in another invocation."""

        def progress(text: str) -> None:
            run.outbox.send(scope.chat_id, text, scope.thread_id)

        session_key = session_key_for(scope.chat_id, scope.thread_id)

        def stop_requested() -> bool:
            # Any flag counts: /stop is queued behind the turns it should stop, and it clears
            # the flag when it is processed; a leaked flag expires within the hour.
            return scope.origin == "user" and self._stop_flags.requested_since(session_key, 0)

        recorded = run.progress
        resume = Resume(recorded.messages, recorded.iterations) if recorded.iterations else None
        show_progress = self._settings.send_progress and scope.origin != "subagent"
        try:
            outcome = loop.run(
                request,
                on_progress=progress if show_progress else None,
                should_stop=stop_requested,
                resume=resume,
                on_iteration=lambda outcome: self._checkpoint(run, outcome),
                time_left=self._time_left if self._remaining_ms is not None else None,
            )
        except ModelError as error:
            logger.error("model call failed: %s", error, extra=log)
            if apologise:
                run.outbox.send(scope.chat_id, texts.load("model_error"), scope.thread_id)
            self._journal.discard(run.journal_key, run.progress)
            return None
        if outcome.suspended:
            self._continue_later(run, scope, log)
        return outcome

    def _checkpoint(self, run: TurnRun, outcome: TurnOutcome) -> None:
        """Record the turn's iterations so far (and its final answer, once it has one)."""
        run.progress.messages = list(outcome.new_messages)
        run.progress.iterations = outcome.iterations
        run.progress.sends = run.outbox.count
        self._journal.checkpoint(run.journal_key, run.progress)

    def _time_left(self) -> float:
        """Seconds a model call may take and still leave time to record the turn."""
        assert self._remaining_ms is not None
        return self._remaining_ms() / 1000 - self._settings.turn_time_reserve_seconds

    def _continue_later(self, run: TurnRun, scope: TurnScope, log: dict[str, Any]) -> None:
        """Out of time: record the turn, tell the user, queue its continuation. Raises
        TurnSuspended (the turn is not finished here)."""
        progress = run.progress
        progress.continuations += 1
        if progress.continuations > self._settings.max_continuations:
            logger.error(
                "turn gave up after %d continuations", progress.continuations - 1, extra=log
            )
            run.outbox.send(scope.chat_id, texts.load("turn_too_long"), scope.thread_id)
            self._journal.discard(run.journal_key, progress)
            raise TurnSuspended
        if scope.origin == "user" and progress.continuations == 1:
            run.outbox.send(scope.chat_id, texts.load("still_working"), scope.thread_id)
        progress.sends = run.outbox.count
        self._journal.checkpoint(run.journal_key, progress)
        part = progress.continuations + 1
        self._queue.enqueue(
            ContinuationJob(job=run.job, part=part),
            group=run.group,
            dedup_id=f"{progress.turn_id}-part{part}"[-128:],
        )
        logger.info("turn continues in another invocation", extra={**log, "part": part})
        raise TurnSuspended

    def _deliver_reply(self, scope: TurnScope, outcome: TurnOutcome, run: TurnRun) -> bool:
        """The turn's final answer, unless the message tool already sent this very text here.
        Its last part is recorded as sent by the transaction that saves the turn."""
        text = outcome.reply
        if (scope.chat_id, text.strip()) in scope.sent:
            logger.info("final answer already sent with the message tool")
            return True
        several_parts = len(run.outbox.parts(text)) > 1
        if several_parts and run.progress.messages != outcome.new_messages:
            # Recorded before its first part: a retry finishes this answer, not another one.
            self._checkpoint(run, outcome)
        return run.outbox.send(scope.chat_id, text, scope.thread_id, record=False)

    def _deliver(self, chat_id: int, text: str, thread_id: int | None = None) -> bool:
        """A command's answer (commands are not journaled: answering twice is harmless)."""
        return deliver(self._bot, chat_id, text, thread_id)

    def _save(
        self,
        history: SessionHistory,
        first: dict[str, Any],
        outcome: TurnOutcome,
        run: TurnRun,
    ) -> None:
        """Save the turn, close its journal and record its usage in one transaction."""
        limit = self._settings.saved_tool_result_max_chars
        first = {**first, "ts": self._clock().isoformat(timespec="seconds")}
        saved = [first, *(for_saving(message, limit) for message in outcome.new_messages)]
        closing = self._journal.finish(run.journal_key, run.progress)
        # The answer is out: a failed save must not fail the job (its retry would answer
        # again), so a conflict is retried here on a fresh header.
        with self._usage.folded() as usage:
            for attempt in range(1, SAVE_ATTEMPTS + 1):
                try:
                    self._sessions.append(
                        history, saved, turn_id=run.progress.turn_id, also=[*closing, *usage]
                    )
                    return
                except SessionConflict:
                    if attempt == SAVE_ATTEMPTS:
                        raise
                    logger.warning("session changed while the turn ran; saving on the new header")
                    fresh = self._sessions.load(history.key, 1)
                    history.next_seq, history.recent_turns = fresh.next_seq, fresh.recent_turns

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
