"""Secrets end to end: a whole turn on the local stack with distinctive secret values, where a
tool reads a workspace file holding them and a third-party library logs token-bearing URLs.
None of them may appear in any captured log line or in any request the model received."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import boto3
import pytest

from nanobot_lambda.core.redaction import REDACTED
from nanobot_lambda.operator.local.stack import LocalStack, LocalTelegram
from tests.conftest import TEMPLATE
from tests.support.scripted_model import ScriptedModelServer

BOT_TOKEN = "123456:SECRET-bot-token-xyz"
WEBHOOK_SECRET = "SECRET-webhook-secret-abc"
LLM_KEY = "sk-SECRET-llm-key-123"
TRANSCRIPTION_KEY = "SECRET-transcription-key-456"
SECRETS = [BOT_TOKEN, BOT_TOKEN.split(":")[1], WEBHOOK_SECRET, LLM_KEY, TRANSCRIPTION_KEY]
TRANSCRIPTION_PARAMETER = "/nanobot-lambda/test-transcription-key"
CREDENTIALS_FILE = (
    "# Credentials (do not share)\n"
    f"bot token: {BOT_TOKEN}\n"
    f"webhook secret: {WEBHOOK_SECRET}\n"
    f"llm key: {LLM_KEY}\n"
    f"whisper key: {TRANSCRIPTION_KEY}\n"
    f"a file link: https://api.telegram.org/file/bot{BOT_TOKEN}/documents/file_1.pdf\n"
)


@pytest.fixture
def secret_stack(
    aws: str, model_server: ScriptedModelServer, moto_endpoint: str
) -> Iterator[LocalStack]:
    boto3.client("ssm").put_parameter(
        Name=TRANSCRIPTION_PARAMETER, Value=TRANSCRIPTION_KEY, Type="SecureString", Overwrite=True
    )
    stack = LocalStack(
        TEMPLATE,
        model_env=model_server.env(api_key=LLM_KEY),
        endpoint_url=moto_endpoint,
        telegram=LocalTelegram(allow_from="100000001"),
        parameters={
            "TranscriptionModel": ScriptedModelServer.TRANSCRIPTION_MODEL,
            "TranscriptionApiKeyParameter": TRANSCRIPTION_PARAMETER,
        },
    )
    stack.bot_token, stack.secret_token = BOT_TOKEN, WEBHOOK_SECRET
    urllib3 = logging.getLogger("urllib3")
    level = urllib3.level
    try:
        yield stack.start()
    finally:
        stack.stop()
        urllib3.setLevel(level)


def everything_logged(stack: LocalStack, caplog: pytest.LogCaptureFixture) -> str:
    records = [*stack.log_sink.records, *caplog.records]
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return "\n".join(formatter.format(record) + " " + repr(record.__dict__) for record in records)


def test_no_secret_reaches_a_log_or_the_model(
    secret_stack: LocalStack,
    model_server: ScriptedModelServer,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stack = secret_stack
    stack.workspace.write("notes/credentials.md", CREDENTIALS_FILE.encode())
    model_server.call_tool("read_file", {"path": "notes/credentials.md"})
    model_server.call_tool("grep", {"pattern": "SECRET|bot", "path": "notes"})
    model_server.reply("I found some credentials; I will not repeat them.")
    # A library that logs request lines at DEBUG (urllib3 does: the Bot API URL holds the token).
    logging.getLogger("urllib3").setLevel(logging.DEBUG)

    with caplog.at_level(logging.DEBUG):
        assert stack.post_update(stack.text_update("hello"), secret="wrong")["statusCode"] == 401
        response = stack.post_update(stack.text_update("What is in notes/credentials.md?"))
        assert json.loads(response["body"])["status"] == "queued"
        stack.process_queue()

    # The turn really ran with these secrets: the bot answered, the tools read the file...
    assert [m.plain_text for m in stack.bot_api.messages] == [
        "I found some credentials; I will not repeat them."
    ]
    read_result = model_server.requests[1]["messages"][-1]
    grep_result = model_server.requests[2]["messages"][-1]
    assert read_result["role"] == grep_result["role"] == "tool"
    assert read_result["content"].count(REDACTED) >= 5
    assert "notes/credentials.md:2: bot token: [REDACTED]" in grep_result["content"]
    # ...and urllib3 logged the Bot API requests, token-bearing URLs included.
    assert any(record.name.startswith("urllib3") for record in caplog.records)
    assert f"/bot{REDACTED}/sendMessage" in caplog.text

    # None of the values anywhere: logs (the functions' and the root's), stdout/stderr, and
    # every request the model received.
    captured = capsys.readouterr()
    logged = everything_logged(stack, caplog)
    requests = json.dumps(model_server.requests)
    for secret in SECRETS:
        assert secret not in logged, secret
        assert secret not in captured.out and secret not in captured.err, secret
        assert secret not in requests, secret
    assert "/file/bot123456" not in logged + requests
