"""Saving a turn, after its answer is out: its messages (with what earlier runs of it showed and
this one did not say again, where it was shown), the closing of its journal record and its
usage (the job's meter's, tools/context.py) with the turn's record (what it used, the tools it
called: the session's `turn_log`, core/sessions.py), in one transaction. A turn that
ended unanswered (the apology) is closed without saving anything, so a later delivery of its job
is skipped.

A save that collides with another writer (`SessionConflict`) is retried on a fresh header. A save
failing for any other cause (another store's folded write refused, the store busy after its own
retries) is not the session's: a reload cannot help, so it fails the job like any storage error, and
SQS retries it. But the answer was sent already, and a model asked again may answer otherwise:
before the error goes on, the turn's record is written on its own, `answered`, with the turn's
messages as they are saved (core/journal.py). SQS's retry resumes the turn from that record like any
turn cut short (turn_run.py): the loop returns the recorded answer without asking the model, the
deliver step is skipped (turn.py), and the save is made again. Only a process that dies between the
answer and its save leaves the retry to ask again.

Every saved message fits the store's item (core/sessions.py, `within_item_limit`): tool results
are cut to `saved_tool_result_max_chars`, and a message still too large (a `write_file` call
with hundreds of KB of content) has its longest strings cut, so no turn fails for its own size.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from nanobot_lambda.core.agent import MAX_SAVED_TOOL_CHARS, TurnOutcome, for_saving
from nanobot_lambda.core.errors import StorageError
from nanobot_lambda.core.journal import with_aside
from nanobot_lambda.core.ports import SessionStore, StoredWrite, TurnJournal
from nanobot_lambda.core.reactions_and_edits import FeedbackBook
from nanobot_lambda.core.sessions import (
    SessionConflict,
    SessionHistory,
    TurnRecord,
    within_item_limit,
)
from nanobot_lambda.functions.agent_turn.turn_run import TurnRun
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)

SAVE_ATTEMPTS = 3
# The messages the turn sent, recorded as the bot's by its save (core/reactions_and_edits.py); a
# turn that sent more has the rest recorded as its run ends (turn.py), so the transaction stays
# small.
SAVED_ANSWERS_MAX = 20


class TurnSaver:
    def __init__(
        self,
        sessions: SessionStore,
        journal: TurnJournal,
        saved_tool_result_max_chars: int | None,
        clock: Callable[[], datetime],
        feedback: FeedbackBook,
    ) -> None:
        self._sessions = sessions
        self._journal = journal
        self._feedback = feedback
        self._tool_chars = min(
            saved_tool_result_max_chars or MAX_SAVED_TOOL_CHARS, MAX_SAVED_TOOL_CHARS
        )
        self._clock = clock

    def save(
        self,
        ctx: JobContext,
        history: SessionHistory,
        first: dict[str, Any],
        outcome: TurnOutcome,
        run: TurnRun,
    ) -> None:
        """Save `first` (the user's message, or the prompt of a scheduled turn) and what the
        turn added, close its journal record, record its usage and the ids of the messages it
        sent, in one transaction; when that fails, record the turn as answered before the error
        goes on (see the module's docstring)."""
        first = {**first, "ts": self._clock().isoformat(timespec="seconds")}
        shown = with_aside(outcome.new_messages, run.progress.aside)
        saved = [within_item_limit(first), *(self._as_saved(message) for message in shown)]
        sent = run.outbox.sent_by_chat(SAVED_ANSWERS_MAX)
        answers = [
            write
            for chat_id, message_ids in sent.items()
            for write in self._feedback.answer_writes(chat_id, message_ids)
        ]
        record = replace(ctx.meter.turn_record(), turn_id=run.progress.turn_id)
        try:
            with ctx.meter.folded() as usage:
                self._append(history, saved, run, [*usage, *answers], record)
        except StorageError:
            self._record_answered(run, outcome)
            raise
        run.outbox.sent_recorded(sum(len(message_ids) for message_ids in sent.values()))

    def _as_saved(self, message: dict[str, Any]) -> dict[str, Any]:
        return within_item_limit(for_saving(message, self._tool_chars))

    def _record_answered(self, run: TurnRun, outcome: TurnOutcome) -> None:
        """The answer is out and the save failed: record the turn, `answered`, with its
        messages as saved (what was set aside stays in the record), so that SQS's retry saves
        them and neither asks the model nor sends anything. Should that write fail too, the
        retry asks the model again, as after a crash."""
        progress = run.progress
        progress.messages = [self._as_saved(message) for message in outcome.new_messages]
        progress.iterations = outcome.iterations
        progress.sends = run.outbox.count
        progress.answered = True
        try:
            self._journal.checkpoint(run.journal_key, progress)
        except StorageError as error:
            logger.error("the answered turn could not be recorded for its retry: %s", error)
            return
        logger.warning("the turn's save failed after its answer was sent: recorded as answered")

    def close(self, ctx: JobContext, run: TurnRun, error: str) -> None:
        """Close a turn that ended unanswered (`error`: the text it ended with): nothing is
        saved, but its id joins the session's recent turns (with the closing of its record, and
        what it used), so a later delivery of the job is skipped; a turn without a session is
        marked done."""
        if not run.saves_session:
            self._journal.mark_done(run.journal_key, run.progress)
            return
        history = self._sessions.load(run.journal_key, 1)
        if run.noticed_upto is not None:  # the chat was told of consolidation before the apology
            history.noticed_upto, history.noticed_at = run.noticed_upto, run.noticed_at
        record = replace(ctx.meter.turn_record(error=error), turn_id=run.progress.turn_id)
        self._append(history, [], run, [], record)

    def _append(
        self,
        history: SessionHistory,
        saved: list[dict[str, Any]],
        run: TurnRun,
        folded: list[StoredWrite],
        record: TurnRecord,
    ) -> None:
        """One transaction: `saved`, the turn's id among the recent turns and its `record`, the
        closing of its journal record and `folded` (usage, answers); retried on a fresh header
        when another writer came first."""
        closing = self._journal.finish(run.journal_key, run.progress)
        for attempt in range(1, SAVE_ATTEMPTS + 1):
            try:
                self._sessions.append(
                    history,
                    saved,
                    turn_id=run.progress.turn_id,
                    also=[*closing, *folded],
                    record=record,
                )
                return
            except SessionConflict:
                if attempt == SAVE_ATTEMPTS:
                    raise
                logger.warning("session changed while the turn ran; saving on the new header")
                fresh = self._sessions.load(history.key, 1)
                history.next_seq, history.recent_turns = fresh.next_seq, fresh.recent_turns
                history.turn_log = fresh.turn_log
