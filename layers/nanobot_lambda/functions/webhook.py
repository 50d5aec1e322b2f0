"""The webhook's logic: authenticate, parse, decide, enqueue. Answer fast; never lose an update.

Status codes are chosen for Telegram's retry behaviour: anything we deliberately drop gets 200
(so Telegram stops re-sending it), a failed enqueue gets 503 (so Telegram retries and nothing is
lost), bad requests get 4xx. Message text is never logged.

The 200 for a queued message also carries a sign of life (`sign_of_life`): a Bot API method in
the body, which Telegram performs for the bot ("making requests when getting updates"), so the
user sees "typing…" (or a reaction) within a second, while agent_turn may still be starting.
The webhook holds no bot token and makes no outgoing call for it.

A part of an album is also recorded with its album before it is queued, so that the album is
answered in one turn (`core/albums.py`).

A stranger's `/start <token>` (the invite link the owner made, core/invites.py) is answered here
too: the invite admits them, or their group, in one conditional write, and nothing is queued.

A reaction is recorded here (`FeedbackBook`) and answered, never queued: it starts no model call.
An edit is recorded before it is queued like a message, so that the edited message's turn, if it
has not started, can take the text as it is now (`core/reactions_and_edits.py`).

The event hooks' route (`POST /hooks/{name}`) is served by the same function but not by this
class: functions/inbound_events.py.

Who acts in an update and in which chat is read for every update kind by `places.place_of`,
the reading agent_turn derives the job's subject from: the allow-list judges a button press by
the chat of the message it was under. A press Telegram could not have sent (in a private chat
by someone else, or with data the message's keyboard does not offer) is answered with a short
notice and not queued.

A press of an approval's button (`apv:<id>:<o|a|d>`, core/approvals.py) is checked against the
approval recorded when the question was asked: only its approver's press on that question, in
time, queues the waiting turn's resume (`ApprovalJob`), in that turn's own queue group.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import SecretStr, ValidationError

from nanobot_lambda.adapters.telegram.addressing import GroupPolicy, command_target, is_group_chat
from nanobot_lambda.adapters.telegram.inbound import Accepted, Reacted, Rejected, classify
from nanobot_lambda.adapters.telegram.models import CallbackQuery, Message, Update, clean_update
from nanobot_lambda.adapters.telegram.places import Ignored, RefusedPress
from nanobot_lambda.adapters.telegram.reactions_and_edits import edit_of
from nanobot_lambda.core import telemetry, texts
from nanobot_lambda.core.albums import album_key
from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.approvals import ApprovalBook, Decision, parse_callback
from nanobot_lambda.core.errors import UpdateInProgress
from nanobot_lambda.core.invites import Invites, invite_token
from nanobot_lambda.core.jobs import ApprovalJob, TelegramUpdateJob, parse_start_job
from nanobot_lambda.core.pairing import Asker, Pairing
from nanobot_lambda.core.ports import (
    AlbumBook,
    FeedbackBook,
    MetricsPort,
    StopFlags,
    TurnQueue,
    UpdateLedger,
)

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1_000_000
MAX_JOB_BYTES = 256 * 1024  # SQS's classic message size limit (what moto and older regions allow)
SECRET_HEADER = "x-telegram-bot-api-secret-token"  # noqa: S105 - a header name


@dataclass(frozen=True)
class WebhookResponse:
    status: int
    body: dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)  # besides the content type

    def to_http(self) -> dict[str, Any]:
        """The API Gateway HTTP API / Function URL (payload 2.0) response."""
        return {
            "statusCode": self.status,
            "headers": {"content-type": "application/json", **self.headers},
            "body": json.dumps(self.body),
        }


def reply(code: int, **body: Any) -> WebhookResponse:
    """An answer: `ok` (below 400) and `body`'s fields, in JSON."""
    return WebhookResponse(code, {"ok": code < 400, **body})


@dataclass(frozen=True)
class WebhookPolicy:
    """Who is heard (the allow-list), and how the webhook acknowledges what it queued."""

    allow_list: AllowList
    group_policy: GroupPolicy = "mention"  # agent_turn's GROUP_POLICY
    ack_reaction: str = ""  # as Telegram spells it (settings.py checks it); empty: "typing…"
    pairing_codes: bool = True  # PAIRING=on: a stranger's private message gets a code


def sign_of_life(
    message: Message, ack_reaction: str, group_policy: GroupPolicy
) -> dict[str, Any] | None:
    """The Bot API call, as webhook-reply fields (`method` and its parameters), that shows the
    sender at once that their queued message arrived; None when the webhook cannot tell that
    the bot will answer it.

    `sendChatAction` "typing" (in the message's forum topic, if any), or with `ack_reaction`
    set, `setMessageReaction` with that emoji on the message. Private chats always get it. In a
    group the webhook knows the message is for the bot only from what needs no bot identity
    (it has no token to ask getMe): a command naming no bot, or any message under the `open`
    policy. A mention of the bot or a reply to it gets its "typing…" from agent_turn.
    """
    if is_group_chat(message) and not _surely_for_the_bot(message, group_policy):
        return None
    if ack_reaction:
        return {
            "method": "setMessageReaction",
            "chat_id": message.chat.id,
            "message_id": message.message_id,
            "reaction": [{"type": "emoji", "emoji": ack_reaction}],
        }
    call: dict[str, Any] = {"method": "sendChatAction", "chat_id": message.chat.id}
    if message.is_topic_message and message.message_thread_id is not None:
        call["message_thread_id"] = message.message_thread_id  # where agent_turn answers
    call["action"] = "typing"
    return call


def _surely_for_the_bot(message: Message, group_policy: GroupPolicy) -> bool:
    """Whether the bot will answer this group message whatever its name is (inbound's
    addressed_to_bot without the bot's id and username): a command naming no bot; any other
    message but a command naming a bot (perhaps another one) under `open`."""
    command = command_target(message)
    if command is not None:
        return command[1] is None
    return group_policy == "open"


@dataclass(frozen=True)
class WebhookRecords:
    """What the webhook keeps besides the queue: the updates it queued (so a re-sent one is queued
    once), /stop flags, the parts of albums, reactions and edits (core/reactions_and_edits.py; None:
    reactions are not recorded), who the owner approved (by pairing or an invite) and the codes
    strangers were given, and the owner's invites."""

    ledger: UpdateLedger
    stop_flags: StopFlags
    albums: AlbumBook
    pairing: Pairing | None = None
    feedback: FeedbackBook | None = None
    approvals: ApprovalBook | None = None  # what a press of an approval's button is checked by
    invites: Invites | None = None


class Webhook:
    def __init__(
        self,
        secret_token: SecretStr,
        policy: WebhookPolicy,
        queue: TurnQueue,
        records: WebhookRecords,
        metrics: MetricsPort,
    ) -> None:
        self._secret = secret_token.get_secret_value().encode()
        self._ledger = records.ledger
        self._policy = policy
        self._queue = queue
        self._stop_flags = records.stop_flags
        self._albums = records.albums
        self._pairing = records.pairing
        self._feedback = records.feedback
        self._approvals = records.approvals
        self._invites = records.invites
        self._metrics = metrics
        if policy.allow_list.allows_nobody:
            logger.warning("ALLOW_FROM is empty: every sender will be refused")

    def handle(self, event: Mapping[str, Any]) -> WebhookResponse:
        """Handle one HTTP request (API Gateway HTTP API / Function URL, payload format 2.0).

        Every request gets a defined answer, whatever it holds: 405 for other methods, 401
        without the secret, 413 for a body over the cap (before decoding it), 400 for a body
        that is not an Update in JSON, 200 for updates ignored or refused, 200/503 for the
        queued ones.
        """
        headers = lowercase(event.get("headers"))
        method = lowercase(lowercase(event.get("requestContext")).get("http")).get("method")
        if str(method or "POST").upper() != "POST":
            return reply(405, error="method not allowed")
        presented = str(headers.get(SECRET_HEADER, "")).encode("utf-8", errors="replace")
        if not hmac.compare_digest(presented, self._secret):
            logger.warning("webhook request refused: missing or wrong secret token")
            return reply(401, error="unauthorized")

        raw_body = event.get("body") or ""
        if not isinstance(raw_body, str):
            return reply(400, error="unreadable body")
        if len(raw_body) > MAX_BODY_BYTES * 4 // 3 + 4:  # checked before decoding anything
            return reply(413, error="body too large")
        body = decode_body(raw_body, event.get("isBase64Encoded") is True)
        if body is None or len(body) > MAX_BODY_BYTES:
            return reply(413 if body is not None else 400, error="unreadable body")
        content_type = str(headers.get("content-type", "")).split(";")[0].strip().lower()
        if content_type != "application/json":
            return reply(400, error="content type must be application/json")

        try:
            payload = clean_update(json.loads(body, parse_constant=_refuse_constant))
            update = Update.model_validate(payload)
        except (ValueError, ValidationError, RecursionError) as error:
            # The body may hold private text: log only what kind of problem it was.
            logger.warning("webhook body is not a Telegram Update (%s)", type(error).__name__)
            return reply(400, error="not a Telegram Update")

        return self._dispatch(update, payload)

    def _dispatch(self, update: Update, payload: dict[str, Any]) -> WebhookResponse:
        log = {"update_id": update.update_id, "update_kind": update.kind}
        query = update.callback_query
        pressed = parse_callback(query.data) if query is not None else None
        if query is not None and pressed is not None:
            return self._approval_press(query, *pressed, payload, log)
        decision = classify(update, self._policy.allow_list)
        if isinstance(decision, Ignored):
            return _ignore(decision, log)
        invited = self._invited(update)
        if isinstance(decision, Rejected) or invited is not None:
            try:
                decision = self._with_approvals(update, decision)
                invite_admits = invited is not None and not self._heard_whole(invited, decision)
            except Exception as error:
                # Refusing could lose an approved person's message: Telegram retries instead.
                logger.error("approvals unreadable (%s)", type(error).__name__, extra=log)
                return reply(503, error="try again later")
            if invited is not None and invite_admits:
                return self._admit(invited, log)
            if isinstance(decision, Rejected):
                return self._refuse(update, decision, log)
            if isinstance(decision, Ignored):
                return _ignore(decision, log)
        if isinstance(decision, Reacted):
            return self._record_reaction(decision, log)

        assert isinstance(decision, Accepted), decision
        message = decision.message
        job = TelegramUpdateJob(update=payload)
        if len(job.model_dump_json().encode()) > MAX_JOB_BYTES:
            # Not something Telegram sends; retrying it would fail the same way.
            logger.warning("update too large to queue: refused", extra=log)
            return reply(413, error="update too large")
        if message.command == "stop":
            self._raise_stop_flag(message.session_key, log)
        if update.message is not None and update.message.media_group_id is not None:
            key = album_key(message.session_key, update.message.media_group_id)
            self._record_album_part(key, update.update_id, payload, log)
        if message.edited:
            self._record_edit(update, log)
        try:
            queued = self._ledger.once(
                payload,
                lambda: self._queue.enqueue(
                    job, group=message.session_key, dedup_id=f"update-{update.update_id}"
                ),
            )
        except UpdateInProgress:
            logger.info("update is being queued by another delivery: retry later", extra=log)
            return reply(503, error="try again later")
        except Exception as error:
            # 5xx makes Telegram retry the update: nothing is lost while the queue is away.
            logger.error(
                "enqueue failed (%s): Telegram will retry", type(error).__name__, extra=log
            )
            return reply(503, error="try again later")
        if not queued:
            # Telegram re-sent an update we queued before (beyond SQS's 5-minute dedup window).
            logger.info("repeated update: already queued", extra=log)
            telemetry.duplicate_suppressed(self._metrics)
            return reply(200, status="duplicate")
        call: dict[str, Any] | None
        if message.callback_query_id is not None:
            # Telegram shows a pressed button as loading until the bot answers the query.
            call = {"method": "answerCallbackQuery", "callback_query_id": message.callback_query_id}
        else:
            sent = update.message or update.edited_message
            assert sent is not None  # what Accepted means (inbound.to_inbound)
            policy = self._policy
            call = sign_of_life(sent, policy.ack_reaction, policy.group_policy)
        sign = call["method"] if call else None
        logger.info("update queued", extra={**log, "chat_id": message.chat_id, "sign": sign})
        return reply(200, status="queued", **(call or {}))

    def _approval_press(
        self,
        query: CallbackQuery,
        approval_id: str,
        decision: Decision,
        payload: dict[str, Any],
        log: dict[str, Any],
    ) -> WebhookResponse:
        """A button of an approval's question (functions/agent_turn/approvals.py). Only its
        approver's press, on that question in their private chat, before its deadline, counts:
        it queues the turn's resume in the turn's own queue group, once per approval (its
        deduplication id; the turn's journal keeps a later one from doing anything). Any other
        press is answered with a notice and queues nothing."""
        answer = {"method": "answerCallbackQuery", "callback_query_id": query.id}
        try:
            approval = self._approvals.get(approval_id) if self._approvals else None
        except Exception as error:
            logger.error("approval unreadable (%s)", type(error).__name__, extra=log)
            return reply(503, error="try again later")
        message = query.message
        if (
            approval is None
            or query.sender.id != approval.approver
            or message is None
            or message.chat.id != approval.approver
            or (approval.message_id is not None and message.message_id != approval.message_id)
        ):
            logger.info("approval press refused: not its approver's", extra=log)
            return reply(200, status="refused", **answer, text=texts.load("approval_not_yours"))
        now = datetime.now(UTC)
        if now.timestamp() > approval.deadline:
            logger.info("approval press refused: after its deadline", extra=log)
            return reply(200, status="refused", **answer, text=texts.load("approval_too_late"))
        job = ApprovalJob(
            job=parse_start_job(approval.job),
            approval_id=approval_id,
            decision=decision,
            decided_by=query.sender.id,
            decided_by_name=query.sender.first_name,
            decided_at=now.isoformat(timespec="seconds"),
        )
        try:
            self._ledger.once(
                payload,
                lambda: self._queue.enqueue(
                    job, group=approval.session_key, dedup_id=f"approval-{approval_id}"
                ),
            )
        except UpdateInProgress:
            return reply(503, error="try again later")
        except Exception as error:
            logger.error("enqueue failed (%s)", type(error).__name__, extra=log)
            return reply(503, error="try again later")
        logger.info("approval press queued", extra={**log, "decision": decision})
        return reply(200, status="queued", **answer)

    def _with_approvals(
        self, update: Update, decision: Accepted | Rejected | Reacted
    ) -> Accepted | Rejected | Reacted | Ignored:
        """The decision once the people and groups approved in the store (pairing, invites) are
        heard too: a refused sender, or their group, may be one."""
        if not isinstance(decision, Rejected) or self._pairing is None:
            return decision
        approved = [decision.sender_id] if self._pairing.is_approved(decision.sender_id) else []
        if decision.chat_id < 0 and self._pairing.is_approved(decision.chat_id):
            approved.append(decision.chat_id)  # a group an invite admitted
        if not approved:
            return decision
        allow_list = self._policy.allow_list
        for chat_or_person in approved:
            allow_list = allow_list.including(chat_or_person)
        return classify(update, allow_list)

    def _invited(self, update: Update) -> tuple[Message, str] | None:
        """A `/start <token>` message (an invite link opened) and its token, with invites on."""
        message = update.message
        if self._invites is None or message is None or message.sender is None:
            return None
        token = invite_token(message.text or "")
        return None if token is None else (message, token)

    def _heard_whole(self, invited: tuple[Message, str], decision: object) -> bool:
        """Whether the chat an invite was opened in is heard already: a private chat whose
        person is; a group listed in ALLOW_FROM or admitted before (each of its members is
        heard, whoever is listed)."""
        chat = invited[0].chat
        if chat.type == "private":
            return not isinstance(decision, Rejected)
        allow_list = self._policy.allow_list
        if allow_list.everyone or chat.id in allow_list.ids:
            return True
        return self._pairing is not None and self._pairing.is_approved(chat.id)

    def _admit(self, invited: tuple[Message, str], log: dict[str, Any]) -> WebhookResponse:
        """An invite link opened: its person (or group) admitted, once per use, and answered in
        the webhook's reply; nothing is queued. A store that cannot be read answers 503: Telegram
        sends the /start again and no use was counted."""
        message, token = invited
        assert self._invites is not None and message.sender is not None  # what _invited found
        if message.chat.type == "private":
            sender = message.sender
            name = " ".join(part for part in (sender.first_name, sender.last_name) if part)
            admitted = Asker(sender.id, name or str(sender.id), sender.username)
        else:
            admitted = Asker(message.chat.id, message.chat.title or str(message.chat.id))
        try:
            admission = self._invites.admit(token, admitted, group=message.chat.type != "private")
        except Exception as error:
            logger.error("invite not checked (%s)", type(error).__name__, extra=log)
            return reply(503, error="try again later")
        call = {"method": "sendMessage", "chat_id": message.chat.id, "text": admission.text}
        return reply(200, status="admitted" if admission.admitted else "refused", **call)

    def _raise_stop_flag(self, session_key: str, log: dict[str, Any]) -> None:
        """/stop must reach a running turn now, not after it (FIFO order): see
        functions/agent_turn/commands.py."""
        try:
            self._stop_flags.request(session_key)
        except Exception as error:
            # The /stop itself is still queued: the user gets an answer either way.
            logger.error("could not raise the stop flag (%s)", type(error).__name__, extra=log)

    def _refuse(self, update: Update, decision: Rejected, log: dict[str, Any]) -> WebhookResponse:
        """A stranger: 200 (Telegram stops re-sending), logged by id, never the text. With
        PAIRING on, a private message is answered with a code for the owner (core/pairing.py);
        nothing of it is queued."""
        logger.info(
            "update refused: sender %s is not in ALLOW_FROM (add the id to allow it)",
            decision.sender_id,
            extra={**log, "sender_id": decision.sender_id, "chat_id": decision.chat_id},
        )
        message = update.message
        if (
            self._pairing is None
            or not self._policy.pairing_codes
            or message is None
            or message.chat.type != "private"
            or message.sender is None
        ):
            return reply(200, status="refused")
        sender = message.sender
        name = " ".join(part for part in (sender.first_name, sender.last_name) if part)
        try:
            answer = self._pairing.answer_stranger(
                Asker(sender.id, name or str(sender.id), sender.username)
            )
        except Exception as error:
            logger.error("pairing failed (%s)", type(error).__name__, extra=log)
            return reply(200, status="refused")
        if answer is None:
            return reply(200, status="refused")
        call = {"method": "sendMessage", "chat_id": message.chat.id, "text": answer}
        return reply(200, status="pairing", **call)

    def _record_reaction(self, decision: Reacted, log: dict[str, Any]) -> WebhookResponse:
        """A reaction is recorded here and starts no turn (core/reactions_and_edits.py). A failed
        write answers 503: Telegram re-sends it, nothing is lost."""
        if self._feedback is None:
            return reply(200, status="ignored")
        try:
            self._feedback.record_reaction(decision.reaction)
        except Exception as error:
            logger.error("could not record a reaction (%s)", type(error).__name__, extra=log)
            return reply(503, error="try again later")
        logger.info("reaction recorded", extra={**log, "chat_id": decision.reaction.chat_id})
        return reply(200, status="recorded")

    def _record_edit(self, update: Update, log: dict[str, Any]) -> None:
        """Before the edit is queued, so that the edited message's turn, if it has not started,
        takes the text as it is now (core/reactions_and_edits.py)."""
        edit = edit_of(update)
        if self._feedback is None or edit is None:
            return
        try:
            self._feedback.record_edit(edit)
        except Exception as error:
            # The edit is still queued: its own turn says what the message reads now.
            logger.error("could not record an edit (%s)", type(error).__name__, extra=log)

    def _record_album_part(
        self, key: str, update_id: int, payload: dict[str, Any], log: dict[str, Any]
    ) -> None:
        """Before the part is queued, so that the album's first turn can find it."""
        try:
            self._albums.add_part(key, update_id, payload)
        except Exception as error:
            # The part is still queued: unrecorded, it is answered on its own, not lost.
            logger.error("could not record an album part (%s)", type(error).__name__, extra=log)


def _ignore(decision: Ignored, log: dict[str, Any]) -> WebhookResponse:
    """200: Telegram stops re-sending it. A refused button press is answered (Telegram shows
    the button loading until it is) with a short notice; nothing of it is queued."""
    if isinstance(decision, RefusedPress):
        logger.info("button press refused: %s", decision.reason, extra=log)
        call = {
            "method": "answerCallbackQuery",
            "callback_query_id": decision.callback_query_id,
            "text": texts.load("button_unavailable"),
        }
        return reply(200, status="refused", **call)
    logger.info("update ignored: %s", decision.reason, extra=log)
    return reply(200, status="ignored")


def lowercase(value: object) -> dict[str, Any]:
    """A mapping's items with lower-cased keys (HTTP header names are case-insensitive);
    anything else, e.g. a missing `headers`, as an empty dict."""
    if not isinstance(value, Mapping):
        return {}
    return {str(key).lower(): item for key, item in value.items()}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_body(raw: str, is_base64: bool) -> bytes | None:
    if not is_base64:
        return raw.encode("utf-8", errors="surrogatepass")
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None
