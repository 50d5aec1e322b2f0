"""`nanobot-lambda chat`, run as a user would: `main([...])` in this process, given the
environment and working directory a shell would give it (tests/support/cli.py), and once as the
installed console script in a process of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli, run_console_script
from tests.support.mcp_server import McpServerProcess
from tests.support.scripted_model import ScriptedModelServer


def test_one_message_prints_the_answer(model_server: ScriptedModelServer) -> None:
    """The console script itself: its entry point, the whole stack in its process, exit 0."""
    model_server.reply("Hello from the **scripted** model!")
    completed = run_console_script(
        "chat", "-m", "hi", "--env-file", "/nonexistent", env=model_server.env()
    )
    assert completed.returncode == 0, completed.stderr
    assert "nanobot> Hello from the scripted model!" in completed.stdout
    assert '"_aws"' not in completed.stdout  # no metric records among the replies
    (request,) = model_server.requests
    assert request["messages"][-1]["content"].endswith("\n\nhi")
    assert model_server.unexpected == []


def test_env_file_is_read(model_server: ScriptedModelServer, tmp_path: Path) -> None:
    model_server.reply("configured from .env")
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{key}={value}\n" for key, value in model_server.env().items()))
    completed = run_cli("chat", "-m", "hi", "--env-file", str(env_file), env={})
    assert completed.returncode == 0, completed.stderr
    assert "nanobot> configured from .env" in completed.stdout


# What a `.env` shared with a deployed stack holds (for `poll`, `webhook set` and deploying):
# none of it may reach the local stack, which has its own secrets, resources and AWS.
DEPLOYED_STACK_ENV = {
    "TELEGRAM_SECRET_TOKEN": "deployed-webhook-secret",
    "TELEGRAM_SECRET_TOKEN_PARAM": "/deployed/telegram-secret-token",
    "TELEGRAM_BOT_TOKEN": "424242:deployed-bot-token",
    "TELEGRAM_BOT_TOKEN_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:1:secret:bot",
    "TELEGRAM_API_BASE": "https://api.telegram.org",
    "LLM_API_KEY_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:1:secret:llm",
    "ALLOW_FROM": "424242424",
    "HEARTBEAT_CHAT_ID": "424242424",
    "WORKSPACE_BUCKET": "deployed-workspace-bucket",
    "SESSIONS_TABLE": "deployed-sessions",
    "TURN_QUEUE_URL": "https://sqs.eu-west-1.amazonaws.com/1/deployed-turns.fifo",
    "AWS_PROFILE": "deployed-profile-not-on-this-machine",
    "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9",
}


def test_deployed_stack_variables_in_env_file_are_ignored(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    model_server.reply("local stack, local secrets")
    env_file = tmp_path / ".env"
    settings = {**model_server.env(), **DEPLOYED_STACK_ENV}
    env_file.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    completed = run_cli("chat", "-m", "hi", "--env-file", str(env_file), env={})
    assert completed.returncode == 0, completed.stderr
    assert "nanobot> local stack, local secrets" in completed.stdout
    assert "401" not in completed.stderr


def test_deployed_stack_variables_in_the_shell_are_ignored(
    model_server: ScriptedModelServer,
) -> None:
    model_server.reply("the shell's deployed settings are not mine")
    completed = run_cli(
        "chat",
        "-m",
        "hi",
        "--env-file",
        "/nonexistent",
        env={**model_server.env(), **DEPLOYED_STACK_ENV},
    )
    assert completed.returncode == 0, completed.stderr
    assert "nanobot> the shell's deployed settings are not mine" in completed.stdout


def test_model_failure_exits_non_zero(model_server: ScriptedModelServer) -> None:
    model_server.fail(500, times=3)
    completed = run_cli("chat", "-m", "hi", "--env-file", "/nonexistent", env=model_server.env())
    assert completed.returncode == 1
    assert "model call failed" in completed.stderr


def test_without_a_model_it_says_what_to_set(tmp_path: Path) -> None:
    completed = run_cli("chat", "-m", "hi", "--env-file", "/nonexistent", env={}, cwd=tmp_path)
    assert completed.returncode == 2
    for expected in (
        "LLM_MODEL",
        "LLM_API_KEY",
        "LLM_API_BASE",
        "OpenAI",
        "Anthropic",
        "OpenRouter",
        "Ollama",
    ):
        assert expected in completed.stderr


@pytest.mark.parametrize("arguments", [["--help"], ["chat", "--help"]])
def test_help_has_examples(arguments: list[str]) -> None:
    completed = run_cli(*arguments, env={})
    assert completed.returncode == 0
    assert 'nanobot-lambda chat -m "What can you do?"' in completed.stdout


def test_chat_uses_a_local_mcp_server_from_the_env_file(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """`make chat` with MCP_SERVERS (and WEB_FETCH_ALLOW_NETWORKS for 127.0.0.1) in .env."""
    server = McpServerProcess().start()
    try:
        model_server.call_tool("notes_weather", {"city": "Oslo"}).reply("Oslo is sunny.")
        env_file = tmp_path / ".env"
        settings = {
            **model_server.env(),
            "MCP_SERVERS": json.dumps([{"name": "notes", "url": server.url}]),
            "WEB_FETCH_ALLOW_NETWORKS": "127.0.0.1/32",
        }
        env_file.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        completed = run_cli("chat", "-m", "weather in Oslo?", "--env-file", str(env_file), env={})
    finally:
        server.stop()
    assert completed.returncode == 0, completed.stderr
    assert "nanobot> Oslo is sunny." in completed.stdout
    assert "Sunny in Oslo, 21 °C" in model_server.requests[1]["messages"][-1]["content"]
