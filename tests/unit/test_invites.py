"""Invite links (core/invites.py) on in-memory stores and a clock the test moves: the owner's
/invite, list and revoke; a link admits once per use, never beyond its uses, and nobody once
expired or revoked; a forged token finds nothing; nobody but the owner makes one. Then the
webhook's side: a stranger's `/start <token>` answered and nothing queued, the person (or the
group) heard afterwards. And what people at scale need of pairing: a bounded cache of approvals,
and the hour's codes for everyone a setting."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import SecretStr

from nanobot_lambda.core import pairing as pairing_module
from nanobot_lambda.core.allowlist import AllowList, Audience
from nanobot_lambda.core.invites import Invites, digest_of, invite_token
from nanobot_lambda.core.pairing import Asker, Pairing, Person
from nanobot_lambda.functions.webhook import Webhook, WebhookPolicy, WebhookRecords
from nanobot_lambda.operator.local.stack import http_event
from tests.conftest import telegram_update
from tests.support.fakes import (
    MemoryAlbumBook,
    MemoryInviteStore,
    MemoryLedger,
    MemoryPairingStore,
    MemoryQueue,
    MemoryStopFlags,
    RecordingMetrics,
)

OWNER = 111111111
BOB = Asker(222222222, "Bob")
CAROL = Asker(333333333, "Carol")
DAN = Asker(444444444, "Dan")
GROUP = Asker(-1001234567890, "Family")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


class Desk:
    """The owner's invites on in-memory stores."""

    def __init__(self) -> None:
        self.people = MemoryPairingStore()
        self.store = MemoryInviteStore(self.people)
        self.clock = Clock()
        tokens = iter(f"token{n:03d}-abcdefghijklmnopqrstuvwx" for n in range(100))
        self.invites = Invites(
            self.store, self.people, clock=self.clock, tokens=lambda: next(tokens)
        )

    def command(self, argument: str, sender: int = OWNER, *, private: bool = True) -> str:
        return self.invites.command(
            argument, sender_id=sender, owner=OWNER, private=private, bot_username=lambda: "my_bot"
        )

    def make(self, argument: str = "") -> tuple[str, str]:
        """A new link's token and its id."""
        answer = self.command(argument)
        match = re.search(r"https://t\.me/my_bot\?start=([A-Za-z0-9_-]+)>", answer)
        invite_id = re.search(r"\(id ([0-9a-f]{8})\)", answer)
        assert match is not None and invite_id is not None, answer
        assert f"https://t.me/my_bot?startgroup={match.group(1)}" in answer
        return match.group(1), invite_id.group(1)

    def admit(self, token: str, who: Asker, *, group: bool = False) -> bool:
        return self.invites.admit(token, who, group=group).admitted


def test_a_link_admits_as_many_people_as_it_has_uses_and_no_more() -> None:
    desk = Desk()
    token, _ = desk.make("2 3")  # 2 people, 3 days
    assert desk.admit(token, BOB) and desk.admit(token, CAROL)
    assert not desk.admit(token, DAN)  # the uses ran out
    assert set(desk.people.persons) == {BOB.user_id, CAROL.user_id}
    (invite,) = desk.store.invites()
    assert invite.uses == 2 and invite.max_uses == 2


def test_a_second_start_of_the_same_person_counts_no_use() -> None:
    desk = Desk()
    token, _ = desk.make("2")
    assert desk.admit(token, BOB) and desk.admit(token, BOB)  # welcomed again, at no use
    assert desk.store.invites()[0].uses == 1
    assert desk.admit(token, CAROL)
    assert not desk.admit(token, DAN)


def test_an_expired_link_admits_nobody() -> None:
    desk = Desk()
    token, _ = desk.make("5 1")
    desk.clock.now += timedelta(days=1, seconds=1)
    answer = desk.invites.admit(token, BOB, group=False)
    assert not answer.admitted and "not valid" in answer.text
    assert desk.people.persons == {}
    assert "No invite link is open" in desk.command("list")


def test_a_revoked_link_admits_nobody_and_is_no_longer_listed() -> None:
    desk = Desk()
    token, invite_id = desk.make()
    kept, kept_id = desk.make("3")
    listing = desk.command("list")
    assert f"{invite_id}: 10 of 10 uses left" in listing and f"{kept_id}: 3 of 3" in listing
    assert f"Invite link {invite_id} revoked" in desk.command(f"revoke {invite_id}")
    assert not desk.admit(token, BOB) and desk.people.persons == {}
    assert invite_id not in desk.command("list") and kept_id in desk.command("list")
    assert "No open invite link has the id" in desk.command(f"revoke {invite_id}")
    assert "/invite revoke ID" in desk.command("revoke nonsense")
    assert desk.admit(kept, BOB)


def test_a_forged_or_malformed_token_admits_nobody() -> None:
    desk = Desk()
    token, _ = desk.make()
    forged = token[:-1] + ("y" if token[-1] != "y" else "z")
    assert not desk.admit(forged, BOB)
    assert not desk.admit("token000-abcdefghijklmnopqrstuvwy", BOB)
    assert desk.people.persons == {}
    # Only a /start with one token-shaped word is an invite's.
    assert invite_token(f"/start {token}") == token
    assert invite_token(f"/start@my_bot {token}") == token
    for text in ("/start", f"/help {token}", f"/start {token} more", "/start short", "hi"):
        assert invite_token(text) is None, text


def test_the_store_keeps_the_token_s_digest_never_the_token() -> None:
    desk = Desk()
    token, invite_id = desk.make()
    (invite,) = desk.store.invites()
    assert invite.digest == digest_of(token) and invite.id == invite_id
    assert token not in repr(desk.store.stored)


def test_only_the_owner_in_their_private_chat_makes_lists_or_revokes_links() -> None:
    desk = Desk()
    _, invite_id = desk.make()
    for answer in (
        desk.command("", sender=BOB.user_id),
        desk.command("list", sender=BOB.user_id),
        desk.command(f"revoke {invite_id}", sender=BOB.user_id),
        desk.command("", private=False),  # the owner, in a group: the token would be seen
    ):
        assert answer == "Only the owner can do that."
    assert len(desk.store.invites()) == 1
    nobody_owns = desk.invites.command(
        "", sender_id=BOB.user_id, owner=None, private=True, bot_username=lambda: "my_bot"
    )
    assert nobody_owns == "Only the owner can do that."


@pytest.mark.parametrize("argument", ["0", "1001", "5 0", "5 91", "five", "1 2 3", "-1"])
def test_uses_and_days_out_of_bounds_make_no_link(argument: str) -> None:
    desk = Desk()
    assert "/invite USES DAYS" in desk.command(argument)
    assert desk.store.invites() == []


def test_a_link_lasts_its_days() -> None:
    desk = Desk()
    token, _ = desk.make("1 2")
    desk.clock.now += timedelta(days=2) - timedelta(seconds=1)
    assert desk.admit(token, BOB)


def test_a_group_admitted_by_a_link_is_heard_as_a_whole() -> None:
    desk = Desk()
    token, _ = desk.make("1")
    answer = desk.invites.admit(token, GROUP, group=True)
    assert answer.admitted and "this group" in answer.text
    audience = Audience(OWNER, AllowList.parse(str(OWNER)), Pairing(desk.people).is_approved)
    assert audience.allows_chat(GROUP.user_id)
    assert not desk.admit(token, BOB)  # one use, taken by the group


# -- the webhook -----------------------------------------------------------------------------

SECRET = "webhook-secret-123"


def webhook(queue: MemoryQueue, desk: Desk) -> Webhook:
    return Webhook(
        SecretStr(SECRET),
        WebhookPolicy(AllowList.parse(str(OWNER)), pairing_codes=False),
        queue,
        WebhookRecords(
            MemoryLedger(),
            MemoryStopFlags(),
            MemoryAlbumBook(),
            pairing=Pairing(desk.people, clock=desk.clock),
            invites=desk.invites,
        ),
        RecordingMetrics(),
    )


def from_person(who: Asker, text: str, update_id: int) -> dict[str, Any]:
    update = telegram_update("text_private")
    update["update_id"] = update_id
    update["message"]["from"] = {"id": who.user_id, "is_bot": False, "first_name": who.name}
    update["message"]["chat"] = {"id": who.user_id, "type": "private", "first_name": who.name}
    update["message"]["text"] = text
    return update


def in_group(who: Asker, text: str, update_id: int) -> dict[str, Any]:
    update = from_person(who, text, update_id)
    update["message"]["chat"] = {"id": GROUP.user_id, "type": "supergroup", "title": GROUP.name}
    return update


def post(hook: Webhook, update: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = hook.handle(http_event(json.dumps(update), secret=SECRET)).to_http()
    return response["statusCode"], json.loads(response["body"])


def test_a_stranger_who_opens_a_link_is_admitted_by_the_webhook_and_then_heard() -> None:
    desk, queue = Desk(), MemoryQueue()
    hook = webhook(queue, desk)
    token, _ = desk.make("1")
    assert post(hook, from_person(BOB, "hello", 1))[1]["status"] == "refused"  # not yet
    status, body = post(hook, from_person(BOB, f"/start {token}", 2))
    assert status == 200 and body["status"] == "admitted" and body["method"] == "sendMessage"
    assert body["chat_id"] == BOB.user_id and "invited you" in body["text"]
    assert queue.sent == []  # the /start is answered here, not queued
    assert post(hook, from_person(BOB, "hello", 3))[1]["status"] == "queued"
    status, body = post(hook, from_person(CAROL, f"/start {token}", 4))
    assert body["status"] == "refused" and "not valid" in body["text"]
    assert post(hook, from_person(CAROL, "hello", 5))[1]["status"] == "refused"
    assert len(queue.sent) == 1


def test_a_group_is_admitted_by_its_start_command_and_its_members_are_then_heard() -> None:
    desk, queue = Desk(), MemoryQueue()
    hook = webhook(queue, desk)
    token, _ = desk.make("1")
    assert post(hook, in_group(BOB, "/help", 1))[1]["status"] == "refused"
    _, body = post(hook, in_group(BOB, f"/start@my_bot {token}", 2))
    assert body["status"] == "admitted" and body["chat_id"] == GROUP.user_id
    assert post(hook, in_group(CAROL, "/help", 3))[1]["status"] == "queued"
    assert BOB.user_id not in desk.people.persons  # the group, not its member
    assert post(hook, from_person(BOB, "hello", 4))[1]["status"] == "refused"


def test_the_owner_in_a_group_not_admitted_uses_a_link_for_the_group() -> None:
    desk, queue = Desk(), MemoryQueue()
    hook = webhook(queue, desk)
    token, _ = desk.make("1")
    owner = Asker(OWNER, "Ada")
    assert post(hook, in_group(owner, f"/start@my_bot {token}", 1))[1]["status"] == "admitted"
    assert desk.people.persons.keys() == {GROUP.user_id} and queue.sent == []


def test_an_invite_that_cannot_be_checked_makes_telegram_retry_and_counts_no_use() -> None:
    desk, queue = Desk(), MemoryQueue()
    hook = webhook(queue, desk)
    token, _ = desk.make("1")
    desk.people.fail = True
    assert post(hook, from_person(BOB, f"/start {token}", 1))[0] == 503
    desk.people.fail = False
    assert desk.store.invites()[0].uses == 0
    assert post(hook, from_person(BOB, f"/start {token}", 1))[1]["status"] == "admitted"


# -- pairing at scale -----------------------------------------------------------------------


class CountingStore(MemoryPairingStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def person(self, user_id: int) -> Any:
        self.reads += 1
        return super().person(user_id)


def test_approvals_are_read_once_a_minute_and_the_cache_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pairing_module, "APPROVALS_CACHED", 2)
    store, clock = CountingStore(), Clock()
    for who in (BOB, CAROL, DAN):
        store.persons[who.user_id] = Person(who, clock.now)
    approvals = Pairing(store, clock=clock)
    for _ in range(3):
        assert approvals.is_approved(BOB.user_id) and approvals.is_approved(CAROL.user_id)
    assert store.reads == 2  # one read each, then the cache
    assert approvals.is_approved(DAN.user_id)  # the least recently heard (Bob) is forgotten
    assert approvals.is_approved(CAROL.user_id) and store.reads == 3
    assert approvals.is_approved(BOB.user_id) and store.reads == 4
    clock.now += timedelta(seconds=61)
    assert approvals.is_approved(BOB.user_id) and store.reads == 5  # read again after a minute
    assert not approvals.is_approved(444_000_000) and not approvals.is_approved(444_000_000)
    assert store.reads == 7  # a stranger is read every time: one admitted is heard at once


def test_the_hour_s_codes_for_everyone_are_a_setting() -> None:
    store = MemoryPairingStore()
    desk = Pairing(store, clock=Clock(), codes_per_hour=2)
    assert "owner:" in (desk.answer_stranger(BOB) or "")
    assert "owner:" in (desk.answer_stranger(CAROL) or "")
    assert "try again later" in (desk.answer_stranger(DAN) or "")
