"""Pairing through the whole stack (Pairing=on): a stranger's private message is answered by the
webhook with a code (Telegram performs the sendMessage in its answer), nothing reaches the queue
or the model; the owner (the local user) approves it with /approve; the stranger is then heard,
in a scope of their own. A replayed code and a refused person get nothing."""

from __future__ import annotations

import json
import re
from typing import Any

from nanobot_lambda.operator.local.bot_api import SentMessage
from nanobot_lambda.operator.local.stack import LocalStack, LocalUser
from tests.conftest import StackFactory
from tests.support.hostile_names import seen_sent
from tests.support.scripted_model import ScriptedModelServer

BOB = 222222222
OWNER = LocalUser().id


def bob_says(stack: LocalStack, text: str, update_id: int, **names: str) -> dict[str, Any]:
    """Bob's private message; `names` (first_name, last_name, username) as he chose them."""
    names = {"first_name": "Bob", **names}
    update = stack.text_update(text, chat_id=BOB)
    update["update_id"] = update_id
    update["message"]["from"] = {"id": BOB, "is_bot": False, **names}
    update["message"]["chat"] = {"id": BOB, "type": "private", **names}
    body: dict[str, Any] = json.loads(stack.post_update(update)["body"])
    stack.process_queue()
    return body


def owner_says(stack: LocalStack, text: str) -> str:
    stack.post_update(stack.text_update(text))
    stack.process_queue()
    return [m.plain_text for m in stack.bot_api.messages if m.chat_id == OWNER][-1]


def last_to_owner(stack: LocalStack) -> SentMessage:
    return [m for m in stack.bot_api.messages if m.chat_id == OWNER][-1]


def said_to(stack: LocalStack, chat_id: int) -> list[str]:
    return [m.plain_text for m in stack.bot_api.messages if m.chat_id == chat_id]


def test_a_stranger_is_heard_once_the_owner_approves_their_code(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(Pairing="on")
    body = bob_says(stack, "hello, my secret plan", 900000001)
    assert body["status"] == "pairing"
    (invitation,) = said_to(stack, BOB)  # Telegram performed the webhook's sendMessage
    match = re.search(r"owner: (\d{3} \d{3})", invitation)
    assert match is not None
    assert model_server.requests == [] and stack.poller.failures == 0

    assert "Approved: Bob" in owner_says(stack, f"/approve {match.group(1)}")
    assert said_to(stack, BOB)[-1] == "The owner approved you: you can write to me now."
    assert "No open request" in owner_says(stack, f"/approve {match.group(1)}")  # replayed

    model_server.reply("Hello Bob.")
    assert bob_says(stack, "hello again", 900000002)["status"] == "queued"
    assert said_to(stack, BOB)[-1] == "Hello Bob."
    assert "secret plan" not in json.dumps(model_server.requests)  # never queued
    assert "Bob, id 222222222" in owner_says(stack, "/people")


def test_a_strangers_chosen_name_is_text_in_the_owners_chat(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    """Issue 26, item 7: a first name `[click here](http://evil.example/y)` was a link in
    "Approved: …" and /people. Now no name makes a link, formatting, mention, command or tag:
    the messages Telegram gets have no entity but the commands /people names itself."""
    stack = stack_factory(Pairing="on")
    first, last = "[click here](http://evil.example/y) **urgent**", "<b>@admin</b>\n/approve 1 #tag"
    shown = "[click here](http://evil.example/y) **urgent** <b>@admin</b> /approve 1 #tag"
    body = bob_says(stack, "hi", 900000006, first_name=first, last_name=last, username="evil_bob")
    code = re.findall(r"\d{3} \d{3}", said_to(stack, BOB)[0])[0]
    assert body["status"] == "pairing"

    owner_says(stack, f"/approve {code}")
    approved = seen_sent([last_to_owner(stack)])
    assert approved.text.startswith(f"✅ Approved: {shown} (@evil_bob), id {BOB}. They can")
    assert approved.entities == [] and "<" not in approved.html  # no tag of any kind

    owner_says(stack, "/people")
    listing = seen_sent([last_to_owner(stack)])
    assert f"• {shown} (@evil_bob), id {BOB}\n" in listing.text
    assert {kind for kind, _ in listing.entities} == {"bot_command"}  # /approve, /deny, /people
    assert [text for _, text in listing.entities] == ["/approve", "/deny", "/people"]
    assert "<a" not in listing.html and model_server.requests == []


def test_a_refused_stranger_gets_no_answer_and_nothing_is_queued(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(Pairing="on")
    bob_says(stack, "hi", 900000003)
    (invitation,) = said_to(stack, BOB)
    code = re.findall(r"\d{3} \d{3}", invitation)[0]
    assert "Refused: Bob" in owner_says(stack, f"/deny {code}")
    assert bob_says(stack, "please?", 900000004) == {"ok": True, "status": "refused"}
    assert said_to(stack, BOB) == [invitation] and model_server.requests == []


def test_without_pairing_a_stranger_is_refused_without_a_word(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    assert bob_says(stack, "hi", 900000005) == {"ok": True, "status": "refused"}
    assert said_to(stack, BOB) == []
