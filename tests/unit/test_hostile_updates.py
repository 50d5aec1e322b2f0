"""The hostile-update corpus (tests/support/hostile_updates.py) through (a) the webhook logic and
(b) agent_turn's inbound path: what is queued is rebuilt, resolved and rendered without error,
what is not is answered with the expected status, and no message text is logged."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from nanobot_lambda.adapters.telegram.addressing import addressed_to_bot, is_group_chat
from nanobot_lambda.adapters.telegram.client import TelegramError
from nanobot_lambda.adapters.telegram.formatting import render_messages
from nanobot_lambda.adapters.telegram.html_check import parse_telegram_html, telegram_length
from nanobot_lambda.adapters.telegram.inbound import InboundMessage, to_inbound
from nanobot_lambda.adapters.telegram.media import MediaResolver
from nanobot_lambda.adapters.telegram.models import Update, User
from nanobot_lambda.core.jobs import TelegramUpdateJob, parse_job
from nanobot_lambda.functions.webhook import MAX_JOB_BYTES
from nanobot_lambda.settings import AgentSettings
from tests.support.fakes import MemoryWorkspace
from tests.support.hostile_updates import ALLOW_FROM, CASES, Case
from tests.support.settings import AGENT_ENV
from tests.unit.test_webhook import SECRET, MemoryQueue, make_webhook

BOT = User(id=7000000001, is_bot=True, first_name="Nano", username="nano_lambda_bot")
SETTINGS = AgentSettings.from_env({**AGENT_ENV, "ALLOW_FROM": ALLOW_FROM})
IDS = [case.name for case in CASES]


class UnreachableFiles:
    """The Bot API as the resolver sees it, for files that are not there."""

    def get_me(self) -> User:
        return BOT

    def get_file(self, file_id: str) -> tuple[str, int | None]:
        raise TelegramError("getFile", 400, "Bad Request: invalid file_id")

    def download(self, file_path: str, max_bytes: int) -> bytes:
        raise AssertionError("nothing is downloaded")


def test_the_corpus_is_large_and_covers_every_status() -> None:
    assert len(CASES) >= 50
    assert len(set(IDS)) == len(IDS)
    assert {case.status for case in CASES} == {200, 400, 401, 405, 413}
    assert {case.outcome for case in CASES if case.status == 200} == {
        "queued",
        "ignored",
        "refused",
        "recorded",  # a reaction (core/reactions_and_edits.py)
    }


def private_texts(case: Case) -> list[str]:
    """The texts of the case's update that must never be logged (long enough to be telling)."""
    if not isinstance(case.body, dict):
        return []
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("text", "caption") and isinstance(value, str) and len(value) >= 4:
                    found.append(value[:60])
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(case.body)
    return found


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_webhook_answers_each_hostile_request(case: Case, caplog: pytest.LogCaptureFixture) -> None:
    queue = MemoryQueue()
    webhook = make_webhook(queue, allow=ALLOW_FROM)
    with caplog.at_level(logging.INFO):
        response = webhook.handle(case.event(SECRET, 900_000_001)).to_http()

    assert response["statusCode"] == case.status
    body = json.loads(response["body"])
    assert body["ok"] is (case.status < 400)
    if case.status == 200:
        assert body["status"] == case.outcome
    assert len(queue.sent) == (1 if case.outcome == "queued" else 0)
    for text in private_texts(case):
        assert text not in caplog.text


@pytest.mark.parametrize(
    "case", [case for case in CASES if case.outcome == "queued"], ids=lambda case: case.name
)
def test_agent_turn_handles_each_queued_hostile_update(case: Case) -> None:
    queue = MemoryQueue()
    webhook = make_webhook(queue, allow=ALLOW_FROM)
    webhook.handle(case.event(SECRET, 900_000_002))
    ((job, _, _),) = queue.sent
    # The message as SQS carries it, within SQS's size limit, parsed as agent_turn parses it.
    body = job.model_dump_json()
    assert len(body.encode()) <= MAX_JOB_BYTES
    parsed = parse_job(body)
    assert isinstance(parsed, TelegramUpdateJob)
    update = Update.model_validate(parsed.update)
    inbound = to_inbound(update)
    assert isinstance(inbound, InboundMessage)
    if inbound.callback_query_id is not None or inbound.edited:  # its words are the message
        for chunk in render_messages(inbound.text):
            assert telegram_length(chunk) <= 4096
            parse_telegram_html(chunk)
        return
    message = update.message
    assert message is not None
    if is_group_chat(message):
        addressed_to_bot(message, bot_id=BOT.id, bot_username=BOT.username, policy="mention")

    workspace = MemoryWorkspace()
    resolver = MediaResolver(UnreachableFiles(), workspace, SETTINGS)
    content = resolver.resolve(message, inbound.chat_id)
    # What the session store and the model client will encode, and what Telegram will accept.
    json.dumps({"content": content.model_content}, ensure_ascii=False).encode("utf-8")
    assert all(path.startswith(f"uploads/{inbound.chat_id}/") for path in workspace.files)
    assert not any(line.startswith("[Runtime context") for line in content.saved_text.splitlines())
    for chunk in render_messages(content.saved_text):
        assert telegram_length(chunk) <= 4096
        parse_telegram_html(chunk)


def test_a_lone_surrogate_is_queued_as_a_replacement_character() -> None:
    (case,) = [case for case in CASES if case.name == "a lone UTF-16 surrogate"]
    queue = MemoryQueue()
    webhook = make_webhook(queue, allow=ALLOW_FROM)
    webhook.handle(case.event(SECRET, 1))
    assert queue.sent[0][0].update["message"]["text"] == "x\ufffdy\ufffd"


def test_a_forwarder_name_is_one_short_line_in_the_models_context() -> None:
    names = {"a 100000-character forwarder name", "forwarder name with newlines (prompt injection)"}
    for case in [case for case in CASES if case.name in names]:
        update = Update.model_validate(case.body)
        assert update.message is not None
        content = MediaResolver(UnreachableFiles(), MemoryWorkspace(), SETTINGS).resolve(
            update.message, 111111111
        )
        first_line = content.saved_text.splitlines()[0]
        assert first_line.startswith("[forwarded from ")
        assert len(first_line) < 200
