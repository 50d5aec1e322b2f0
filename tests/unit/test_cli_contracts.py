"""The command line's contracts: every command's help has examples, and what the commands
assume of the template and of the bot (outputs, parameters, update kinds) is what they are."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from botocore.exceptions import ClientError, NoCredentialsError, NoRegionError

from nanobot_lambda.adapters.aws.dead_letters import describe
from nanobot_lambda.adapters.telegram.client import TelegramError
from nanobot_lambda.adapters.telegram.inbound import Accepted, Reacted, classify, to_inbound
from nanobot_lambda.adapters.telegram.models import Update
from nanobot_lambda.adapters.telegram.places import Ignored
from nanobot_lambda.core.allowlist import AllowList
from nanobot_lambda.core.errors import ConfigError
from nanobot_lambda.core.jobs import (
    AnnouncementJob,
    AnyJob,
    ContinuationJob,
    CronTaskJob,
    HeartbeatJob,
    HookEventJob,
    SubagentJob,
    TelegramUpdateJob,
)
from nanobot_lambda.functions.agent_turn.kinds import job_ids
from nanobot_lambda.functions.agent_turn.queued import QueuedJob
from nanobot_lambda.operator.cli import build_parser, main
from nanobot_lambda.operator.cli.common import describe_failure
from nanobot_lambda.operator.local.cfn import load_template
from nanobot_lambda.operator.ops.deployment import (
    BOT_TOKEN_PARAMETER,
    OPTIONAL_OUTPUTS,
    SECRET_TOKEN_PARAMETER,
    STACK_OUTPUTS,
    OperatorError,
    valid_secret_token,
)
from nanobot_lambda.operator.ops.doctor import STACK_SETTINGS
from nanobot_lambda.operator.ops.webhook_admin import ALLOWED_UPDATES
from nanobot_lambda.operator.ops.workspace_sync import MANIFEST, syncable
from tests.conftest import TEMPLATE, all_telegram_fixture_names, telegram_update


def command_paths(
    parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()
) -> list[tuple[str, ...]]:
    """Every command and subcommand, e.g. ("webhook", "set")."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append((*prefix, name))
                found.extend(command_paths(sub, (*prefix, name)))
    return found


ALL_COMMANDS = command_paths(build_parser())


def test_every_command_of_the_issue_exists() -> None:
    expected = {
        ("chat",), ("poll",), ("onboard",), ("workspace", "pull"), ("workspace", "push"),
        ("webhook", "set"), ("webhook", "info"), ("webhook", "delete"), ("cron", "list"),
        ("cron", "remove"), ("dlq", "list"), ("dlq", "replay"), ("sessions", "list"),
        ("sessions", "show"), ("sessions", "reset"), ("usage",), ("doctor",),
    }  # fmt: skip
    assert expected <= set(ALL_COMMANDS)


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=" ".join)
def test_help_renders_with_examples(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*path, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    examples = out.split("examples:\n", 1)[1]
    assert f"nanobot-lambda {path[0]}" in examples
    if len(path) == 1 and path[0] not in ("workspace", "webhook", "cron", "dlq", "sessions"):
        assert f"usage: nanobot-lambda {path[0]}" in out


def test_stack_outputs_are_the_templates() -> None:
    outputs = load_template(TEMPLATE)["Outputs"]
    assert set(STACK_OUTPUTS) | set(OPTIONAL_OUTPUTS) == set(outputs)
    assert all("Condition" in outputs[output] for output in OPTIONAL_OUTPUTS)


def test_secret_parameter_defaults_are_the_templates() -> None:
    parameters = load_template(TEMPLATE)["Parameters"]
    for key, default in (BOT_TOKEN_PARAMETER, SECRET_TOKEN_PARAMETER):
        assert parameters[key]["Default"] == default


def test_doctor_reads_the_parameters_the_template_wires_into_the_functions() -> None:
    template = load_template(TEMPLATE)
    wirings = [
        {
            **template["Globals"]["Function"]["Environment"]["Variables"],
            **template["Resources"][function]["Properties"]["Environment"]["Variables"],
        }
        for function in ("AgentTurnFunction", "WebhookFunction")
    ]
    for parameter, variable in STACK_SETTINGS.items():
        wired = [wiring[variable] for wiring in wirings if variable in wiring]
        assert wired, variable
        assert all(value == {"Ref": parameter} for value in wired), variable


def test_allowed_updates_are_the_kinds_the_bot_acts_on() -> None:
    # No fixture of another kind is ever answered; the bot answers some of each allowed kind.
    everyone = AllowList.parse("*")
    acted_on: set[str] = set()
    for name in all_telegram_fixture_names():
        update = Update.model_validate(telegram_update(name))
        if update.kind not in ALLOWED_UPDATES:
            assert isinstance(to_inbound(update), Ignored), name
            assert not isinstance(classify(update, everyone), Accepted), name
        elif isinstance(classify(update, everyone), Accepted | Reacted):
            acted_on.add(update.kind)  # answered, or recorded (a reaction)
    assert acted_on == set(ALLOWED_UPDATES)


@pytest.mark.parametrize(
    ("path", "synced"),
    [
        ("SOUL.md", True),
        ("skills/weather/SKILL.md", True),
        (MANIFEST, False),
        (".git/config", False),
        ("skills/.draft/SKILL.md", False),
        ("../outside.md", False),
        ("a//b.md", False),
        ("/etc/passwd", False),
    ],
)
def test_which_paths_are_synced(path: str, synced: bool) -> None:
    assert syncable(path) is synced


def test_secret_tokens_telegram_accepts() -> None:
    assert valid_secret_token("abc_DEF-123")
    assert not valid_secret_token("")
    assert not valid_secret_token("has space")
    assert not valid_secret_token("x" * 257)


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "nope"}}, "GetItem")


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (OperatorError("give --stack NAME"), "give --stack NAME"),
        (ConfigError("Invalid configuration: LLM_MODEL is not set"), "LLM_MODEL is not set"),
        (NoCredentialsError(), "no AWS credentials found: run `aws configure`"),
        (NoRegionError(), "no AWS region set: run `aws configure` or set AWS_DEFAULT_REGION"),
        (_client_error("ExpiredTokenException"), "refresh your AWS credentials"),
        (_client_error("AccessDeniedException"), "account that deployed the stack"),
        (_client_error("ResourceNotFoundException"), "check --stack NAME"),
        (TelegramError("getMe", 401, "Unauthorized"), "refused the bot token"),
        (TelegramError("getMe", None, "ConnectionError"), "cannot reach Telegram"),
    ],
)
def test_known_failures_are_one_line_with_a_fix(error: Exception, expected: str) -> None:
    message = describe_failure(error)
    assert message is not None and expected in message and "\n" not in message


def test_a_bug_is_not_disguised() -> None:
    assert describe_failure(ZeroDivisionError()) is None


def test_the_module_runs_as_the_script(tmp_path: Path) -> None:
    import subprocess
    import sys

    completed = subprocess.run(
        [sys.executable, "-m", "nanobot_lambda.operator.cli", "--help"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert completed.returncode == 0
    assert "nanobot-lambda" in completed.stdout and "doctor" in completed.stdout


SECRET = "the user's private words"
JOBS = [
    (
        TelegramUpdateJob(update={**telegram_update("text_private"), "update_id": 7}),
        "telegram_update message update_id 7 chat 111111111",
    ),
    (HeartbeatJob(chat_id=1, tasks=SECRET, fired_at="2026-01-01T00:00:00Z"), "heartbeat chat 1"),
    (
        CronTaskJob(job_id="j1", chat_id=2, name=SECRET, message=SECRET),
        "cron_task chat 2 job_id j1",
    ),
    (
        SubagentJob(subagent_id="s1", chat_id=3, label=SECRET, task=SECRET),
        "subagent chat 3 subagent_id s1",
    ),
    (
        AnnouncementJob(subagent_id="s1", chat_id=3, label=SECRET, succeeded=True, result=SECRET),
        "announcement chat 3 subagent_id s1",
    ),
    (
        TelegramUpdateJob(update={**telegram_update("edited_message"), "update_id": 8}),
        "telegram_update edited_message update_id 8 chat 111111111",
    ),
    (
        HookEventJob(
            hook="ci", chat_id=4, delivery_id="d-1", payload=SECRET, received_at="2026-01-01"
        ),
        "hook_event chat 4 hook ci delivery_id d-1",
    ),
    (
        ContinuationJob(job=CronTaskJob(job_id="j1", chat_id=2, name="x", message=SECRET), part=2),
        "cron_task chat 2 job_id j1 (continuation, part 2)",
    ),
]


@pytest.mark.parametrize(("job", "expected"), JOBS, ids=lambda value: getattr(value, "kind", ""))
def test_dead_letters_are_described_by_ids_never_text(job: AnyJob, expected: str) -> None:
    description = describe(job)
    assert description == expected
    assert SECRET not in description


@pytest.mark.parametrize(("job", "expected"), JOBS, ids=lambda value: getattr(value, "kind", ""))
def test_a_dead_letter_is_named_by_the_ids_its_log_records_carry(
    job: AnyJob, expected: str
) -> None:
    """One declaration of what names a job (core/jobs.py, each envelope's `ids`): the listing
    shows every id agent_turn's log records carry for it (functions/agent_turn/kinds.py)."""
    ids = job_ids(QueuedJob.of(job))
    assert ids.pop("job_kind") == job.kind
    for name, value in ids.items():
        assert f"{name.removesuffix('_id') if name == 'chat_id' else name} {value}" in expected
