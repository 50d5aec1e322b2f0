"""One run of a turn: its state for this invocation, and how it starts.

A turn has a stable id from its job; it may run several times (SQS re-delivers a job whose
invocation failed; a turn out of time continues in another invocation). Its job kind says where
it lives (`Opening`): a turn saved into a session (a message, a scheduled task, an announcement)
keeps its record in that session's journal; a turn that saves no session (the heartbeat, a
background task) has a journal key of its own. `TurnStarter` finds what earlier runs recorded
there, and skips a turn that was finished already.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from nanobot_lambda.core import telemetry
from nanobot_lambda.core.agent import TurnOutcome
from nanobot_lambda.core.jobs import StartJob
from nanobot_lambda.core.journal import TurnProgress, progress_in, settled_length
from nanobot_lambda.core.ports import Channel, MetricsPort, SessionStore, TurnJournal
from nanobot_lambda.core.sessions import SessionHistory
from nanobot_lambda.functions.agent_turn.outbox import JournaledOutbox

logger = logging.getLogger(__name__)

RemainingMillis = Callable[[], int]
"""The invocation's time left (Lambda's `context.get_remaining_time_in_millis`)."""


@dataclass(frozen=True)
class Opening:
    """Where a turn lives: its id (from its job), its key (the session it is saved into, which
    is also its queue group; or, for a turn that saves no session, its journal key), and the
    queue group a turn outside a session continues in (None: its key)."""

    turn_id: str
    key: str
    in_session: bool = True
    group: str | None = None


@dataclass
class TurnRun:
    """One run of a turn: its job, its queue group, where its journal record lives, what it
    has done so far, its outbox, and the invocation's clock (None: no time limit)."""

    job: StartJob
    group: str
    journal_key: str
    progress: TurnProgress
    outbox: JournaledOutbox
    remaining_ms: RemainingMillis | None = None
    saves_session: bool = True  # its journal key is its session's (else a turn marked done)
    # How far this turn told the chat of consolidation (delivery.py, `tell_compaction`), and
    # when: the session records them when the turn is saved or closed. None: it told nothing.
    noticed_upto: int | None = None
    noticed_at: datetime | None = None

    def deadline(self, reserve_seconds: float) -> Callable[[], float] | None:
        """For the agent loop: the seconds a model call may take and still leave
        `reserve_seconds` to record the turn. None without a time limit."""
        remaining = self.remaining_ms
        if remaining is None:
            return None
        return lambda: remaining() / 1000 - reserve_seconds


def checkpoint(journal: TurnJournal, run: TurnRun, outcome: TurnOutcome) -> None:
    """Record the turn's messages so far: a step's tool calls before they run, its results
    as they come, and its final answer, once it has one and is to be sent in parts. (Between
    the outbox's sends: a step's other calls may be sending meanwhile.)"""
    with run.outbox.lock:
        run.progress.messages = list(outcome.new_messages)
        run.progress.iterations = outcome.iterations
        run.progress.sends = run.outbox.count
        journal.checkpoint(run.journal_key, run.progress)
        run.outbox.boundary = settled_length(run.progress.messages)


class TurnStarter:
    """Starts a run of a turn from its journal, or says the turn was done before."""

    def __init__(
        self,
        sessions: SessionStore,
        journal: TurnJournal,
        channel: Channel,
        metrics: MetricsPort,
        history_window: int,
    ) -> None:
        self._sessions = sessions
        self._journal = journal
        self._channel = channel
        self._metrics = metrics
        self._history_window = history_window

    def start(
        self, job: StartJob, opening: Opening, remaining_ms: RemainingMillis | None
    ) -> tuple[SessionHistory | None, TurnRun | None]:
        """The turn's session history (None for a turn outside a session) and its run (None
        when the turn was done before)."""
        if opening.in_session:
            return self.in_session(job, opening.turn_id, opening.key, remaining_ms)
        run = self.outside_session(
            job, opening.turn_id, opening.key, remaining_ms, group=opening.group
        )
        return None, run

    def in_session(
        self, job: StartJob, turn_id: str, key: str, remaining_ms: RemainingMillis | None
    ) -> tuple[SessionHistory, TurnRun | None]:
        """A turn saved into session `key`, which is also its queue group: the history and
        the turn's record come from one load. The run is None when the turn was saved before."""
        history = self._sessions.load(key, self._history_window)
        if turn_id in history.recent_turns:
            self._skip(turn_id)
            return history, None
        progress = progress_in(history, turn_id)
        return history, self._run(job, key, key, progress, remaining_ms)

    def outside_session(
        self,
        job: StartJob,
        turn_id: str,
        journal_key: str,
        remaining_ms: RemainingMillis | None,
        group: str | None = None,
    ) -> TurnRun | None:
        """A turn that saves no session (heartbeat, background task): its record is read on
        its own. None when the turn was done before."""
        progress = self._journal.get(journal_key, turn_id)
        if progress.done:
            self._skip(turn_id)
            return None
        run = self._run(job, group or journal_key, journal_key, progress, remaining_ms)
        run.saves_session = False
        return run

    def _skip(self, turn_id: str) -> None:
        logger.info("turn already done: repeated delivery skipped", extra={"turn": turn_id})
        telemetry.duplicate_suppressed(self._metrics)

    def _run(
        self,
        job: StartJob,
        group: str,
        journal_key: str,
        progress: TurnProgress,
        remaining_ms: RemainingMillis | None,
    ) -> TurnRun:
        if progress.resumed:
            logger.info(
                "turn resumed",
                extra={
                    "turn": progress.turn_id,
                    "iterations": progress.iterations,
                    "sent": len(progress.sent),
                },
            )
        outbox = JournaledOutbox(self._channel, self._journal, journal_key, progress)
        return TurnRun(job, group, journal_key, progress, outbox, remaining_ms)
