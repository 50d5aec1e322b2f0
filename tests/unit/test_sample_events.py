"""The sample events in events/ (for `sam local invoke`) are what each handler accepts."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.core.jobs import parse_job
from nanobot_lambda.functions.sandbox import run
from tests.conftest import ROOT

EVENTS = ROOT / "events"


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / name).read_text(encoding="utf-8"))
    return loaded


def test_the_webhook_event_carries_the_example_secret_and_an_update() -> None:
    event = load("webhook_text_private.json")
    secret = load("env.example.json")["WebhookFunction"]["TELEGRAM_SECRET_TOKEN"]
    assert event["headers"]["x-telegram-bot-api-secret-token"] == secret
    assert event["headers"]["content-type"] == "application/json"
    assert event["requestContext"]["http"]["method"] == "POST"
    assert Update.model_validate_json(event["body"]).message is not None


def test_the_sqs_event_holds_queue_jobs() -> None:
    records = load("agent_turn_sqs.json")["Records"]
    assert records
    for record in records:
        parse_job(record["body"])
        assert record["attributes"]["MessageGroupId"]


def test_the_scheduler_events_are_a_heartbeat_and_a_cron_firing() -> None:
    assert load("scheduler_heartbeat.json")["kind"] == "heartbeat"
    cron = load("scheduler_cron.json")
    assert cron["kind"] == "cron" and int(cron["chat_id"]) and cron["job_id"]
    assert cron["scheduled_time"].endswith("Z")


def test_the_sandbox_event_runs(tmp_path: Path) -> None:
    """`sam local invoke SandboxFunction -e events/sandbox_python.json` (here: the runner)."""
    result = run(load("sandbox_python.json"), root=tmp_path, in_lambda=False)
    assert result["ok"] and result["exit_code"] == 0 and "mean 2" in result["stdout"]
    assert base64.b64decode(result["files"]["data/mean.txt"]) == b"2"
