"""Checked by `make typecheck` (mypy --strict), never run: a misspelt setting is a type error.

`from_env` returns the class it is called on, so `settings.no_such_field` fails the check. Each
misspelling below carries the ignore for that error; with `warn_unused_ignores` (pyproject.toml),
were `from_env` to return `Any` again, the ignores would be unused and mypy would fail here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import assert_type

from nanobot_lambda.settings import AgentSettings, SchedulerSettings, WebhookSettings


def webhook_settings(environ: Mapping[str, str]) -> None:
    settings = WebhookSettings.from_env(environ)
    assert_type(settings, WebhookSettings)
    _ = settings.telegram_secret_tokn  # type: ignore[attr-defined]


def agent_settings(environ: Mapping[str, str]) -> None:
    settings = AgentSettings.from_env(environ, fetch=lambda kind, reference: "")
    assert_type(settings, AgentSettings)
    _ = settings.llm_modle  # type: ignore[attr-defined]


def scheduler_settings(environ: Mapping[str, str]) -> None:
    settings = SchedulerSettings.from_env(environ)
    assert_type(settings, SchedulerSettings)
    _ = settings.heartbeat_chat  # type: ignore[attr-defined]
