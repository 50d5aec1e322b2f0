"""Shared fixtures: Telegram update fixtures, the scripted model server, moto server, the stack."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nanobot_lambda.operator.local.moto_server import start_moto_server
from nanobot_lambda.operator.local.stack import LocalStack, LocalTelegram, LocalUser
from tests.support.aws_requests import RequestCounter
from tests.support.scripted_model import ScriptedModelServer

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "infra" / "template.yaml"
# A copy of ../shared/fixtures/telegram/ (real-shaped updates), vendored so CI has it.
TELEGRAM_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "telegram"


def telegram_update(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((TELEGRAM_FIXTURES / f"{name}.json").read_text())
    return loaded


def album_updates(
    count: int, *, media_group_id: str = "13571113579", first_update_id: int = 800000100
) -> list[dict[str, Any]]:
    """The updates of an album of `count` photos, as Telegram sends them: the photo fixture's
    message in each, consecutive update and message ids, one media group, the caption on the
    first part only, and each part its own photo (distinct file ids)."""
    parts = []
    for index in range(count):
        update = telegram_update("photo_with_caption")
        message = update["message"]
        update["update_id"] = first_update_id + index
        message["message_id"] = 500 + index
        message["media_group_id"] = media_group_id
        if index:
            del message["caption"]
        for size in message["photo"]:
            size["file_id"] = f"{size['file_id']}{index}"
            size["file_unique_id"] = f"{size['file_unique_id']}{index}"
        parts.append(update)
    return parts


def all_telegram_fixture_names() -> list[str]:
    return sorted(path.stem for path in TELEGRAM_FIXTURES.glob("*.json"))


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """One moto server (real HTTP) for the session; each test uses its own resource names."""
    server, endpoint = start_moto_server()
    yield endpoint
    server.stop()


@pytest.fixture
def aws(moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point boto3 at the moto server for this test."""
    for name, value in {
        "AWS_ENDPOINT_URL": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    return moto_endpoint


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer().start()
    yield server
    server.stop()


StackFactory = Callable[..., LocalStack]


@pytest.fixture
def stack_factory(moto_endpoint: str, model_server: ScriptedModelServer) -> Iterator[StackFactory]:
    """Start stacks with template parameter overrides (e.g. HistoryWindow="4"), and another
    model than the scripted one (`model_env`: LLM_MODEL, LLM_API_BASE, LLM_API_KEY)."""
    started: list[LocalStack] = []

    def start(model_env: dict[str, str] | None = None, **parameters: str) -> LocalStack:
        # The local user and Ada (111111111, the owner in the shared fixtures) are allowed.
        local = LocalStack(
            TEMPLATE,
            model_env=model_env or model_server.env(),
            endpoint_url=moto_endpoint,
            telegram=LocalTelegram(allow_from=f"{LocalUser().id},111111111"),
            parameters=parameters,
        )
        started.append(local.start())
        return local

    yield start
    for local in started:
        local.stop()


@pytest.fixture
def stack(stack_factory: StackFactory) -> LocalStack:
    """The whole deployment from infra/template.yaml on moto server, with the scripted model."""
    return stack_factory()


@pytest.fixture
def aws_requests() -> Iterator[RequestCounter]:
    """The AWS requests of clients made after it: take it before the stack or the clients."""
    counting = RequestCounter()
    yield counting
    counting.close()
