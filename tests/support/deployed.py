"""A "deployed" stack on moto: a CloudFormation stack whose outputs and parameters are what
`sam deploy` of infra/template.yaml would give, for resources created on moto from the template.

moto's CloudFormation answers `describe_stacks` only for stacks it created, so the stack is
created there with the template's outputs evaluated against the moto resources (the HTTP API
is not emulated: WebhookUrl is the URL it would have) and the template's parameters as given.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import boto3
import pytest

from nanobot_lambda.operator.local.bot_api import LocalBotApi
from nanobot_lambda.operator.local.cfn import TemplateContext

BOT_TOKEN_PARAMETER = "/it/telegram-bot-token"
SECRET_TOKEN_PARAMETER = "/it/telegram-secret-token"
LLM_KEY_PARAMETER = "/it/llm-api-key"


def deploy_stack(
    resources: TemplateContext,
    parameters: Mapping[str, str] | None = None,
    *,
    outputs: Mapping[str, str | None] | None = None,
) -> str:
    """Create the stack on moto; returns its name. `outputs` overrides (None drops one)."""
    evaluated = {
        key: str(resources.evaluate(spec["Value"]))
        for key, spec in resources.template["Outputs"].items()
    }
    for key, value in (outputs or {}).items():
        if value is None:
            evaluated.pop(key, None)
        else:
            evaluated[key] = value
    given = {
        "TelegramBotTokenParameter": BOT_TOKEN_PARAMETER,
        "TelegramSecretTokenParameter": SECRET_TOKEN_PARAMETER,
        **(parameters or {}),
    }
    template = {
        "Parameters": {name: {"Type": "String"} for name in given},
        # CloudFormation wants one resource; a topic is cheap and moto supports it.
        "Resources": {"Marker": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in evaluated.items()},
    }
    name = f"nanobot-{uuid.uuid4().hex[:8]}"
    boto3.client("cloudformation").create_stack(
        StackName=name,
        TemplateBody=json.dumps(template),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in given.items()],
    )
    return name


def put_secret(name: str, value: str) -> None:
    boto3.client("ssm").put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)


def stack_output(stack: str, key: str) -> str:
    (described,) = boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"]
    return next(o["OutputValue"] for o in described["Outputs"] if o["OutputKey"] == key)


@contextmanager
def telegram_stand_in(monkeypatch: pytest.MonkeyPatch, token: str) -> Iterator[LocalBotApi]:
    """The Bot API stand-in, reached through TELEGRAM_API_BASE as the CLI reaches Telegram;
    the bot token is the stack's (TELEGRAM_BOT_TOKEN unset)."""
    api = LocalBotApi(token).start()
    monkeypatch.setenv("TELEGRAM_API_BASE", api.base_url)
    monkeypatch.delenv("TELEGRAM_BOT_TOKEN", raising=False)
    try:
        yield api
    finally:
        api.stop()
