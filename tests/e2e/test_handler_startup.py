"""Each handler builds its settings at import (Lambda's init phase) and refuses to start with a
missing or invalid setting, naming the variable."""

from __future__ import annotations

import gc
import uuid

import boto3
import pytest

from nanobot_lambda.core.errors import ConfigError
from nanobot_lambda.operator.local.runtime import load_handler_module
from tests.conftest import ROOT

REQUIRED = {
    "webhook": ["TELEGRAM_SECRET_TOKEN", "ALLOW_FROM", "TURN_QUEUE_URL", "SESSIONS_TABLE"],
    "agent_turn": ["TELEGRAM_BOT_TOKEN", "WORKSPACE_BUCKET", "SESSIONS_TABLE", "LLM_MODEL"],
    "scheduler": ["TURN_QUEUE_URL", "WORKSPACE_BUCKET", "SESSIONS_TABLE"],
    "console": ["TELEGRAM_BOT_TOKEN", "WORKSPACE_BUCKET", "SESSIONS_TABLE", "JOBS_TABLE"],
}


@pytest.fixture(autouse=True)
def bare_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for names in REQUIRED.values():
        for name in names:
            for suffix in ("", "_PARAM", "_SECRET_ARN"):
                monkeypatch.delenv(name + suffix, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_missing_settings_stop_the_start(name: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_handler_module(ROOT / "functions" / name, f"startup_{name}")
    for variable in REQUIRED[name]:
        assert f"{variable} is not set" in str(error.value)
    # The init turned the collector off (functions/init_phase.py) and failed before turning it on:
    # this process, which outlives it, has it back.
    assert gc.isenabled()


def test_invalid_setting_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_SECRET_TOKEN", "s")
    monkeypatch.setenv("ALLOW_FROM", "ada l")  # a space is not a username
    monkeypatch.setenv("TURN_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/1/q.fifo")
    monkeypatch.setenv("SESSIONS_TABLE", "sessions")
    with pytest.raises(ConfigError, match=r"ALLOW_FROM: .*'ada l'"):
        load_handler_module(ROOT / "functions" / "webhook", "startup_invalid")


@pytest.mark.parametrize(
    ("name", "secret", "environment"),
    [
        (
            "webhook",
            "TELEGRAM_SECRET_TOKEN",
            {
                "ALLOW_FROM": "111",
                "TURN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/q.fifo",
                "SESSIONS_TABLE": "sessions",
                "IDEMPOTENCY_TABLE": "idempotency",
            },
        ),
        (
            "scheduler",
            "TELEGRAM_BOT_TOKEN",
            {
                "TURN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/1/q.fifo",
                "WORKSPACE_BUCKET": "bucket",
                "JOBS_TABLE": "jobs",
                "SESSIONS_TABLE": "sessions",  # approvals' deadlines (functions/scheduler.py)
            },
        ),
    ],
)
def test_a_secret_given_as_a_reference_is_read_at_start(
    aws: str, monkeypatch: pytest.MonkeyPatch, name: str, secret: str, environment: dict[str, str]
) -> None:
    """The template gives the functions their tokens as SSM references: the handler passes the
    AWS reader (adapters/aws/secrets.py) to its settings, which read each one at start-up.
    (agent_turn's references: tests/e2e/test_secrets.py.)"""
    parameter = f"/nanobot-test/{uuid.uuid4().hex[:8]}"
    boto3.client("ssm").put_parameter(Name=parameter, Value="123:from-ssm", Type="SecureString")
    for variable, value in {**environment, f"{secret}_PARAM": parameter}.items():
        monkeypatch.setenv(variable, value)
    module = load_handler_module(ROOT / "functions" / name, f"startup_reference_{name}")
    read = getattr(module.settings, secret.lower())
    assert read.get_secret_value() == "123:from-ssm"
