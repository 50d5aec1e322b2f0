"""Invite links through the whole stack (issue 41, People at scale), with pairing off: the owner
(the local user) makes a link with /invite in their chat, agent_turn answering with the link the
local Bot API's bot name gives; two people open it (their `/start <token>` answered by the
webhook, Telegram performing the sendMessage in its answer, nothing queued) and are then heard,
each in their own chat; a third is refused once the uses ran out; a revoked link admits nobody;
a group is admitted by its `/start@bot <token>`; nobody but the owner makes a link. The admission
is DynamoDB's conditional transaction on moto server."""

from __future__ import annotations

import json
import re
from typing import Any

from nanobot_lambda.operator.local.bot_api import BOT_USER
from nanobot_lambda.operator.local.stack import LocalStack, LocalUser
from tests.e2e.test_console_api import call, launch_of
from tests.support.scripted_model import ScriptedModelServer

OWNER = LocalUser().id
BOB, CAROL, DAN, ERIN = 222222222, 333333333, 444444444, 555555555
GROUP = -1009876543210
BOT = BOT_USER["username"]


def person_says(stack: LocalStack, person: int, text: str, update_id: int) -> dict[str, Any]:
    update = stack.text_update(text, chat_id=person)
    update["update_id"] = update_id
    body: dict[str, Any] = json.loads(stack.post_update(update)["body"])
    stack.process_queue()
    return body


def said_in_group(stack: LocalStack, person: int, text: str, update_id: int) -> dict[str, Any]:
    update = stack.text_update(text, chat_id=person)
    update["update_id"] = update_id
    update["message"]["chat"] = {"id": GROUP, "type": "supergroup", "title": "The Family"}
    body: dict[str, Any] = json.loads(stack.post_update(update)["body"])
    stack.process_queue()
    return body


def owner_says(stack: LocalStack, text: str) -> str:
    stack.post_update(stack.text_update(text))
    stack.process_queue()
    return [m.plain_text for m in stack.bot_api.messages if m.chat_id == OWNER][-1]


def said_to(stack: LocalStack, chat_id: int) -> list[str]:
    return [m.plain_text for m in stack.bot_api.messages if m.chat_id == chat_id]


def new_link(stack: LocalStack, command: str) -> tuple[str, str]:
    """The token and the id of the link the owner's `command` made."""
    answer = owner_says(stack, command)
    link = re.search(rf"https://t\.me/{BOT}\?start=([A-Za-z0-9_-]+)", answer)
    invite_id = re.search(r"\(id ([0-9a-f]{8})\)", answer)
    assert link is not None and invite_id is not None, answer
    assert f"https://t.me/{BOT}?startgroup={link.group(1)}" in answer
    return link.group(1), invite_id.group(1)


def test_two_people_use_a_link_of_two_a_third_is_refused_and_a_revoked_link_admits_nobody(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    token, invite_id = new_link(stack, "/invite 2 7")
    assert person_says(stack, BOB, "hello", 910000001)["status"] == "refused"  # not before

    welcome = "Welcome! The owner invited you: you can write to me now."
    assert person_says(stack, BOB, f"/start {token}", 910000002)["status"] == "admitted"
    assert said_to(stack, BOB)[-1] == welcome
    # A second press of Start: Bob is heard now, so it is an ordinary /start, and uses nothing.
    assert person_says(stack, BOB, f"/start {token}", 910000003)["status"] == "queued"
    assert said_to(stack, BOB)[-1].startswith("Hi! I'm nanobot")
    assert person_says(stack, CAROL, f"/start {token}", 910000004)["status"] == "admitted"
    assert said_to(stack, CAROL)[-1] == welcome
    body = person_says(stack, DAN, f"/start {token}", 910000005)
    assert body["status"] == "refused"
    assert "not valid" in said_to(stack, DAN)[-1]
    assert model_server.requests == []  # no /start reached a turn

    model_server.reply("Hello Bob.")
    assert person_says(stack, BOB, "hello again", 910000006)["status"] == "queued"
    assert said_to(stack, BOB)[-1] == "Hello Bob."
    model_server.reply("Hello Carol.")
    assert person_says(stack, CAROL, "hi", 910000007)["status"] == "queued"
    assert said_to(stack, CAROL)[-1] == "Hello Carol."
    assert person_says(stack, DAN, "hi", 910000008)["status"] == "refused"

    people = owner_says(stack, "/people")
    assert f"id {BOB}" in people and f"id {CAROL}" in people and f"id {DAN}" not in people
    assert "No invite link is open" in owner_says(stack, "/invite list")  # used up
    assert invite_id not in owner_says(stack, "/invite list")

    revoked, revoked_id = new_link(stack, "/invite")
    assert f"{revoked_id}: 10 of 10 uses left" in owner_says(stack, "/invite list")
    assert "revoked" in owner_says(stack, f"/invite revoke {revoked_id}")
    assert person_says(stack, DAN, f"/start {revoked}", 910000009)["status"] == "refused"
    assert person_says(stack, ERIN, f"/start {revoked}", 910000010)["status"] == "refused"
    assert person_says(stack, DAN, "hi", 910000011)["status"] == "refused"
    assert f"id {DAN}" not in owner_says(stack, "/people")


def test_a_group_is_admitted_by_its_start_command_and_nobody_else_makes_a_link(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    token, _ = new_link(stack, "/invite 1")
    assert said_in_group(stack, BOB, "/usage", 920000001)["status"] == "refused"
    body = said_in_group(stack, BOB, f"/start@{BOT} {token}", 920000002)
    assert body["status"] == "admitted" and body["chat_id"] == GROUP
    assert "invited this group" in said_to(stack, GROUP)[-1]
    # Every member is heard there now: a command is answered in the group's own chat.
    before = len(said_to(stack, GROUP))
    assert said_in_group(stack, CAROL, "/usage", 920000003)["status"] == "queued"
    assert len(said_to(stack, GROUP)) == before + 1  # /usage answered in the group
    assert person_says(stack, CAROL, "hi", 920000004)["status"] == "refused"  # not herself

    # A person the owner did not make one for cannot make a link, even once admitted.
    assert said_in_group(stack, CAROL, "/invite", 920000005)["status"] == "queued"
    assert said_to(stack, GROUP)[-1] == "Only the owner can do that."
    assert "https://t.me/" not in json.dumps([m.plain_text for m in stack.bot_api.messages[-1:]])
    assert model_server.requests == []


def test_a_person_an_invite_admitted_signs_in_to_the_console_in_their_own_scope(
    stack: LocalStack,
) -> None:
    """With pairing off too: the console's sign-in hears whom the store admitted."""
    bob = {"id": BOB, "first_name": "Bob"}
    assert call(stack, "me", {}, launch_of(stack, bob))[0] == 403
    token, _ = new_link(stack, "/invite 1")
    assert person_says(stack, BOB, f"/start {token}", 930000001)["status"] == "admitted"
    status, me = call(stack, "me", {}, launch_of(stack, bob))
    assert status == 200 and me["scope"] == f"people/{BOB}" and me["is_owner"] is False
