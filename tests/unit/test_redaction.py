"""Secret redaction: the redactor, the log filter and record factory (message, args, extra,
exception, nested values; Powertools' JSON and third-party loggers), and tool results."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from aws_lambda_powertools import Logger

from nanobot_lambda.adapters.aws.logs import configure_logging
from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.core.redaction import REDACTED, Redactor, redact
from nanobot_lambda.core.tools import Tool
from nanobot_lambda.settings import AgentSettings, WebhookSettings
from tests.support.job_context import JobTools
from tests.support.settings import AGENT_ENV

BOT_TOKEN = "123456:SECRET-bot-token-xyz"
WEBHOOK_SECRET = "SECRET-webhook-secret-abc"
LLM_KEY = "sk-SECRET-llm-key-123"
SECRETS = (BOT_TOKEN, WEBHOOK_SECRET, LLM_KEY)
FILE_URL = f"https://api.telegram.org/file/bot{BOT_TOKEN}/documents/file_1.pdf"


def leaks(text: str) -> list[str]:
    return [s for s in (*SECRETS, "SECRET-bot-token-xyz", f"bot{BOT_TOKEN}") if s in text]


# -- the redactor --------------------------------------------------------------------------------


def test_configured_values_and_a_tokens_secret_part_are_redacted() -> None:
    redactor = Redactor()
    redactor.add(SECRETS)
    text = f"token {BOT_TOKEN}, part {BOT_TOKEN.split(':')[1]}, key {LLM_KEY}, {WEBHOOK_SECRET}!"
    redacted = redactor.redact(text)
    assert leaks(redacted) == []
    assert redacted == f"token {REDACTED}, part {REDACTED}, key {REDACTED}, {REDACTED}!"


def test_bot_token_urls_are_redacted_even_for_unconfigured_tokens() -> None:
    redactor = Redactor()  # nothing configured
    other = "987654321:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    assert redactor.redact(f"GET https://api.telegram.org/bot{other}/getMe") == (
        f"GET https://api.telegram.org/bot{REDACTED}/getMe"
    )
    assert redactor.redact("http://127.0.0.1:5/file/bot1:local-abc/photos/1.jpg") == (
        f"http://127.0.0.1:5/file/bot{REDACTED}/photos/1.jpg"
    )
    assert redactor.redact(f"a token: {other}.") == f"a token: {REDACTED}."


def test_short_values_are_not_treated_as_secrets() -> None:
    """A local server's placeholder key (`LLM_API_KEY=x`, as the README suggests) is no
    secret: every x of an error message stays."""
    redactor = Redactor()
    redactor.add(["abc", "", "x", "1234567"])  # under MIN_SECRET_CHARS (8)
    text = "abc abc: OpenAIException at http://127.0.0.1:1234567/v1"
    assert redactor.redact(text) == text


def test_a_secret_inside_a_word_masks_the_whole_word() -> None:
    """No piece of a word is left beside the mask to read as something else, and no piece of
    a secret glued to other text survives: the word (letters, digits, `_`, `-`) goes whole."""
    redactor = Redactor()
    redactor.add([LLM_KEY, "password"])
    glued = f"key=abc{LLM_KEY}def&next=1 {LLM_KEY}_2, passwords: Password ok"
    assert redactor.redact(glued) == (f"key={REDACTED}&next=1 {REDACTED}, {REDACTED}: Password ok")
    assert leaks(redactor.redact(glued)) == []
    # Two secrets in one word: one mask.
    assert redactor.redact(f"({LLM_KEY}{LLM_KEY}x)") == f"({REDACTED})"


def test_a_long_run_of_word_characters_is_masked_in_linear_time() -> None:
    """The word is widened around each match, not by the pattern: a megabyte of base64 with a
    key in it is not a backtracking regex's quadratic walk."""
    redactor = Redactor()
    redactor.add([LLM_KEY])
    blob = "A" * 500_000
    assert redactor.redact(f"{blob}{LLM_KEY}{blob} tail") == f"{REDACTED} tail"
    assert redactor.redact(blob + " tail") == blob + " tail"


def test_nested_values() -> None:
    redactor = Redactor()
    redactor.add([LLM_KEY])
    value = {"a": [LLM_KEY, {"b": (1, f"x {LLM_KEY}.")}], "n": 3}
    assert redactor.redact_value(value) == {"a": [REDACTED, {"b": (1, f"x {REDACTED}.")}], "n": 3}


def test_settings_list_every_secret_they_hold() -> None:
    agent = AgentSettings.from_env(
        {**AGENT_ENV, "TELEGRAM_BOT_TOKEN": BOT_TOKEN, "LLM_API_KEY": LLM_KEY}
    )
    assert set(agent.secret_values()) == {BOT_TOKEN, LLM_KEY}
    webhook = WebhookSettings.from_env(
        {
            "TELEGRAM_SECRET_TOKEN": WEBHOOK_SECRET,
            "ALLOW_FROM": "1",
            "TURN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/q.fifo",
            "SESSIONS_TABLE": "sessions",
            "IDEMPOTENCY_TABLE": "idempotency",
        }
    )
    assert webhook.secret_values() == [WEBHOOK_SECRET]


# -- the logging filter and record factory -------------------------------------------------------


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    """configure_logging as a handler calls it, with a Powertools logger writing JSON to a
    buffer; the loggers it reconfigures are restored afterwards."""
    package, root = logging.getLogger("nanobot_lambda"), logging.getLogger()
    saved = (package.handlers[:], package.propagate, package.level, package.filters[:])
    root_filters = {handler: handler.filters[:] for handler in root.handlers}
    buffer = io.StringIO()
    service = f"redaction-{uuid.uuid4().hex[:8]}"  # Powertools sets a service's logger up once
    logger = Logger(service=service, logger_handler=logging.StreamHandler(buffer))
    configure_logging(logger, SECRETS)
    yield buffer
    package.handlers, package.propagate, package.level, package.filters = saved
    for handler, filters in root_filters.items():
        handler.filters = filters


def lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_message_args_and_extra_are_redacted_in_powertools_json(logs: io.StringIO) -> None:
    log = logging.getLogger("nanobot_lambda.test_redaction")
    log.warning(f"direct {BOT_TOKEN}")
    log.warning("args %s and %r", LLM_KEY, {"url": FILE_URL})
    log.warning("extra", extra={"key": WEBHOOK_SECRET, "nested": {"list": [FILE_URL, 7]}})
    output = logs.getvalue()
    assert leaks(output) == []
    direct, args, extra = lines(logs)
    assert direct["message"] == f"direct {REDACTED}"
    assert args["message"].startswith(f"args {REDACTED} and {{'url': 'https://api.telegram")
    assert extra["key"] == REDACTED
    assert extra["nested"] == {
        "list": [f"https://api.telegram.org/file/bot{REDACTED}/documents/file_1.pdf", 7]
    }


class ClientFailure(Exception):
    pass


def test_exceptions_and_their_causes_are_redacted(logs: io.StringIO) -> None:
    log = logging.getLogger("nanobot_lambda.test_redaction")
    try:
        try:
            raise ConnectionError(f"cannot reach {FILE_URL}")
        except ConnectionError as cause:
            raise ClientFailure(f"request with key {LLM_KEY} failed") from cause
    except ClientFailure:
        log.exception("download failed")
    assert leaks(logs.getvalue()) == []
    (record,) = lines(logs)
    assert record["exception_name"] == "ClientFailure"
    assert f"request with key {REDACTED} failed" in record["exception"]
    assert f"/file/bot{REDACTED}/documents" in record["exception"]  # the chained cause


def test_an_exception_without_secrets_is_logged_as_usual(logs: io.StringIO) -> None:
    try:
        raise ValueError("nothing secret")
    except ValueError:
        logging.getLogger("nanobot_lambda.test_redaction").exception("plain")
    (record,) = lines(logs)
    assert record["exception_name"] == "ValueError"
    assert "ValueError: nothing secret" in record["exception"]


def test_third_party_records_are_redacted_on_any_handler(
    logs: io.StringIO, caplog: pytest.LogCaptureFixture
) -> None:
    # urllib3 logs request lines (the Bot API URL holds the token) at DEBUG; caplog's handler
    # was added after configure_logging, so only the record factory stands between them.
    third_party = logging.getLogger("urllib3.connectionpool")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s %(exc_text)s"))
    third_party.addHandler(handler)
    try:
        with caplog.at_level(logging.DEBUG, logger="urllib3.connectionpool"):
            third_party.debug(
                '%s://%s:%s "%s %s %s"',
                "https",
                "api.telegram.org",
                443,
                "POST",
                f"/bot{BOT_TOKEN}/sendMessage",
                "HTTP/1.1",
            )
            try:
                raise OSError(f"connect to {FILE_URL}")
            except OSError:
                third_party.warning("retrying", exc_info=True)
    finally:
        third_party.removeHandler(handler)
    assert leaks(caplog.text) == [] and leaks(stream.getvalue()) == []
    assert f"/bot{REDACTED}/sendMessage" in caplog.text
    assert f"/file/bot{REDACTED}/documents" in caplog.text  # the exception's text


def test_stack_info_and_non_string_messages(logs: io.StringIO) -> None:
    log = logging.getLogger("nanobot_lambda.test_redaction")
    log.warning({"structured": LLM_KEY})
    log.warning(ClientFailure(f"boom {WEBHOOK_SECRET}"))
    log.warning("with stack %s", "info", stack_info=True)
    assert leaks(logs.getvalue()) == []
    structured, exception_message, _ = lines(logs)
    assert structured["message"] == {"structured": REDACTED}
    assert exception_message["message"] == f"boom {REDACTED}"


# -- tool results --------------------------------------------------------------------------------


class Leaky(Tool):
    name = "leaky"
    description = "returns a secret"
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"fail": {"type": "boolean"}},
    }

    def run(self, ctx: object, /, fail: bool = False) -> str:
        if fail:
            raise ToolError(f"could not fetch {FILE_URL}")
        return f"the key is {LLM_KEY} and the token {BOT_TOKEN}"


def test_tool_results_and_errors_are_redacted_before_the_model_sees_them(
    logs: io.StringIO,
) -> None:
    registry = JobTools([Leaky()])
    result = registry.execute(ToolCall("c1", "leaky", "{}"))
    assert result == f"the key is {REDACTED} and the token {REDACTED}"
    failed = registry.execute(ToolCall("c2", "leaky", '{"fail": true}'))
    assert (
        failed
        == f"Error: could not fetch https://api.telegram.org/file/bot{REDACTED}/documents/file_1.pdf"
    )
    assert redact(f"x {WEBHOOK_SECRET}") == f"x {REDACTED}"
