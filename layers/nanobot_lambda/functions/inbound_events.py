"""The hooks' route (`POST /hooks/{name}`): a signed event in, a task queued in the hook's
chat, a fast answer out. What a hook is, how a request is signed and how its payload reaches
the model: core/inbound_events.py.

It runs in the webhook function (functions/webhook/app.py routes by path): the same small
cold start without litellm, the same queue client and table, and one function fewer to deploy
and watch. It shares nothing with Telegram's route but the queue: its requests carry no
Telegram secret token, and a Telegram update posted here is just a body to verify.

Every request gets a defined answer, and nothing is queued unless it is signed:
405 for other methods; 413 for a body over `BODY_MAX_BYTES` (checked before decoding it);
404 for a name no hook has (an odd one included); 401 unsigned, a wrong signature or a stale
timestamp (the reason is said, never the secret); 200 `duplicate` for a delivery queued before
(a replay); 429 with `Retry-After` past `RATE_PER_MINUTE`; 503 when a store or the queue is
away (the sender retries: nothing is lost); 202 `queued` with the delivery id.

Each request for a hook that exists is then recorded as a `Delivery` (core/inbound_events.py):
the answer, the turn it queued, the body's size and digest, never the body. A record that
cannot be written is logged and the answer stands. Refused requests cost the sender nothing
and the ring two writes each, so a container records at most one refusal per hook every
`REFUSALS_RECORDED_EVERY` (a flood of forged requests leaves a sample, not a bill); what was
queued, or a repeat of what was, is always recorded.

agent_turn runs the queued `HookEventJob` (its wiring: README "Event hooks", and the module
docstring of core/inbound_events.py): the owner's `/hooks` commands are answered by
`core.inbound_events.HookCommands`, whose answer to `add` holds the secret and is sent, never saved
in the session, logged or shown to the model.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from nanobot_lambda.adapters.telegram.places import session_key_for
from nanobot_lambda.core import inbound_events, telemetry
from nanobot_lambda.core.ports import HookInbox, HookStore, MetricsPort, TurnQueue
from nanobot_lambda.functions.webhook import (
    MAX_JOB_BYTES,
    WebhookResponse,
    decode_body,
    lowercase,
    reply,
)

logger = logging.getLogger(__name__)

_HOOK_PATH = re.compile(r"(?:^|/)hooks/([^/]*)/?$")
REFUSALS_RECORDED_EVERY = timedelta(seconds=10)
_REFUSALS_REMEMBERED = 256  # hooks whose last recorded refusal a container keeps


def hook_name(event: Mapping[str, Any]) -> str | None:
    """The hook a request is for, when it came by the hooks' route; None for the webhook's."""
    parameters = event.get("pathParameters")
    if isinstance(parameters, Mapping) and isinstance(parameters.get("name"), str):
        return str(parameters["name"])
    match = _HOOK_PATH.search(str(event.get("rawPath") or ""))
    return match.group(1) if match else None


@dataclass
class _Heard:
    """What the route learnt of a request while deciding it: what its delivery record says."""

    at: datetime
    hook: inbound_events.Hook | None = None
    size: int = 0
    digest: str | None = None  # the body's, once it was read
    signed: inbound_events.Signed | None = None
    turn_id: str | None = None  # the turn it queued


class HookReceiver:
    def __init__(
        self,
        store: HookStore,
        inbox: HookInbox,
        queue: TurnQueue,
        metrics: MetricsPort,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._store = store
        self._inbox = inbox
        self._queue = queue
        self._metrics = metrics
        self._clock = clock
        self._refusal_recorded: OrderedDict[str, datetime] = OrderedDict()  # hook -> when

    def handle(self, event: Mapping[str, Any], name: str) -> WebhookResponse:
        heard = _Heard(self._clock())
        answer = self._answer(event, name, heard)
        if heard.hook is not None:
            self._record(heard.hook, heard, answer)
        return answer

    def _answer(self, event: Mapping[str, Any], name: str, heard: _Heard) -> WebhookResponse:
        method = lowercase(lowercase(event.get("requestContext")).get("http")).get("method")
        if str(method or "POST").upper() != "POST":
            return reply(405, error="method not allowed")
        raw_body = event.get("body") or ""
        if not isinstance(raw_body, str):
            return reply(400, error="unreadable body")
        too_large = reply(413, error=f"body over {inbound_events.BODY_MAX_BYTES} bytes")
        heard.size = len(raw_body)
        if heard.size > inbound_events.BODY_MAX_BYTES * 4 // 3 + 4:  # before decoding anything
            heard.hook = self._hook_to_record(name)
            return too_large
        body = decode_body(raw_body, event.get("isBase64Encoded") is True)
        if body is None:
            return reply(400, error="unreadable body")
        heard.size = len(body)
        if heard.size > inbound_events.BODY_MAX_BYTES:
            heard.hook = self._hook_to_record(name)
            return too_large
        if not inbound_events.NAME_RULE.fullmatch(name):
            return reply(404, error="no such hook")
        log: dict[str, Any] = {"hook": name}
        try:
            hook = self._store.hook(name)
        except Exception as error:
            logger.error("hooks unreadable (%s)", type(error).__name__, extra=log)
            return reply(503, error="try again later")
        if hook is None:
            logger.info("event for no hook: refused", extra=log)
            return reply(404, error="no such hook")
        heard.hook, heard.digest = hook, inbound_events.delivery_digest(body)
        headers = {name: str(value) for name, value in lowercase(event.get("headers")).items()}
        signed = inbound_events.verify(hook, headers, body, heard.at)
        if isinstance(signed, inbound_events.Unsigned):
            logger.warning("hook event refused: %s", signed.reason, extra=log)
            return reply(401, error=signed.reason)
        heard.signed = signed
        log |= {"delivery": signed.delivery_id, "form": signed.form}
        return self._queue_event(hook, signed, body, heard, log)

    def _hook_to_record(self, name: str) -> inbound_events.Hook | None:
        """The hook a request refused before the hook was read is for, to record it under."""
        if not inbound_events.NAME_RULE.fullmatch(name):
            return None
        try:
            return self._store.hook(name)
        except Exception as error:
            logger.error("hooks unreadable (%s)", type(error).__name__, extra={"hook": name})
            return None

    def _record(self, hook: inbound_events.Hook, heard: _Heard, answer: WebhookResponse) -> None:
        outcome = _outcome(answer)
        queued = outcome == "queued"
        if outcome in ("refused", "unavailable") and not self._refusal_due(hook.name, heard.at):
            return
        delivery = inbound_events.Delivery(
            at=heard.at.isoformat(timespec="seconds"),
            outcome=outcome,
            status=answer.status,
            reason=answer.body.get("error"),
            size=heard.size,
            digest=heard.digest,
            delivery_id=heard.signed.delivery_id if heard.signed else None,
            event=heard.signed.event if heard.signed else None,
            turn_id=heard.turn_id if queued else None,
            chat_id=hook.chat_id if queued else None,
            thread_id=hook.thread_id if queued else None,
        )
        try:
            self._inbox.record(hook.name, delivery)
        except Exception as error:  # the answer stands: the record is for the owner to see
            logger.error(
                "could not keep the delivery's record (%s)",
                type(error).__name__,
                extra={"hook": hook.name},
            )

    def _refusal_due(self, name: str, at: datetime) -> bool:
        """Whether a refusal for `name` is to be recorded now (and, if so, noted as recorded)."""
        last = self._refusal_recorded.get(name)
        if last is not None and timedelta(0) <= at - last < REFUSALS_RECORDED_EVERY:
            return False
        self._refusal_recorded[name] = at
        self._refusal_recorded.move_to_end(name)
        while len(self._refusal_recorded) > _REFUSALS_REMEMBERED:
            self._refusal_recorded.popitem(last=False)
        return True

    def _queue_event(
        self,
        hook: inbound_events.Hook,
        signed: inbound_events.Signed,
        body: bytes,
        heard: _Heard,
        log: dict[str, Any],
    ) -> WebhookResponse:
        now = heard.at
        try:
            if self._inbox.seen(hook.name, signed.replay_keys):
                logger.info("hook event already queued: refused as a replay", extra=log)
                telemetry.duplicate_suppressed(self._metrics)
                return reply(200, status="duplicate", delivery=signed.delivery_id)
            if not self._inbox.take_slot(
                hook.name, now.strftime("%Y-%m-%dT%H:%M"), inbound_events.RATE_PER_MINUTE
            ):
                logger.warning("hook over its rate: refused", extra=log)
                answer = reply(429, error="too many events: retry later")
                # The next minute's slots: GitHub and most senders read Retry-After.
                return replace(answer, headers={"retry-after": str(60 - now.second)})
        except Exception as error:
            logger.error("hook records unreadable (%s)", type(error).__name__, extra=log)
            return reply(503, error="try again later")
        job = inbound_events.event_job(hook, signed, body, now)
        if len(job.model_dump_json().encode()) > MAX_JOB_BYTES:  # only a payload of escapes
            return reply(413, error="payload too large to queue")
        try:
            self._queue.enqueue(
                job,
                group=session_key_for(hook.chat_id, hook.thread_id),
                dedup_id=inbound_events.dedup_id(hook.name, signed.delivery_id),
            )
        except Exception as error:
            # 5xx: the sender retries (GitHub offers a redelivery); it is not remembered as queued.
            logger.error("enqueue failed (%s)", type(error).__name__, extra=log)
            return reply(503, error="try again later")
        try:
            self._inbox.remember(hook.name, signed.replay_keys, now + signed.keep)
        except Exception as error:
            # Queued all the same; SQS still drops a repeat within five minutes.
            logger.error("could not remember the delivery (%s)", type(error).__name__, extra=log)
        logger.info("hook event queued", extra={**log, "chat_id": hook.chat_id})
        heard.turn_id = inbound_events.turn_id(job)
        return reply(202, status="queued", delivery=signed.delivery_id)


def _outcome(answer: WebhookResponse) -> inbound_events.DeliveryOutcome:
    if answer.status == 202:
        return "queued"
    if answer.body.get("status") == "duplicate":
        return "duplicate"
    return "unavailable" if answer.status >= 500 else "refused"
