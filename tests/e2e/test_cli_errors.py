"""Failures an operator can fix end as one line with the fix and exit code 2, never a
traceback: the command line run as a user would (in this process, given a shell's environment;
tests/support/cli.py), against moto server."""

from __future__ import annotations

import pytest

from tests.support.cli import run_cli, run_console_script
from tests.support.scripted_model import ScriptedModelServer

MOTO_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@pytest.mark.parametrize(
    "command",
    [
        ["sessions", "list"],
        ["dlq", "list"],
        ["onboard"],
        ["workspace", "pull", "somewhere"],
        ["webhook", "info"],
        ["cron", "list"],
        ["doctor"],
    ],
    ids=" ".join,
)
def test_a_missing_stack(command: list[str], moto_endpoint: str) -> None:
    completed = run_cli(
        *command,
        "--stack",
        "no-such-stack",
        env={"AWS_ENDPOINT_URL": moto_endpoint, **MOTO_CREDENTIALS},
    )
    if command == ["doctor"]:  # the doctor reports it among its checks
        assert completed.returncode == 1
        assert "FAIL  stack            stack 'no-such-stack' does not exist" in completed.stdout
        return
    assert completed.returncode == 2
    assert completed.stderr == (
        "error: stack 'no-such-stack' does not exist in us-east-1: check the name "
        "(aws cloudformation list-stacks) or set AWS_DEFAULT_REGION\n"
    )


def test_no_aws_credentials() -> None:
    completed = run_cli(
        "sessions",
        "list",
        "--stack",
        "nanobot-lambda",
        env={
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
            "AWS_CONFIG_FILE": "/nonexistent",
            "AWS_EC2_METADATA_DISABLED": "true",
        },
    )
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: no AWS credentials found: run `aws configure`")
    assert "Traceback" not in completed.stderr


@pytest.mark.parametrize(
    "command",
    [["webhook", "set"], ["webhook", "info"], ["sessions", "list"], ["dlq", "list"]],
    ids=" ".join,
)
def test_no_aws_region(command: list[str]) -> None:
    """botocore's "You must specify a region." came as "cannot reach AWS", where doctor said
    to run `aws configure`."""
    completed = run_cli(
        *command,
        "--stack",
        "nanobot-lambda",
        env={
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_CONFIG_FILE": "/nonexistent",  # no profile's region either
        },
    )
    assert completed.returncode == 2
    assert completed.stderr == (
        "error: no AWS region set: run `aws configure` or set AWS_DEFAULT_REGION "
        "(or AWS_PROFILE) to the stack's region\n"
    )


def test_an_invalid_setting(moto_endpoint: str) -> None:
    completed = run_cli(
        "dlq",
        "list",
        env={"AWS_ENDPOINT_URL": moto_endpoint, **MOTO_CREDENTIALS, "TURN_DLQ_URL": "not-a-url"},
    )
    assert completed.returncode == 2
    (line,) = completed.stderr.splitlines()
    assert line.startswith("error: Invalid configuration for the nanobot-lambda command line")
    assert "TURN_DLQ_URL" in line and "README" in line


def test_chat_with_a_model_name_without_a_provider_says_so_before_starting(
    model_server: ScriptedModelServer,
) -> None:
    """`LLM_MODEL=fake` used to start the whole stack and then answer "send your message again
    in a moment"; no request to it can ever succeed. The console script: litellm's banner would
    come with its import, which only a fresh process makes."""
    env = {**model_server.env(), "LLM_MODEL": "fake"}
    completed = run_console_script("chat", "-m", "hi", "--env-file", "/nonexistent", env=env)
    assert completed.returncode == 2
    assert completed.stderr.startswith(
        "error: LLM_MODEL: fake: the model name names no provider litellm knows"
    )
    assert "LLM_MODEL=anthropic/claude-sonnet-4-5" in completed.stderr  # the examples
    assert "Starting the local stack" not in completed.stderr
    assert "Provider List" not in completed.stdout + completed.stderr  # litellm's red banner
    assert model_server.requests == []


def test_doctor_with_a_model_name_without_a_provider_shows_only_its_own_report(
    model_server: ScriptedModelServer,
) -> None:
    """litellm printed its red "Provider List: …" banner above doctor's FAIL line."""
    env = {**model_server.env(), "LLM_MODEL": "gpt-nonsense"}
    completed = run_cli("doctor", "--env-file", "/nonexistent", env=env)
    assert completed.returncode == 1
    assert "FAIL  model            gpt-nonsense: the model name names no provider" in (
        completed.stdout
    )
    assert "Provider List" not in completed.stdout + completed.stderr
    assert model_server.requests == []
