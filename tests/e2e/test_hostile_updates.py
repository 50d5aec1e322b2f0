"""A subset of the hostile-update corpus through the whole local stack: webhook, SQS FIFO,
agent_turn, the scripted model and the local Bot API. Nothing crashes, every request gets its
status, refused senders get no answer, and no message text is logged at INFO."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from nanobot_lambda.core import texts
from nanobot_lambda.operator.local.stack import LocalStack, LocalTelegram
from tests.conftest import TEMPLATE
from tests.support.hostile_names import seen_sent
from tests.support.hostile_updates import ALLOW_FROM, CASES, OWNER
from tests.support.scripted_model import ScriptedModelServer

E2E = [case for case in CASES if case.e2e]


@pytest.fixture
def hostile_stack(model_server: ScriptedModelServer, moto_endpoint: str) -> Iterator[LocalStack]:
    stack = LocalStack(
        TEMPLATE,
        model_env=model_server.env(),
        endpoint_url=moto_endpoint,
        telegram=LocalTelegram(allow_from=ALLOW_FROM),
    )
    try:
        yield stack.start()
    finally:
        stack.stop()


def test_hostile_updates_through_the_whole_stack(
    hostile_stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack = hostile_stack
    assert len(E2E) >= 15
    answered = [case for case in E2E if case.answered]
    for _ in answered:
        model_server.reply("Noted.")

    for index, case in enumerate(E2E):
        event = case.event(stack.secret_token, 910_000_000 + index)
        response = stack.handlers["webhook"].handler(event, stack._context("webhook"))
        assert response["statusCode"] == case.status, case.name
        if case.outcome is not None:
            assert json.loads(response["body"])["status"] == case.outcome, case.name
    stack.process_queue()

    # Every queued turn ran without failing; the model was called once per answered message.
    assert stack.poller.failures == 0
    assert model_server.unexpected == []
    assert len(model_server.requests) == len(answered)
    # Only the owner got messages: one answer per answered case, plus the oversize notice.
    assert {message.chat_id for message in stack.bot_api.messages} == {OWNER}
    replies = [seen_sent([message]).text for message in stack.bot_api.messages]
    assert replies.count("Noted.") == len(answered)
    notice = texts.render("media_too_large_notice", what='document "movie.mkv"', limit="20.0 MB")
    assert notice in replies
    assert len(replies) == len(answered) + 1
    # The model saw the hostile texts made safe (no NUL, no lone surrogate).
    sent = json.dumps([request["messages"][-1] for request in model_server.requests])
    assert "\\u0000" not in sent and "\\ud800" not in sent
    assert "x\\ufffdy\\ufffd" in sent

    # Nothing logged at INFO or above carries a message's text.
    logged = "\n".join(
        record.getMessage() + repr(record.__dict__)
        for record in stack.log_sink.records
        if record.levelno >= logging.INFO
    )
    for text in ("bell\x07", "gnp.exe", "hi all", "aaaaaaaaaaaaaaaa", "/start"):
        assert text not in logged
    assert "update refused" in logged  # the refusals were logged, by sender id
