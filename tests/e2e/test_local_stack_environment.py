"""The local stack runs on its own settings whatever the caller's environment holds: a shell or
`.env` that also serves a deployed stack (its webhook secret, bot token, resources, secret
references, AWS profile) changes nothing, and is given back intact when the stack stops."""

from __future__ import annotations

import os

import pytest

from tests.conftest import StackFactory
from tests.e2e.test_cli import DEPLOYED_STACK_ENV
from tests.support.scripted_model import ScriptedModelServer

# `monkeypatch` comes first in each test: it is then undone last, after the stack has stopped
# and given back the variables it replaced.


def test_a_turn_runs_on_the_stacks_own_secrets_and_resources(
    monkeypatch: pytest.MonkeyPatch,
    stack_factory: StackFactory,
    model_server: ScriptedModelServer,
) -> None:
    for name, value in DEPLOYED_STACK_ENV.items():
        monkeypatch.setenv(name, value)
    model_server.reply("answered locally")
    stack = stack_factory()

    response = stack.post_update(stack.text_update("hi"))
    stack.process_queue()

    assert response["statusCode"] == 200
    assert [message.plain_text for message in stack.bot_api.messages] == ["answered locally"]
    webhook, agent_turn = stack.environment["webhook"], stack.environment["agent_turn"]
    assert webhook["TELEGRAM_SECRET_TOKEN"] == agent_turn["TELEGRAM_BOT_TOKEN"] == ""
    assert agent_turn["TELEGRAM_API_BASE"] == stack.bot_api.base_url
    assert agent_turn["WORKSPACE_BUCKET"].startswith(stack.prefix)
    assert webhook["ALLOW_FROM"] == f"{stack.user.id},111111111"
    # Not declared by the template, so hidden from the functions while the stack runs.
    for hidden in (
        "TELEGRAM_BOT_TOKEN_SECRET_ARN",
        "LLM_API_KEY_SECRET_ARN",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL_DYNAMODB",
    ):
        assert hidden not in os.environ


def test_the_callers_environment_is_given_back_when_the_stack_stops(
    monkeypatch: pytest.MonkeyPatch, stack_factory: StackFactory
) -> None:
    for name, value in DEPLOYED_STACK_ENV.items():
        monkeypatch.setenv(name, value)
    before = dict(os.environ)

    stack_factory().stop()

    assert dict(os.environ) == before


def test_tuning_settings_the_template_leaves_empty_come_from_the_caller(
    monkeypatch: pytest.MonkeyPatch, stack_factory: StackFactory
) -> None:
    monkeypatch.setenv("LLM_MAX_TOKENS", "777")
    monkeypatch.setenv("TELEGRAM_SECRET_TOKEN", "deployed-webhook-secret")

    stack = stack_factory()

    assert stack.environment["agent_turn"]["LLM_MAX_TOKENS"] == "777"
    assert os.environ["LLM_MAX_TOKENS"] == "777"
    assert os.environ["TELEGRAM_SECRET_TOKEN"] == ""
