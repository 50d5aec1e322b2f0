"""`webhook set|info|delete` against a stack on moto server and a Bot API stand-in (HTTP)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import boto3
import pytest

from nanobot_lambda.core.bot_commands import command_menu
from nanobot_lambda.operator.cli import main
from nanobot_lambda.operator.local.bot_api import LocalBotApi
from nanobot_lambda.operator.local.cfn import TemplateContext
from tests.support.deployed import (
    BOT_TOKEN_PARAMETER,
    SECRET_TOKEN_PARAMETER,
    deploy_stack,
    put_secret,
    stack_output,
    telegram_stand_in,
)

BOT_TOKEN = "4242:stack-bot-token"


@pytest.fixture
def bot_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalBotApi]:
    with telegram_stand_in(monkeypatch, BOT_TOKEN) as api:
        yield api


@pytest.fixture
def stack(resources: TemplateContext, bot_api: LocalBotApi) -> str:
    put_secret(BOT_TOKEN_PARAMETER, BOT_TOKEN)
    boto3.client("ssm").delete_parameters(Names=[SECRET_TOKEN_PARAMETER])
    return deploy_stack(resources)


def secret_in_ssm() -> str | None:
    try:
        parameter = boto3.client("ssm").get_parameter(
            Name=SECRET_TOKEN_PARAMETER, WithDecryption=True
        )["Parameter"]
    except boto3.client("ssm").exceptions.ParameterNotFound:
        return None
    assert parameter["Type"] == "SecureString"
    return str(parameter["Value"])


def test_set_generates_and_stores_the_secret_then_registers_the_stack_url(
    stack: str, bot_api: LocalBotApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert secret_in_ssm() is None
    assert main(["webhook", "set", "--stack", stack]) == 0
    out = capsys.readouterr().out
    secret = secret_in_ssm()
    assert secret is not None and len(secret) >= 32
    assert f"stored it in SSM {SECRET_TOKEN_PARAMETER} (SecureString)" in out
    assert secret not in out  # never printed

    url = stack_output(stack, "WebhookUrl")
    (call,) = bot_api.webhook.set_calls
    assert call["url"] == url
    assert call["secret_token"] == secret
    # buttons pressed, edits and reactions too
    assert call["allowed_updates"] == [
        "message",
        "edited_message",
        "callback_query",
        "message_reaction",
    ]
    assert "drop_pending_updates" not in call  # only on request
    assert f"url:              {url}  (the stack's)" in out
    assert bot_api.commands == command_menu()  # the menu Telegram shows for "/"
    assert (
        "Command menu set: /new /stop /compact /memory /usage /model /think /console /help." in out
    )
    # Every private chat's menu button opens the console, a Mini App.
    console = stack_output(stack, "ConsoleUrl")
    assert bot_api.menu_button == {
        "type": "web_app",
        "text": "Console",
        "web_app": {"url": console},
    }
    assert f"Menu button of private chats: the console, {console}." in out

    # A second set reuses the stored secret.
    assert main(["webhook", "set", "--stack", stack, "--drop-pending-updates"]) == 0
    assert "Generated" not in capsys.readouterr().out
    assert bot_api.webhook.set_calls[-1]["secret_token"] == secret
    assert bot_api.webhook.set_calls[-1]["drop_pending_updates"] is True


def test_set_uses_an_existing_secret(stack: str, bot_api: LocalBotApi) -> None:
    put_secret(SECRET_TOKEN_PARAMETER, "already-there_123")
    assert main(["webhook", "set", "--stack", stack]) == 0
    assert bot_api.webhook.secret_token == "already-there_123"


def test_a_secret_telegram_would_refuse_is_reported_not_replaced(
    stack: str, bot_api: LocalBotApi, capsys: pytest.CaptureFixture[str]
) -> None:
    put_secret(SECRET_TOKEN_PARAMETER, "has spaces!")
    assert main(["webhook", "set", "--stack", stack]) == 2
    assert "openssl rand -hex 32" in capsys.readouterr().err
    assert bot_api.webhook.set_calls == []
    assert secret_in_ssm() == "has spaces!"


def test_info_shows_pending_updates_the_last_error_and_a_foreign_url(
    stack: str, bot_api: LocalBotApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["webhook", "set", "--stack", stack, "--url", "https://elsewhere.example/hook"]) == 0
    )
    bot_api.push_update(
        {
            "update_id": 1,
            "message": {"message_id": 1, "date": 0, "chat": {"id": 1, "type": "private"}},
        }
    )
    bot_api.record_webhook_error(
        "Wrong response from the webhook: 401 Unauthorized", at=int(time.time()) - 120
    )
    capsys.readouterr()

    assert main(["webhook", "info", "--stack", stack]) == 0
    out = capsys.readouterr().out
    assert "https://elsewhere.example/hook  (NOT https://" in out
    assert "pending updates:  1" in out
    assert "(2 min ago): Wrong response from the webhook: 401 Unauthorized" in out


def test_delete_removes_the_webhook(
    stack: str, bot_api: LocalBotApi, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["webhook", "set", "--stack", stack]) == 0
    bot_api.push_update({"update_id": 5})
    assert main(["webhook", "delete", "--stack", stack]) == 0
    assert bot_api.webhook.url == ""
    assert bot_api.pending  # pending updates kept unless asked
    assert "updates now wait for getUpdates" in capsys.readouterr().out
    assert main(["webhook", "info", "--stack", stack]) == 0
    assert "url:              (none" in capsys.readouterr().out


def test_without_a_stack_the_token_comes_from_the_environment(
    bot_api: LocalBotApi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", BOT_TOKEN)
    assert main(["webhook", "delete", "--env-file", "/nonexistent"]) == 0
    assert ("deleteWebhook", {}) in bot_api.calls

    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "4242:wrong")
    assert main(["webhook", "info", "--env-file", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Telegram refused the bot token (401")
    assert "4242:wrong" not in err and len(err.splitlines()) == 1


def test_without_a_url_or_with_plain_http_it_says_what_to_give(
    stack: str,
    bot_api: LocalBotApi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", BOT_TOKEN)
    assert main(["webhook", "set", "--env-file", "/nonexistent"]) == 2
    assert "give --stack NAME (its WebhookUrl output) or --url" in capsys.readouterr().err
    assert main(["webhook", "set", "--stack", stack, "--url", "http://insecure.example/hook"]) == 2
    assert "Telegram only calls HTTPS webhooks" in capsys.readouterr().err
    assert bot_api.webhook.set_calls == []


def test_a_missing_stack_is_one_line_with_the_fix(
    bot_api: LocalBotApi, aws: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["webhook", "info", "--stack", "no-such-stack"]) == 2
    assert capsys.readouterr().err == (
        "error: stack 'no-such-stack' does not exist in us-east-1: check the name "
        "(aws cloudformation list-stacks) or set AWS_DEFAULT_REGION\n"
    )
