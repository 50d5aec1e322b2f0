"""Each handler builds its settings at import (Lambda's init phase) and refuses to start with a
missing or invalid setting, naming the variable."""

from __future__ import annotations

import pytest

from nanobot_lambda.core.errors import ConfigError
from nanobot_lambda.operator.local.runtime import load_handler_module
from tests.conftest import ROOT

REQUIRED = {
    "webhook": ["TELEGRAM_SECRET_TOKEN", "ALLOW_FROM", "TURN_QUEUE_URL", "SESSIONS_TABLE"],
    "agent_turn": ["TELEGRAM_BOT_TOKEN", "WORKSPACE_BUCKET", "SESSIONS_TABLE", "LLM_MODEL"],
    "scheduler": ["TURN_QUEUE_URL", "WORKSPACE_BUCKET"],
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


def test_invalid_setting_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_SECRET_TOKEN", "s")
    monkeypatch.setenv("ALLOW_FROM", "ada l")  # a space is not a username
    monkeypatch.setenv("TURN_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/1/q.fifo")
    monkeypatch.setenv("SESSIONS_TABLE", "sessions")
    with pytest.raises(ConfigError, match=r"ALLOW_FROM: .*'ada l'"):
        load_handler_module(ROOT / "functions" / "webhook", "startup_invalid")
