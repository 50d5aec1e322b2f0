"""Pairing (core/pairing.py) on an in-memory store and a clock the test moves: the code a stranger
gets and its limits, the owner's /approve, /deny and /people, and that a guessed or replayed
code gets nobody anything. Then the webhook's side (what a stranger gets, nothing queued) and
the owner's commands through agent_turn's turns."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import SecretStr

from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.jobs import TelegramUpdateJob
from nanobot_lambda.core.pairing import (
    CODES_PER_DAY,
    CODES_PER_HOUR,
    Asker,
    Pairing,
    normal_code,
)
from nanobot_lambda.functions.webhook import Webhook, WebhookPolicy, WebhookRecords
from nanobot_lambda.operator.local.stack import http_event
from tests.conftest import telegram_update
from tests.support.fakes import (
    MemoryAlbumBook,
    MemoryLedger,
    MemoryPairingStore,
    MemoryQueue,
    MemoryStopFlags,
    RecordingMetrics,
    ScriptedModel,
    text,
)
from tests.support.hostile_names import HOSTILE_NAMES, seen
from tests.unit.test_turns import ADA, Bot, message

BOB = Asker(222222222, "Bob Builder", "bob")
EVE = Asker(666666666, "Eve")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def pairing(*codes: str) -> tuple[Pairing, MemoryPairingStore, Clock]:
    store, clock = MemoryPairingStore(), Clock()
    drawn = iter(codes or [f"{n:06d}" for n in range(100_000, 100_100)])
    return Pairing(store, clock=clock, codes=lambda: next(drawn)), store, clock


def code_in(answer: str | None) -> str:
    assert answer is not None
    digits = "".join(char for char in answer.split("owner:")[1].split("(")[0] if char.isdigit())
    assert len(digits) == 6, answer
    return digits


# -- a stranger's code -----------------------------------------------------------------------


def test_a_stranger_gets_one_code_at_a_time_and_a_new_one_after_it_expired() -> None:
    desk, _, clock = pairing()
    first = desk.answer_stranger(BOB)
    assert first is not None and "100 000" in first and "60 minutes" in first
    clock.now += timedelta(minutes=20)
    again = desk.answer_stranger(BOB)
    assert again is not None and "100 000" in again and "40 minutes" in again
    clock.now += timedelta(minutes=41)
    assert code_in(desk.answer_stranger(BOB)) == "100001"


def test_codes_are_limited_per_person_a_day_and_for_everyone_an_hour() -> None:
    desk, _, clock = pairing()
    for _ in range(CODES_PER_DAY):
        code_in(desk.answer_stranger(BOB))
        clock.now += timedelta(minutes=61)
    assert desk.answer_stranger(BOB) == "This is a private assistant. Please try again later."
    clock.now += timedelta(days=1)
    code_in(desk.answer_stranger(BOB))

    crowd, _, _ = pairing()
    for n in range(CODES_PER_HOUR):
        code_in(crowd.answer_stranger(Asker(300_000_000 + n, "Someone")))
    assert "try again later" in (crowd.answer_stranger(EVE) or "")


def test_a_code_open_for_someone_else_is_never_given_twice() -> None:
    desk, _, _ = pairing("123456", "123456", "654321")
    assert code_in(desk.answer_stranger(BOB)) == "123456"
    assert code_in(desk.answer_stranger(EVE)) == "654321"


# -- the owner's commands --------------------------------------------------------------------


def test_the_owner_approves_a_code_once_and_its_person_is_then_heard() -> None:
    desk, _, _ = pairing()
    code = code_in(desk.answer_stranger(BOB))
    assert not desk.is_approved(BOB.user_id)
    answer, approved = desk.approve(f"{code[:3]} {code[3:]}")  # as the owner may type it
    assert approved == BOB and "Bob Builder (@bob), id 222222222" in seen(answer).text
    assert desk.is_approved(BOB.user_id)
    replayed, nobody = desk.approve(code)
    assert nobody is None and "No open request has the code" in replayed


def test_a_guessed_expired_or_malformed_code_approves_nobody() -> None:
    desk, store, clock = pairing()
    code = code_in(desk.answer_stranger(BOB))
    for guess in ("999999", "12345", "abcdef", "1234567", "", "٤٥٦٧٨٩"):
        assert desk.approve(guess)[1] is None, guess
    clock.now += timedelta(minutes=61)
    assert desk.approve(code)[1] is None
    assert store.persons == {}


def test_a_denied_person_gets_no_answer_for_a_day() -> None:
    desk, _, clock = pairing()
    code = code_in(desk.answer_stranger(BOB))
    assert "Refused: Bob Builder" in desk.deny(code)
    assert desk.answer_stranger(BOB) is None
    assert desk.approve(code)[1] is None  # the code is closed
    clock.now += timedelta(hours=25)
    code_in(desk.answer_stranger(BOB))


def test_people_lists_the_approved_and_the_waiting_and_remove_takes_back() -> None:
    desk, _, clock = pairing()
    desk.approve(code_in(desk.answer_stranger(BOB)))
    code_in(desk.answer_stranger(EVE))
    listing = desk.people()
    approved, waiting = listing.split("Waiting")
    assert "Bob Builder" in approved and "Eve" not in approved
    assert "Eve, id 666666666: code 100 001" in waiting
    assert desk.remove("222222222") == "Removed 222222222: they can no longer write to me."
    clock.now += timedelta(seconds=61)  # the webhook trusts what it read for a minute
    assert not desk.is_approved(BOB.user_id)
    assert "not among the approved" in desk.remove("222222222")
    assert "Give the person's id" in desk.remove("bob")


# The commands /people names, the only entities its answer has: the name adds none.
PEOPLE_COMMANDS = [
    ("bot_command", "/approve"),
    ("bot_command", "/deny"),
    ("bot_command", "/people"),
]


@pytest.mark.parametrize(("name", "shown"), HOSTILE_NAMES)
def test_names_show_as_text_when_approved_denied_and_listed(name: str, shown: str) -> None:
    """No link, formatting, mention, command or tag: only the characters, and no entity at all
    but the commands /people itself names. The username too: as `@`-text, not a mention."""
    desk, _, _ = pairing()
    stranger, waiting = Asker(333333333, name, "admin_bot"), Asker(444444444, name)
    answer, _ = desk.approve(code_in(desk.answer_stranger(stranger)))
    approved = seen(answer)
    assert f"Approved: {shown} (@admin_bot), id 333333333." in approved.text
    assert approved.entities == [] and "<" not in approved.html  # no tag at all
    refused = seen(desk.deny(code_in(desk.answer_stranger(waiting))))
    assert f"Refused: {shown}, id 444444444." in refused.text and refused.entities == []

    code_in(desk.answer_stranger(Asker(555555555, name)))
    listing = seen(desk.people())
    assert f"• {shown} (@admin_bot), id 333333333\n" in listing.text
    assert f"• {shown}, id 555555555: code 100 002\n" in listing.text
    assert listing.entities == PEOPLE_COMMANDS and "<a" not in listing.html


@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        ("[x](https://evil.example)", "[x](https://evil.ex…"),
        ("@admin #tag", "@admin #tag"),
        ("**12** 3456", "**12** 3456"),
    ],
)
def test_what_the_owner_typed_is_shown_back_as_text(typed: str, shown: str) -> None:
    desk, _, _ = pairing()
    answer = seen(desk.approve(typed)[0])
    assert answer.text.startswith(f"No open request has the code {shown} (it may")
    assert answer.entities == []


@pytest.mark.parametrize(
    ("typed", "code"),
    [("123456", "123456"), ("123 456", "123456"), ("123-456", "123456"), ("12 3456", "123456")],
)
def test_codes_may_be_typed_with_spaces_or_a_dash(typed: str, code: str) -> None:
    assert normal_code(typed) == code


# -- the webhook -----------------------------------------------------------------------------

SECRET = "webhook-secret-123"


def webhook(queue: MemoryQueue, desk: Pairing | None) -> Webhook:
    return Webhook(
        SecretStr(SECRET),
        WebhookPolicy(AllowList.parse(str(ADA))),
        queue,
        WebhookRecords(MemoryLedger(), MemoryStopFlags(), MemoryAlbumBook(), pairing=desk),
        RecordingMetrics(),
    )


def from_stranger(update_id: int, chat: dict[str, Any] | None = None) -> dict[str, Any]:
    update = telegram_update("text_private")
    update["update_id"] = update_id
    update["message"]["from"] = {"id": BOB.user_id, "is_bot": False, "first_name": "Bob"}
    update["message"]["chat"] = chat or {"id": BOB.user_id, "type": "private", "first_name": "B"}
    update["message"]["text"] = "let me in, here is my secret plan"
    return update


def post(hook: Webhook, update: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(
        hook.handle(http_event(json.dumps(update), secret=SECRET)).to_http()["body"]
    )
    return body


def test_a_stranger_gets_a_code_in_the_webhook_s_answer_and_nothing_is_queued() -> None:
    queue = MemoryQueue()
    desk, _, _ = pairing()
    body = post(webhook(queue, desk), from_stranger(1))
    assert body["status"] == "pairing" and body["method"] == "sendMessage"
    assert body["chat_id"] == BOB.user_id and "100 000" in body["text"]
    assert "secret plan" not in json.dumps(body) and queue.sent == []


def test_in_a_group_or_without_pairing_a_stranger_is_refused_silently() -> None:
    queue = MemoryQueue()
    desk, store, _ = pairing()
    group = telegram_update("group_mention")["message"]["chat"]
    assert post(webhook(queue, desk), from_stranger(1, group)) == {"ok": True, "status": "refused"}
    assert post(webhook(queue, None), from_stranger(2)) == {"ok": True, "status": "refused"}
    assert store.codes == {} and queue.sent == []


def test_an_approved_person_is_queued_like_one_in_allow_from() -> None:
    queue = MemoryQueue()
    desk, _, _ = pairing()
    desk.approve(code_in(desk.answer_stranger(BOB)))
    assert post(webhook(queue, desk), from_stranger(3))["status"] == "queued"
    ((_, group, _),) = queue.sent
    assert group == f"telegram:{BOB.user_id}"


def test_approvals_that_cannot_be_read_make_telegram_retry() -> None:
    desk, store, _ = pairing()
    store.fail = True
    hook = webhook(MemoryQueue(), desk)
    response = hook.handle(http_event(json.dumps(from_stranger(4)), secret=SECRET)).to_http()
    assert response["statusCode"] == 503  # an approved person's message is never lost


# -- the owner's commands, through turns --------------------------------------------------


def owner_bot() -> tuple[Bot, Pairing]:
    bot = Bot(ScriptedModel(text("unused")))
    desk = Pairing(bot.pairing)
    return bot, desk


def test_the_owner_approves_in_their_chat_and_the_person_is_welcomed() -> None:
    bot, desk = owner_bot()
    code = code_in(desk.answer_stranger(BOB))
    bot.process(message(f"/approve {code}", 900000001))
    assert "Approved: Bob Builder (@bob)" in seen(bot.said[0]).text
    assert (BOB.user_id, "The owner approved you: you can write to me now.") in [
        (chat, text_) for chat, text_, _ in bot.channel.sent
    ]
    bot.process(message(f"/approve {code}", 900000002))
    assert "No open request has the code" in bot.said[-1]
    bot.process(message("/people", 900000003))
    assert "Bob Builder" in bot.said[-1] and bot.model.requests == []


def test_no_one_but_the_owner_may_approve() -> None:
    bot, desk = owner_bot()
    code = code_in(desk.answer_stranger(BOB))
    job = message(f"/approve {code}", 900000001)
    update = job.update
    update["message"]["from"]["id"] = 333333333
    update["message"]["chat"]["id"] = 333333333
    bot.process(TelegramUpdateJob(update=update))
    assert bot.said == ["Only the owner can do that."] and bot.pairing.persons == {}
