"""`doctor` against a stack on moto server, the Bot API stand-in and the scripted model: a
healthy deployment passes every check; each broken part is reported alone, with its fix."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.core.bot_commands import command_menu
from nanobot_lambda.core.workspace import seed_workspace
from nanobot_lambda.operator.cli import main
from nanobot_lambda.operator.local.bot_api import LocalBotApi
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.operator.local.http_api import LocalHttpApi, http_api_routes
from nanobot_lambda.operator.local.runtime import LocalLambdaContext, load_handler_module
from nanobot_lambda.operator.local.state import LocalStackInfo
from nanobot_lambda.operator.ops.doctor import console_route_problem
from tests.conftest import ROOT
from tests.support.bedrock_refusals import NO_ACCESS, NOT_AUTHORIZED, BedrockRefusals
from tests.support.deployed import (
    BOT_TOKEN_PARAMETER,
    LLM_KEY_PARAMETER,
    deploy_stack,
    put_secret,
    stack_output,
    telegram_stand_in,
)
from tests.support.mcp_server import McpServerProcess
from tests.support.scripted_model import ScriptedModelServer

BOT_TOKEN = "6161:doctor-token"


@pytest.fixture
def bot_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalBotApi]:
    with telegram_stand_in(monkeypatch, BOT_TOKEN) as api:
        yield api


Deploy = Callable[..., str]


@pytest.fixture
def console_url(resources: TemplateContext, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The stack's console, served as API Gateway serves it (the template's routes) by the
    console function's handler, on this machine."""
    environment = {
        "TELEGRAM_BOT_TOKEN": BOT_TOKEN,
        "ALLOW_FROM": "111111111",
        "WORKSPACE_BUCKET": resources.refs["WorkspaceBucket"],
        "SESSIONS_TABLE": resources.refs["SessionsTable"],
        "JOBS_TABLE": resources.refs["JobsTable"],
        "SCHEDULE_GROUP": resources.refs["ScheduleGroup"],
        "SCHEDULER_TARGET_ARN": "arn:aws:lambda:us-east-1:123456789012:function:scheduler",
        "SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler",
        "TURN_QUEUE_URL": resources.refs["TurnQueue"],
    }
    with monkeypatch.context() as during_init:
        for name, value in environment.items():
            during_init.setenv(name, value)
        console = load_handler_module(ROOT / "functions" / "console", "doctor_console")
    routes = [route for route in http_api_routes(resources) if route.function == "ConsoleFunction"]
    api = LocalHttpApi(
        routes, lambda _, event: console.handler(event, LocalLambdaContext("console"))
    ).start()
    try:
        yield f"{api.url}/console"
    finally:
        api.stop()


@pytest.fixture
def deploy(
    resources: TemplateContext,
    bot_api: LocalBotApi,
    model_server: ScriptedModelServer,
    console_url: str,
) -> Deploy:
    """A healthy deployment, with `parameters` overriding the stack's; returns the stack."""
    put_secret(BOT_TOKEN_PARAMETER, BOT_TOKEN)
    put_secret(LLM_KEY_PARAMETER, "sk-test-scripted")
    seed_workspace(S3Workspace(resources.refs["WorkspaceBucket"], boto3.client("s3")))
    for _ in range(3):
        model_server.reply("OK")

    def make(**parameters: str) -> str:
        stack = deploy_stack(
            resources,
            {
                "LlmModel": ScriptedModelServer.MODEL,
                "LlmApiBase": model_server.base_url,
                "LlmApiKeyParameter": LLM_KEY_PARAMETER,
                "AllowFrom": "111111111",
                "Timezone": "Europe/Lisbon",
                **parameters,
            },
            outputs={"ConsoleUrl": console_url},
        )
        bot_api.webhook.url = stack_output(stack, "WebhookUrl")
        bot_api.commands = command_menu()  # as `webhook set` leaves them
        bot_api.menu_button = {
            "type": "web_app",
            "text": "Console",
            "web_app": {"url": console_url},
        }
        return stack

    return make


def doctor(stack: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, str]]:
    """Exit code and each check's line (with its fix line, if any)."""
    code = main(["doctor", "--stack", stack, "--env-file", "/nonexistent"])
    lines = capsys.readouterr().out.splitlines()
    checks: dict[str, str] = {}
    for line in lines[:-1]:
        if line.startswith(("ok", "FAIL", "WARN", "skip")):
            name = line[6:23].strip()
            checks[name] = line
        else:
            checks[name] += "\n" + line
    return code, checks


def failed(checks: dict[str, str]) -> list[str]:
    return [name for name, line in checks.items() if line.startswith("FAIL")]


def test_a_healthy_deployment_passes_every_check(
    deploy: Deploy, model_server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code, checks = doctor(deploy(), capsys)
    assert code == 0, checks
    assert list(checks) == [
        "AWS credentials",
        "stack",
        "configuration",
        "model",
        "MCP servers",
        "bot token",
        "webhook",
        "command menu",
        "console",
        "workspace",
    ]
    assert all(line.startswith("ok") for line in checks.values()), checks
    assert "its page and API answer; the menu button opens it" in checks["console"]
    assert "@nano_lambda_bot" in checks["bot token"]
    (request,) = model_server.requests  # the one-token completion, with the stack's key
    assert request["max_tokens"] == 1
    assert model_server.headers[0]["Authorization"] == "Bearer sk-test-scripted"


def test_a_broken_setting_is_the_only_failure_and_comes_with_its_fix(
    deploy: Deploy, capsys: pytest.CaptureFixture[str]
) -> None:
    code, checks = doctor(deploy(Timezone="Mars/Olympus_Mons"), capsys)
    assert code == 1
    assert failed(checks) == ["configuration"]
    assert "unknown timezone 'Mars/Olympus_Mons'" in checks["configuration"]
    assert "fix: redeploy with corrected Timezone: sam deploy --guided" in checks["configuration"]
    assert checks["model"].startswith("ok")


def test_a_deployment_without_an_owner_is_told_how_to_name_one(
    deploy: Deploy, capsys: pytest.CaptureFixture[str]
) -> None:
    code, checks = doctor(deploy(AllowFrom="@ada_l,@bob"), capsys)
    assert code == 1 and failed(checks) == ["configuration"]
    assert "no owner: ALLOW_FROM lists no user id and OWNER_ID is unset" in checks["configuration"]
    assert "redeploy with corrected AllowFrom, OwnerId" in checks["configuration"]
    code, checks = doctor(deploy(AllowFrom="@ada_l,@bob", OwnerId="111111111"), capsys)
    assert checks["configuration"].startswith("ok")


def test_each_mcp_server_is_listed_with_its_tool_count_or_its_failure(
    deploy: Deploy, capsys: pytest.CaptureFixture[str]
) -> None:
    server = McpServerProcess().start()
    try:
        servers = [
            {"name": "test", "url": server.url, "tools": ["add", "weather"]},
            {"name": "gone", "url": McpServerProcess().url},
        ]
        code, checks = doctor(
            deploy(McpServers=json.dumps(servers), WebFetchAllowNetworks="127.0.0.1/32"), capsys
        )
    finally:
        server.stop()
    assert code == 1 and failed(checks) == ["MCP servers"]
    line = checks["MCP servers"]
    assert (
        "gone (for the owner only (111111111)): the MCP server gone failed (listing its tools: "
        "ConnectError)" in line
    )
    assert "test: 2 tools, for the owner only (111111111)" in line
    assert "fix: check the URL and headers in McpServers" in line


def test_doctor_shows_who_may_use_each_server_and_warns_of_shared_header_secrets(
    deploy: Deploy, capsys: pytest.CaptureFixture[str]
) -> None:
    put_secret("/nanobot/mcp/team-key", "team-key-0123456789")
    server = McpServerProcess().start()
    try:
        servers = [
            {"name": "mail", "url": server.url, "tools": ["add"]},
            {"name": "docs", "url": server.url, "tools": ["add"], "access": "allowed"},
            {
                "name": "team",
                "url": server.url,
                "tools": ["add", "weather"],
                "headers": {"X-Api-Key": {"param": "/nanobot/mcp/team-key"}},
                "access": [222222222, -1001234567890],
                "share_secret_headers": True,
            },
        ]
        code, checks = doctor(
            deploy(McpServers=json.dumps(servers), WebFetchAllowNetworks="127.0.0.1/32"), capsys
        )
    finally:
        server.stop()
    assert code == 0, checks  # a warning is no failure
    line = checks["MCP servers"]
    assert line.startswith("WARN")
    assert "mail: 1 tool, for the owner only (111111111)" in line
    assert "docs: 1 tool, for everyone allowed (ALLOW_FROM ids, approved people)" in line
    assert "team: 2 tools, for chats -1001234567890, 222222222" in line
    assert "team shares its secret header X-Api-Key with chats -1001234567890, 222222222" in line
    assert "team-key-0123456789" not in line
    assert "fix: everyone a server is opened to acts with its credential" in line
    assert all(check.startswith("ok") for name, check in checks.items() if name != "MCP servers")


def test_a_shared_header_secret_without_the_operator_s_word_is_a_configuration_failure(
    deploy: Deploy, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = [
        {
            "name": "mail",
            "url": "https://mail.example/mcp",
            "headers": {"Authorization": {"param": "/nanobot/mcp/mail"}},
            "access": "allowed",
        }
    ]
    code, checks = doctor(deploy(McpServers=json.dumps(servers)), capsys)
    assert code == 1 and failed(checks) == ["configuration"]
    assert '"share_secret_headers": true' in checks["configuration"]
    assert "fix: redeploy with corrected McpServers" in checks["configuration"]
    assert checks["MCP servers"].startswith("skip")


def test_an_ack_reaction_telegram_refuses_is_named_before_the_webhook_fails_on_it(
    deploy: Deploy, capsys: pytest.CaptureFixture[str]
) -> None:
    code, checks = doctor(deploy(AckReaction="🦜"), capsys)
    assert code == 1
    assert failed(checks) == ["configuration"]
    assert "ACK_REACTION: " in checks["configuration"]
    assert (
        "fix: redeploy with corrected AckReaction: sam deploy --guided" in checks["configuration"]
    )


def breaks_bot_token(api: LocalBotApi, resources: TemplateContext) -> None:
    put_secret(BOT_TOKEN_PARAMETER, "6161:revoked")


def breaks_webhook_url(api: LocalBotApi, resources: TemplateContext) -> None:
    api.webhook.url = "https://old-stack.example/webhook"


def breaks_webhook_delivery(api: LocalBotApi, resources: TemplateContext) -> None:
    api.record_webhook_error("Wrong response from the webhook: 401 Unauthorized", int(time.time()))


def breaks_workspace_files(api: LocalBotApi, resources: TemplateContext) -> None:
    boto3.client("s3").delete_object(
        Bucket=resources.refs["WorkspaceBucket"], Key="workspace/AGENTS.md"
    )


def breaks_a_skill(api: LocalBotApi, resources: TemplateContext) -> None:
    S3Workspace(resources.refs["WorkspaceBucket"], boto3.client("s3")).write(
        "skills/tea/SKILL.md", b"---\nalways: maybe\n---\nBrew."
    )


def breaks_command_menu(bot_api: LocalBotApi, resources: TemplateContext) -> None:
    bot_api.commands = [{"command": "start", "description": "an older menu"}]


def breaks_menu_button(bot_api: LocalBotApi, resources: TemplateContext) -> None:
    bot_api.menu_button = {"type": "commands"}  # set before the stack had a console


@pytest.mark.parametrize(
    ("breakage", "check", "detail", "fix"),
    [
        (breaks_bot_token, "bot token", "refused the token (401", BOT_TOKEN_PARAMETER),
        (breaks_webhook_url, "webhook", "old-stack.example", "nanobot-lambda webhook set --stack"),
        (breaks_webhook_delivery, "webhook", "401 Unauthorized", "sam logs -n WebhookFunction"),
        (breaks_command_menu, "command menu", "not the commands /help", "webhook set --stack"),
        (breaks_menu_button, "console", "menu button opens no console", "webhook set --stack"),
        (breaks_workspace_files, "workspace", "missing AGENTS.md", "nanobot-lambda onboard"),
        (breaks_a_skill, "workspace", "skills/tea/SKILL.md: always must be true", "pull DIR"),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_each_broken_part_is_reported_with_its_fix(
    deploy: Deploy,
    bot_api: LocalBotApi,
    resources: TemplateContext,
    capsys: pytest.CaptureFixture[str],
    breakage: Callable[[LocalBotApi, TemplateContext], Any],
    check: str,
    detail: str,
    fix: str,
) -> None:
    stack = deploy()
    breakage(bot_api, resources)
    code, checks = doctor(stack, capsys)
    assert code == 1
    assert failed(checks) == [check]
    report = checks[check]
    assert detail in report.splitlines()[0]
    assert "fix:" in report and fix in report.split("fix:", 1)[1]
    if check == "bot token":
        assert checks["webhook"].startswith("skip")
        assert "6161:revoked" not in report


def test_a_missing_stack_fails_the_stack_check_and_skips_what_needs_it(
    bot_api: LocalBotApi, aws: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reported first; the settings are not judged from the environment instead (that said
    "ALLOW_FROM is not set — fix: redeploy" before saying the stack could not be read)."""
    code, checks = doctor("no-such-stack", capsys)
    assert code == 1
    assert failed(checks) == ["stack"]
    assert list(checks)[:3] == ["AWS credentials", "stack", "configuration"]
    assert "stack 'no-such-stack' does not exist" in checks["stack"]
    for needs_the_stack in ("configuration", "model", "MCP servers", "bot token", "workspace"):
        assert checks[needs_the_stack].startswith("skip"), checks[needs_the_stack]
    assert "ALLOW_FROM" not in "".join(checks.values())


def test_without_credentials_that_is_the_one_failure_and_the_stack_is_not_tried(
    bot_api: LocalBotApi,
    aws: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # it holds the credentials it found
    code, checks = doctor("nanobot-lambda", capsys)
    assert code == 1
    assert failed(checks) == ["AWS credentials"]
    assert next(iter(checks)) == "AWS credentials"
    assert "no AWS credentials found" in checks["AWS credentials"]
    assert "aws configure" in checks["AWS credentials"]
    assert "without AWS credentials" in checks["stack"]
    assert all(
        line.startswith("skip") for name, line in checks.items() if name != "AWS credentials"
    )


def test_without_a_region_the_fix_is_the_one_every_command_gives(
    bot_api: LocalBotApi,
    aws: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """botocore's "You must specify a region." came with "check the AWS credentials"."""
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    code, checks = doctor("nanobot-lambda", capsys)
    assert code == 1
    assert failed(checks) == ["AWS credentials"]
    assert "no AWS region set" in checks["AWS credentials"]
    assert "run `aws configure` or set AWS_DEFAULT_REGION" in checks["AWS credentials"]
    assert "refresh your credentials" not in checks["AWS credentials"]
    assert "You must specify a region" not in "".join(checks.values())


def test_a_model_name_without_a_provider_fails_before_any_request(
    bot_api: LocalBotApi,
    model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in model_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LLM_MODEL", "fake")
    monkeypatch.setenv("LLM_FALLBACK_MODELS", "openai/fine,llama-local")
    assert main(["doctor", "--env-file", "/nonexistent"]) == 1
    out = capsys.readouterr().out
    model = next(line for line in out.splitlines() if line.startswith("FAIL  model"))
    assert "fake: the model name names no provider litellm knows" in model
    assert "llama-local: the model name names no provider" in model
    assert "fix: set LLM_MODEL, LLM_FALLBACK_MODELS to a litellm model string" in out
    assert model_server.requests == []


def test_a_refused_key_is_a_setup_problem_with_its_fix(
    deploy: Deploy, model_server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = deploy()
    model_server.steps.clear()
    model_server.fail(401)
    _, checks = doctor(stack, capsys)
    assert failed(checks) == ["model"]
    assert "AuthenticationError (status 401)" in checks["model"]
    fix = checks["model"].split("fix:", 1)[1]
    assert "refused the API key (401)" in fix and "LlmApiKeyParameter" in fix


def test_a_deployed_bedrock_model_needs_its_arn_in_bedrock_model_arns(
    deploy: Deploy, model_server: ScriptedModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The one-token request runs with the operator's credentials, which say nothing of
    agent_turn's role: the stack's parameter is checked on its own."""
    model = "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    _, checks = doctor(deploy(LlmModel=model, LlmApiKeyParameter=""), capsys)
    assert failed(checks) == ["model"]
    assert f"AgentTurnFunction may not invoke {model}" in checks["model"]
    assert "BedrockModelArns" in checks["model"].split("fix:", 1)[1]
    assert model_server.requests == []


@pytest.mark.parametrize(
    ("message", "fix"),
    [(NO_ACCESS, "Model access page"), (NOT_AUTHORIZED, "bedrock:InvokeModel")],
)
def test_bedrocks_missing_model_access_is_told_apart_from_a_missing_permission(
    deploy: Deploy, capsys: pytest.CaptureFixture[str], message: str, fix: str
) -> None:
    bedrock = BedrockRefusals(message).start()
    try:
        profile = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
        arn = f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{profile}"
        stack = deploy(
            LlmModel=f"bedrock/{profile}",
            LlmApiKeyParameter="",
            LlmApiBase=bedrock.url,
            BedrockModelArns=arn,
        )
        _, checks = doctor(stack, capsys)
    finally:
        bedrock.stop()
    assert bedrock.paths, "the one-token request never reached the stand-in"
    assert failed(checks) == ["model"]
    assert fix in checks["model"].split("fix:", 1)[1]


def test_without_a_stack_it_checks_what_the_local_commands_use(
    bot_api: LocalBotApi,
    model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    model_server.reply("OK")
    for name, value in model_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", BOT_TOKEN)
    monkeypatch.delenv("WORKSPACE_BUCKET", raising=False)
    code = main(["doctor", "--env-file", "/nonexistent"])
    out = capsys.readouterr().out
    assert code == 0, out
    statuses = [line.split()[0] for line in out.splitlines()[:-1]]
    assert statuses == ["skip", "skip", "ok", "ok", "ok", "ok", "ok", "skip", "skip", "skip"]
    assert "none set: updates wait for getUpdates (nanobot-lambda poll)" in out
    assert "skip  command menu     not set: `nanobot-lambda webhook set` sets it" in out

    monkeypatch.delenv("LLM_MODEL")
    assert main(["doctor", "--env-file", "/nonexistent"]) == 1
    out = capsys.readouterr().out
    assert "FAIL  configuration    LLM_MODEL is not set\n" in out
    assert "skip  model" in out


def test_a_skill_read_leniently_is_a_warning_and_still_parses(
    deploy: Deploy, resources: TemplateContext, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Claude-Code-style skill (an unquoted colon in its description) is usable: the workspace
    check passes and names the YAML problem as a warning, with no fix to apply."""
    stack = deploy()
    S3Workspace(resources.refs["WorkspaceBucket"], boto3.client("s3")).write(
        "skills/pdf-tools/SKILL.md",
        b"---\nname: pdf-tools\n"
        b"description: Extract text from PDFs. Use when: the user uploads a PDF\n"
        b"---\nRun pdftotext.",
    )
    code, checks = doctor(stack, capsys)
    assert code == 0, checks
    assert failed(checks) == []
    report = checks["workspace"]
    assert report.startswith("ok")
    assert "default files present, 1 workspace skill(s) parse" in report
    assert (
        "warning: skills/pdf-tools/SKILL.md: frontmatter is not valid YAML: "
        "mapping values are not allowed here at line 3"
    ) in report
    assert "fix:" not in report
    assert "uploads a PDF" not in report


def announce_local_stack(
    resources: TemplateContext, hooks_url: str, monkeypatch: pytest.MonkeyPatch, cache: Path
) -> None:
    """Announce the resources as a running chat's stack would (the chat being this process)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    LocalStackInfo.of(resources, os.environ["AWS_ENDPOINT_URL"], "us-east-1", hooks_url).announce()


def doctor_local(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, str]]:
    code = main(["doctor", "--local", "--env-file", "/nonexistent"])
    checks: dict[str, str] = {}
    for line in capsys.readouterr().out.splitlines()[:-1]:
        if line.startswith(("ok", "FAIL", "WARN", "skip")):
            name = line[6:23].strip()
            checks[name] = line
        else:
            checks[name] += "\n" + line
    return code, checks


def test_local_checks_the_running_chat_s_stack_and_skips_what_it_has_not(
    resources: TemplateContext,
    model_server: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """`doctor --local` (healthy: test_chat_terminal, against a running chat): a resource
    gone from its moto server, or a hooks URL nothing answers, fails the stack check."""
    assert main(["doctor", "--local", "--env-file", "/nonexistent"]) == 2
    assert "no local stack is running" in capsys.readouterr().err

    for name, value in model_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", BOT_TOKEN)  # a real bot's, for poll: not checked
    seed_workspace(S3Workspace(resources.refs["WorkspaceBucket"], boto3.client("s3")))
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{unused.getsockname()[1]}/hooks"
    announce_local_stack(resources, nowhere, monkeypatch, tmp_path)
    model_server.reply("OK")
    code, checks = doctor_local(capsys)
    assert code == 1
    assert failed(checks) == ["stack"]
    assert f"{nowhere}/NAME cannot be reached" in checks["stack"]
    assert "fix: start `make chat` (or `nanobot-lambda chat`) again" in checks["stack"]
    assert [line[:4] for line in checks.values()] == [
        "skip", "FAIL", "ok  ", "ok  ", "ok  ", "skip", "skip", "skip", "skip", "ok  "
    ]  # fmt: skip
    assert "the local stack's Bot API is the chat's own" in checks["bot token"]

    boto3.client("sqs").delete_queue(QueueUrl=resources.refs["TurnQueue"])
    model_server.reply("OK")
    code, checks = doctor_local(capsys)
    assert failed(checks) == ["stack"]
    assert "has no TurnQueueUrl (AWS.SimpleQueueService.NonExistentQueue)" in checks["stack"]


def test_a_console_route_its_function_does_not_answer_is_told_apart(console_url: str) -> None:
    assert console_route_problem(console_url) is None
    nothing = LocalHttpApi([], lambda _, event: {}).start()  # API Gateway without the routes
    try:
        assert console_route_problem(f"{nothing.url}/console") == (
            "does not serve the page (HTTP 404)"
        )
    finally:
        nothing.stop()
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{unused.getsockname()[1]}/console"
    problem = console_route_problem(nowhere)
    assert problem is not None and problem.startswith("cannot be reached")
