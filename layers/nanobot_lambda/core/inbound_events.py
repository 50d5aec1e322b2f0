"""Signed event hooks: an HTTP route per hook (`POST /hooks/<name>` on the webhook's API) that
turns a signed request into a task in the chat the hook was made in.

A hook is made by the owner (`/hooks add NAME [quiet]` in a chat, or `nanobot-lambda hooks add`)
and has its own secret, shown once. A request is heard only when it is signed with it:
- the generic form: `X-Hook-Timestamp: <unix seconds>` within `MAX_SKEW` of now, and
  `X-Hook-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>." + body>`; optionally
  `X-Hook-Delivery` (the sender's id of the delivery, so a re-sent one is queued once) and
  `X-Hook-Event` (a short name of what happened);
- GitHub's form, so a GitHub webhook works as it is: `X-Hub-Signature-256: sha256=<hex
  HMAC-SHA256 of the body>`, with `X-GitHub-Delivery` and `X-GitHub-Event`. GitHub signs no
  time: a replay is refused by its signature, remembered for `GITHUB_REPLAY_DAYS`.

A replay is refused by what the request's signature and delivery id have been seen with before
(`replay_keys`): a delivery re-signed with a new timestamp keeps its delivery id, and a captured
request with a changed (unsigned) delivery header keeps its signature. The secret is kept as it
is in the hook's item (DynamoDB, encrypted at rest, readable only by the webhook and
agent_turn): HMAC needs the secret itself, as the webhook needs Telegram's secret token; it never
appears in a log, the model's context or a tool's output, and only the answer to `add` shows it.

`/hooks add` answers its secret exactly once, though SQS may run its update more than once (an
invocation that dies after the hook was stored but before its secret reached the chat is run
again): the hook records the update that made it (`made_in`, the update's turn id), and a run of
that same update finding the name taken answers with the stored secret, as the first run did;
any other update finding it taken is refused. agent_turn sends that answer through the turn
journal (functions/agent_turn/commands.py), so a run after Telegram accepted it sends it no more.
A hook kept before `made_in` was (or made with the operator's CLI) has none: it is another
update's. If that update fails for good (dead-lettered) before any run sent the secret, the hook
it made is withdrawn (`HookCommands.withdraw`), so its name can be added again.

An accepted event becomes a `HookEventJob` (core/jobs.py) in the hook's chat order, its payload
the body as text cut to `PAYLOAD_MAX_BYTES` and framed as untrusted data for the model
(`hook_event_prompt`): the boundary it is put between is derived from the payload itself, so no
payload can close it. With `quiet`, the task reports only what needs the person, as quiet cron
tasks do (the heartbeat's marker). At most `RATE_PER_MINUTE` events a hook are queued a minute.

Each request at a hook that exists is kept as a `Delivery` (the owner's console and `/hooks`
show them): when, what the route answered (queued, a duplicate, refused and why, or the stores
away), the turn it caused, and of the payload only its size and SHA-256 digest, never the
payload (it may hold private data). A hook keeps its last `DELIVERIES_KEPT`, none longer than
`DELIVERIES_KEEP`. A request for a name no hook has is kept nowhere: nobody could see it, and
anyone could fill the table with names. The turn a delivery caused is found in its chat's
session: its saved prompt carries the turn's id (`EVENT_TURN_FIELD`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, Protocol

from pydantic import SecretStr

from nanobot_lambda.core import texts
from nanobot_lambda.core.jobs import HookEventJob
from nanobot_lambda.core.sessions import session_key_for


class HookStore(Protocol):
    """The owner's event hooks, by name."""

    def hook(self, name: str) -> Hook | None: ...

    def hooks(self) -> list[Hook]: ...

    def add(self, hook: Hook) -> bool:
        """Keep a new hook; False (nothing changed) when its name is taken."""
        ...

    def remove(self, name: str) -> bool:
        """False when there was no such hook."""
        ...

    def deliveries(self, name: str) -> list[Delivery]:
        """The last deliveries kept for hook `name` (see `HookInbox.record`), newest first;
        those of an earlier hook of that name too (`deliveries_of` leaves them out)."""
        ...


class HookInbox(Protocol):
    """What the webhook keeps of a hook's requests: its rate, and the deliveries it queued."""

    def take_slot(self, name: str, minute: str, limit: int) -> bool:
        """Count one more event of hook `name` in `minute`; False (nothing counted) past
        `limit`."""
        ...

    def seen(self, name: str, keys: Sequence[str]) -> bool:
        """Whether any of `keys` (a delivery's id, its signature) was queued before."""
        ...

    def remember(self, name: str, keys: Sequence[str], until: datetime) -> None:
        """Note `keys` as queued until `until`."""
        ...

    def record(self, name: str, delivery: Delivery) -> None:
        """Keep `delivery` among hook `name`'s last `DELIVERIES_KEPT`, until `DELIVERIES_KEEP`
        after it (an older one's place is taken: the hook's records never grow past them)."""
        ...


# A hook's name is in its URL and in the chat: lowercase letters, digits and dashes, starting
# with a letter, at most 32 characters. Anything else is refused when the hook is made.
NAME_RULE = re.compile(r"[a-z][a-z0-9-]{0,31}")  # whole names only: fullmatch
MAX_SKEW = timedelta(minutes=5)
PAYLOAD_MAX_BYTES = 16 * 1024
BODY_MAX_BYTES = 1_000_000  # over it: 413 before the body is decoded or read further
RATE_PER_MINUTE = 30
HOOKS_MAX = 50  # hooks a deployment may have
GENERIC_REPLAY_DAYS = 1  # the timestamp refuses anything older than MAX_SKEW anyway
GITHUB_REPLAY_DAYS = 30
DELIVERIES_KEPT = 20  # a hook's last deliveries kept, for the console and /hooks
DELIVERIES_KEEP = timedelta(days=30)
# The field of a hook event's saved prompt (in its chat's session) naming its turn: where the
# console finds what a delivery caused. A name of the `_id` kind: a cut message keeps it whole.
EVENT_TURN_FIELD = "hook_turn_id"
# A delivery or event id as a sender may give it: what the queue's deduplication id allows.
_HEADER_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")
_SIGNATURE = re.compile(r"sha256=([0-9a-fA-F]{64})")

TIMESTAMP_HEADER = "x-hook-timestamp"
SIGNATURE_HEADER = "x-hook-signature"
DELIVERY_HEADER = "x-hook-delivery"
EVENT_HEADER = "x-hook-event"
GITHUB_SIGNATURE_HEADER = "x-hub-signature-256"
GITHUB_DELIVERY_HEADER = "x-github-delivery"
GITHUB_EVENT_HEADER = "x-github-event"


@dataclass(frozen=True)
class Hook:
    name: str
    chat_id: int  # where its events are tasks (in that chat's scope, counted to that chat)
    thread_id: int | None
    quiet: bool
    secret: SecretStr
    created_at: str
    created_by: int | None = None
    made_in: str | None = None  # the turn id of the update whose `/hooks add` made it


DeliveryOutcome = Literal["queued", "duplicate", "refused", "unavailable"]


@dataclass(frozen=True)
class Delivery:
    """A request at a hook as the route decided it. Of its payload only its size and digest
    are kept: the payload may hold private data."""

    at: str  # when it came (ISO 8601, UTC, seconds)
    outcome: DeliveryOutcome  # unavailable: a store or the queue was away (the sender retries)
    status: int  # the HTTP status answered
    reason: str | None  # what the sender was told when it was not queued
    size: int  # the body's bytes (a body too large to read: as it came, encoded)
    digest: str | None  # the body's SHA-256, hex (None: too large to be read)
    delivery_id: str | None = None  # a signed delivery's id (the sender's or its signature's)
    event: str | None = None  # a signed delivery's event name
    turn_id: str | None = None  # queued: the turn it caused (`turn_id`)
    chat_id: int | None = None  # queued: the chat (and topic) that turn runs in
    thread_id: int | None = None

    @property
    def session(self) -> str | None:
        """The session of the turn it caused (None: it caused none)."""
        if self.turn_id is None or self.chat_id is None:
            return None
        return session_key_for(self.chat_id, self.thread_id)


def deliveries_of(store: HookStore, hook: Hook) -> list[Delivery]:
    """The hook's last deliveries kept, newest first: none from before it was made (a removed
    hook's, of the same name, are its own)."""
    return [delivery for delivery in store.deliveries(hook.name) if delivery.at >= hook.created_at]


def delivery_digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


class BadHookName(ValueError):
    """A name that breaks NAME_RULE: the message says what a name may be."""


def check_name(name: str) -> str:
    if not NAME_RULE.fullmatch(name):
        raise BadHookName(texts.render("hooks_bad_name", name=texts.literal(name, 40)))
    return name


def new_hook(
    name: str,
    chat_id: int,
    thread_id: int | None,
    *,
    quiet: bool,
    now: datetime,
    created_by: int | None,
    made_in: str | None = None,
) -> Hook:
    """A hook with a fresh secret (256 bits, URL-safe); BadHookName for an odd name."""
    return Hook(
        check_name(name),
        chat_id,
        thread_id,
        quiet,
        SecretStr(secrets.token_urlsafe(32)),
        now.isoformat(timespec="seconds"),
        created_by,
        made_in,
    )


# -- a request: signed or not ---------------------------------------------------------------


@dataclass(frozen=True)
class Signed:
    """A request signed with the hook's secret: who it is from and what it is."""

    delivery_id: str
    event: str | None
    replay_keys: tuple[str, ...]  # what a replay of it would repeat
    keep: timedelta  # how long they are remembered
    form: str  # "generic" or "github"


@dataclass(frozen=True)
class Unsigned:
    reason: str  # for the sender and the log: never the secret or the body


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The generic form's signature header value (what a sender computes)."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


def sign_github(secret: str, body: bytes) -> str:
    """GitHub's X-Hub-Signature-256 value for `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(hook: Hook, headers: Mapping[str, str], body: bytes, now: datetime) -> Signed | Unsigned:
    """Whether `body` with `headers` (lower-cased names) is signed with the hook's secret, in
    either form; the generic form wins when both are present."""
    secret = hook.secret.get_secret_value()
    if SIGNATURE_HEADER in headers:
        return _verify_generic(secret, headers, body, now)
    if GITHUB_SIGNATURE_HEADER in headers:
        return _verify_github(secret, headers, body)
    return Unsigned(f"unsigned: send {SIGNATURE_HEADER} or {GITHUB_SIGNATURE_HEADER}")


def _verify_generic(
    secret: str, headers: Mapping[str, str], body: bytes, now: datetime
) -> Signed | Unsigned:
    raw_time = headers.get(TIMESTAMP_HEADER, "")
    if not (raw_time.isascii() and raw_time.isdigit()) or len(raw_time) > 12:
        return Unsigned(f"{TIMESTAMP_HEADER} must be the time in unix seconds")
    if abs(now.timestamp() - int(raw_time)) > MAX_SKEW.total_seconds():
        return Unsigned(f"{TIMESTAMP_HEADER} is more than 5 minutes from now")
    presented = _presented(headers.get(SIGNATURE_HEADER, ""))
    if presented is None or not hmac.compare_digest(
        presented, sign(secret, body, int(raw_time))[len("sha256=") :]
    ):
        return Unsigned("wrong signature")
    return _signed(
        presented, headers, DELIVERY_HEADER, EVENT_HEADER, GENERIC_REPLAY_DAYS, "generic"
    )


def _verify_github(secret: str, headers: Mapping[str, str], body: bytes) -> Signed | Unsigned:
    presented = _presented(headers.get(GITHUB_SIGNATURE_HEADER, ""))
    if presented is None or not hmac.compare_digest(
        presented, sign_github(secret, body)[len("sha256=") :]
    ):
        return Unsigned("wrong signature")
    return _signed(
        presented,
        headers,
        GITHUB_DELIVERY_HEADER,
        GITHUB_EVENT_HEADER,
        GITHUB_REPLAY_DAYS,
        "github",
    )


def _presented(value: str) -> str | None:
    match = _SIGNATURE.fullmatch(value.strip())
    return match.group(1).lower() if match else None


def _signed(
    signature: str,
    headers: Mapping[str, str],
    delivery_header: str,
    event_header: str,
    replay_days: int,
    form: str,
) -> Signed:
    """The delivery id is the sender's when it gives a usable one, else the signature's."""
    given = headers.get(delivery_header, "").strip()
    delivery = given if _HEADER_ID.fullmatch(given) else f"sig-{signature[:32]}"
    event = headers.get(event_header, "").strip()
    keys = (f"sig#{signature}",) + ((f"delivery#{given}",) if _HEADER_ID.fullmatch(given) else ())
    return Signed(
        delivery,
        event if _HEADER_ID.fullmatch(event) else None,
        keys,
        timedelta(days=replay_days),
        form,
    )


def event_job(hook: Hook, signed: Signed, body: bytes, now: datetime) -> HookEventJob:
    """The queued task of an accepted event: the body as text, cut to PAYLOAD_MAX_BYTES."""
    cut = body[:PAYLOAD_MAX_BYTES]
    return HookEventJob(
        hook=hook.name,
        chat_id=hook.chat_id,
        thread_id=hook.thread_id,
        delivery_id=signed.delivery_id,
        event=signed.event,
        payload=cut.decode("utf-8", errors="ignore").replace("\x00", "\ufffd"),
        truncated=len(body) > PAYLOAD_MAX_BYTES,
        received_at=now.isoformat(timespec="seconds"),
        quiet=hook.quiet,
    )


def dedup_id(hook: str, delivery_id: str) -> str:
    """The queue's deduplication id of a delivery (at most 128 characters)."""
    return "hook-" + hashlib.sha256(f"{hook}\n{delivery_id}".encode()).hexdigest()


def turn_id(job: HookEventJob) -> str:
    """The turn of one delivery: an event queued or run twice is answered once. It runs in the
    chat's own conversation (the session of its chat and topic, its queue group too), so the
    person can ask about it afterwards and a quiet hook's later events see what was reported."""
    return f"hook-{job.hook}-{job.delivery_id}"


def hook_event_prompt(job: HookEventJob) -> str:
    """The event as the model gets it: who sent it, and the payload between boundary lines
    derived from the payload (so no payload contains its own), marked as data, never
    instructions."""
    boundary = "PAYLOAD-" + hashlib.sha256(job.payload.encode()).hexdigest()[:16]
    values = {
        "name": job.hook,
        "event": texts.quoted(job.event or "unnamed"),
        "received": job.received_at,
        "boundary": boundary,
        "payload": job.payload,
        "truncated": texts.load("hook_event_truncated") if job.truncated else "",
    }
    if job.quiet:
        # Imported here: the webhook (which imports this module) needs none of the heartbeat's.
        from nanobot_lambda.core.heartbeat import HEARTBEAT_OK

        return texts.render("hook_event_quiet", marker=HEARTBEAT_OK, **values)
    return texts.render("hook_event", **values)


# -- the owner's commands: /hooks ------------------------------------------------------------


@dataclass(frozen=True)
class HookReply:
    """What /hooks answers: `here` in the chat it was sent in; `to_owner`, when set, in the
    owner's private chat (a hook made in a group: its secret is for the owner's eyes only).
    `secret_of` names the hook whose secret the answer shows (in `to_owner` when it is set,
    else in `here`): that message is journaled as a note of it, never as its text."""

    here: str
    to_owner: str | None = None
    secret_of: str | None = None


def made_by(hook: Hook, update: str) -> bool:
    """Whether `hook` was made by the update `update` (its turn id): a run of that update
    finding it answers as the run that made it did. A hook without `made_in` is another's."""
    return hook.made_in == update


class HookCommands:
    """`/hooks` (list), `/hooks add NAME [quiet]`, `/hooks remove NAME`: the owner's only. A hook
    made in a chat sends its events to that chat (and topic).

    `hooks_url` is the hooks' base URL on the HTTP API (`…/hooks`). The answer to `add` holds
    the secret (in a private chat in the answer itself, from a group in `to_owner`): it is sent
    as it is, never saved in the session, logged or shown to the model. `update` is the turn id
    of the update the command came in (see the module's docstring): a hook it made before is
    answered again with its secret."""

    def __init__(self, store: HookStore, hooks_url: str, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._hooks_url = hooks_url.rstrip("/")
        self._clock = clock

    def answer(
        self,
        arguments: str,
        *,
        chat_id: int,
        thread_id: int | None,
        sender_id: int,
        is_owner: bool,
        private: bool,
        update: str,
    ) -> HookReply:
        if not is_owner:
            return HookReply(texts.load("hooks_owner_only"))
        words = arguments.split()
        if not words or words == ["list"]:
            return HookReply(self._list())
        action, rest = words[0].lower(), words[1:]
        if action == "add" and len(rest) in (1, 2) and rest[1:] in ([], ["quiet"]):
            quiet = rest[1:] == ["quiet"]
            made = self.make(rest[0], chat_id, thread_id, sender_id, update, quiet=quiet)
            if isinstance(made, str):
                return HookReply(made)
            if private:
                return HookReply(self._added(made), secret_of=made.name)
            told = texts.render("hooks_added_group", name=made.name, url=self.url_of(made.name))
            return HookReply(told, to_owner=self._added(made), secret_of=made.name)
        if action == "remove" and len(rest) == 1:
            return HookReply(self._remove(rest[0]))
        return HookReply(texts.load("hooks_usage"))

    def url_of(self, name: str) -> str:
        return f"{self._hooks_url}/{name}"

    def made_in(self, update: str) -> Hook | None:
        """The hook the update `update` (its turn id) made, if it made one and it is kept."""
        return next((hook for hook in self._store.hooks() if made_by(hook, update)), None)

    def withdraw(self, hook: Hook) -> None:
        """Remove a hook whose secret was never shown (its update failed for good): nobody can
        sign its events, and its name is free for `/hooks add` again."""
        self._store.remove(hook.name)

    def _list(self) -> str:
        hooks = self._store.hooks()
        if not hooks:
            return texts.load("hooks_none")
        lines = []
        for hook in hooks:
            lines.append(
                texts.render(
                    "hooks_line",
                    name=hook.name,
                    chat=hook.chat_id,
                    quiet=" (quiet)" if hook.quiet else "",
                    url=self.url_of(hook.name),
                )
            )
            last = deliveries_of(self._store, hook)[:1]
            if last:
                lines.append(_last_delivery(last[0]))
        return texts.render("hooks_list", hooks="\n".join(lines))

    def make(
        self,
        name: str,
        chat_id: int,
        thread_id: int | None,
        sender_id: int,
        update: str,
        *,
        quiet: bool,
    ) -> Hook | str:
        """The hook made (by this update, in this run or an earlier one), or why none was.
        `update` names what made it: a Telegram update's turn id, or the console's press."""
        try:
            hook = new_hook(
                name,
                chat_id,
                thread_id,
                quiet=quiet,
                now=self._clock(),
                created_by=sender_id,
                made_in=update,
            )
        except BadHookName as error:
            return str(error)
        # Before the count: the hook an earlier run made counts among them.
        existing = self._store.hook(hook.name)
        if existing is None:
            if len(self._store.hooks()) >= HOOKS_MAX:
                return texts.render("hooks_too_many", limit=HOOKS_MAX)
            if self._store.add(hook):
                return hook
            existing = self._store.hook(hook.name)  # made meanwhile by another run
        if existing is not None and made_by(existing, update):
            return existing
        return texts.render("hooks_taken", name=name)

    def _added(self, hook: Hook) -> str:
        return texts.render(
            "hooks_added",
            name=hook.name,
            url=self.url_of(hook.name),
            secret=hook.secret.get_secret_value(),
            quiet=texts.load("hooks_added_quiet") if hook.quiet else "",
        )

    def _remove(self, name: str) -> str:
        if not NAME_RULE.fullmatch(name) or not self._store.remove(name):
            return texts.render("hooks_unknown", name=texts.literal(name, 40))
        return texts.render("hooks_removed", name=name)


def _last_delivery(delivery: Delivery) -> str:
    """A hook's last delivery in /hooks: when (UTC) and what the route did with it."""
    outcome = texts.render(
        f"hooks_delivery_{delivery.outcome}",
        status=delivery.status,
        reason=texts.literal(delivery.reason or "", 80),
    )
    at = delivery.at[:16].replace("T", " ") + " UTC"
    return texts.render("hooks_last_delivery", at=at, outcome=outcome)
