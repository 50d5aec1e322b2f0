"""A turn that an event from outside starts: a signed request to one of the owner's hooks
(core/inbound_events.py; the webhook function verified it and queued a `HookEventJob`).

The event runs in its chat's own conversation (the session of the chat and topic the hook was made
in, which is also its queue group), so the person can ask about it afterwards, and in that chat's
scope, counted against that chat's spending limits (dispatch.py entered its subject). Its turn id is
the delivery's (`inbound_events.turn_id`): an event queued or delivered twice is answered once.

The payload is the model's input only between boundary lines derived from it and marked as data
(`inbound_events.hook_event_prompt`); the turn's origin is "hook", which, like a schedule, may not
create scheduled jobs (tools/chat.py). A quiet hook reports only what needs the person, as a quiet
cron task does: its "nothing to report" answer is saved (its later events compare with it) but not
sent. A model failure is not the end of an event, which happens once: the job is retried by SQS and
then kept in the dead-letter queue for `dlq replay`.
"""

from __future__ import annotations

import logging

from nanobot_lambda.adapters.telegram.places import session_key_for
from nanobot_lambda.core import heartbeat, inbound_events
from nanobot_lambda.core.agent import TurnOutcome
from nanobot_lambda.core.context import RUNTIME_FIELD
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.jobs import HookEventJob
from nanobot_lambda.core.sessions import SessionHistory
from nanobot_lambda.functions.agent_turn.turn import JobTurn, Request
from nanobot_lambda.functions.agent_turn.turn_deps import TurnDeps
from nanobot_lambda.functions.agent_turn.turn_run import Opening, TurnRun
from nanobot_lambda.tools.context import JobContext

logger = logging.getLogger(__name__)


class HookEventTurn(JobTurn[HookEventJob]):
    """In the session of the hook's chat and topic; its turn is the delivery's."""

    origin = "hook"

    def __init__(self, deps: TurnDeps, job: HookEventJob) -> None:
        super().__init__(deps, job)
        # Ids only: the payload is the sender's and is never logged.
        self.log = {"hook": job.hook, "delivery": job.delivery_id, "chat_id": job.chat_id}

    @property
    def quiet(self) -> bool:
        return self.job.quiet

    def open(self, ctx: JobContext) -> Opening:
        job = self.job
        return Opening(inbound_events.turn_id(job), session_key_for(job.chat_id, job.thread_id))

    def request(self, ctx: JobContext, run: TurnRun, history: SessionHistory | None) -> Request:
        assert history is not None
        deps, prompt = self.deps, inbound_events.hook_event_prompt(self.job)
        runtime = deps.requests.runtime_block(ctx, run, history=history.messages)
        messages = deps.requests.that_fits(
            ctx, history, lambda past: deps.context.messages(ctx.workspace, past, prompt, runtime)
        )
        saved = {"role": "user", "content": prompt, RUNTIME_FIELD: runtime}
        # Its turn named, for the console to find what the delivery caused (never sent).
        saved[inbound_events.EVENT_TURN_FIELD] = inbound_events.turn_id(self.job)
        logger.info("hook event turn started", extra=self.log)
        return Request(messages, deps.loops.chat(ctx), saved)

    def unanswered(self, ctx: JobContext, run: TurnRun) -> None:
        # Nobody waits for an apology, but an event is not sent again: SQS retries the job,
        # then keeps it in the dead-letter queue (`dlq replay` runs it once the model is back).
        raise ModelError(f"hook event {self.job.hook} unanswered: the model failed")

    def deliver(self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome) -> bool:
        # A quiet hook's "nothing to report" is saved (its later events compare with it; the
        # save closes the turn's record, so a retry is skipped) but not sent.
        if self.job.quiet and heartbeat.nothing_to_report(outcome.reply):
            logger.info("quiet hook event: nothing to report", extra=self.log)
            return True
        return self.deps.delivery.deliver(ctx, run, outcome)

    def finished(self, ctx: JobContext, run: TurnRun, outcome: TurnOutcome) -> None:
        logger.info(
            "hook event turn finished",
            extra={**self.log, "iterations": outcome.iterations, "tool_calls": outcome.tool_calls},
        )
