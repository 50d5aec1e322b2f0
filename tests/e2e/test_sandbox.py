"""The code sandbox through the whole stack: the model's exec call goes from agent_turn to the
sandbox function over the Lambda Invoke API (the local stack runs the function in its own worker
process, as Lambda would), files go in from the workspace and come back into it, and the code
finds no credential and nothing of an earlier run."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from nanobot_lambda.functions.sandbox_confinement import landlock_abi
from nanobot_lambda.operator.local.stack import LocalStack
from tests.e2e.test_press_scopes import ADA, GROUP, ada_says, keys
from tests.support.cli import run_console_script
from tests.support.sandbox_snoop import snoop_code
from tests.support.scripted_model import ScriptedModelServer


def say(stack: LocalStack, text: str) -> None:
    stack.post_update(stack.text_update(text))
    stack.process_queue()
    assert stack.poller.failures == 0


def tool_result(model_server: ScriptedModelServer, index: int) -> str:
    message: dict[str, Any] = model_server.requests[index]["messages"][-1]
    assert message["role"] == "tool"
    return str(message["content"])


def test_code_runs_with_workspace_files_and_its_files_come_back(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.workspace.write("data/numbers.txt", b"1\n2\n3\n")
    code = (
        "total = sum(int(n) for n in open('data/numbers.txt'))\n"
        "open('data/total.txt', 'w').write(str(total))\n"
        "print('total', total)\n"
    )
    model_server.call_tool(
        "exec", {"language": "python", "code": code, "files": ["data/numbers.txt"]}
    ).reply("The total is 6.")
    say(stack, "add up my numbers")

    result = tool_result(model_server, 1)
    assert "exit code 0" in result and "total 6" in result
    # The system prompt names what the sandbox has (asked of the sandbox function itself).
    system = model_server.requests[0]["messages"][0]["content"]
    line = system.split("# Sandbox\n\n", 1)[1].split("\n", 1)[0]
    assert line.startswith("exec has python3, ") and ", sh, " in line
    total = stack.workspace.read("data/total.txt")
    assert total is not None and total.data == b"6"
    assert stack.bot_api.messages[-1].plain_text == "The total is 6."


def test_the_code_finds_no_credential_and_nothing_of_an_earlier_run(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    snoop = (
        "import os, glob\n"
        "print('vars', sorted(os.environ))\n"
        "print('left', glob.glob('/tmp/*') if False else os.listdir(os.environ['TMPDIR']))\n"
        "open(os.path.join(os.environ['TMPDIR'], 'mark'), 'w').write('x')\n"
    )
    model_server.call_tool("exec", {"language": "python", "code": snoop}).reply("Done.")
    model_server.call_tool("exec", {"language": "python", "code": snoop}).reply("Again.")
    say(stack, "look around")
    say(stack, "look again")

    first, second = tool_result(model_server, 1), tool_result(model_server, 3)
    for result in (first, second):
        assert "AWS_" not in result and "TELEGRAM" not in result and "LLM_" not in result
        assert "left []" in result  # the mark of the first run is gone before the second


def test_a_run_out_of_time_is_reported_and_the_turn_goes_on(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.call_tool(
        "exec", {"language": "shell", "code": "sleep 30", "timeout_seconds": 1}
    ).reply("It took too long.")
    say(stack, "wait a while")
    assert "stopped: it ran out of time" in tool_result(model_server, 1)
    assert stack.bot_api.messages[-1].plain_text == "It took too long."


def test_through_chat_the_code_finds_none_of_the_user_s_credentials(
    model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """`nanobot-lambda chat -m` as a user runs it: real-looking AWS keys in the shell, the model
    key in the project's .env, ~/.aws/credentials. The code looks everywhere it can (every
    process's /proc entries, the stack's included, and those files) and finds none of them."""

    def fake(name: str) -> str:
        return f"planted-{name}-{uuid.uuid4().hex}"

    shell = {"AWS_ACCESS_KEY_ID": fake("key-id"), "AWS_SECRET_ACCESS_KEY": fake("secret")}
    model_key = fake("llm-key")
    home, project = tmp_path / "home", tmp_path / "project"
    credentials = home / ".aws" / "credentials"
    credentials.parent.mkdir(parents=True)
    in_file = fake("aws-file-secret")
    credentials.write_text(f"[default]\naws_secret_access_key = {in_file}\n")
    project.mkdir()
    env_file = project / ".env"
    settings = model_server.env(api_key=model_key)
    env_file.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    planted = [*shell.values(), model_key, in_file]
    # Without Landlock the user's files are open to the code (README says so): not looked at.
    files = [str(credentials), str(env_file)] if landlock_abi() else []
    code = snoop_code(planted, files)
    model_server.call_tool("exec", {"language": "python", "code": code}).reply("Looked.")

    completed = run_console_script(  # the stack's process is the CLI's, as a user's would be
        "chat",
        "-m",
        "look around",
        "--env-file",
        str(env_file),
        env={"HOME": str(home), **shell},
        cwd=project,
    )

    assert completed.returncode == 0, completed.stderr
    assert "nanobot> Looked." in completed.stdout
    result = tool_result(model_server, 1)
    assert "exit code 0" in result, result
    report = json.loads(next(line for line in result.splitlines() if line.startswith('{"tried"')))
    assert report["found"] == []
    assert "/proc/self/environ" in report["opened"]
    # The handler (the worker), the stack (the CLI's process): neither is open to the code.
    worker, cli = report["ancestors"][:2]
    for pid in (worker, cli):
        assert f"/proc/{pid}/environ" not in report["opened"]
        assert f"/proc/{pid}/mem (opened)" not in report["opened"]
    for path in files:
        assert path not in report["opened"]
    assert not [value for value in planted if value in result]
    assert model_key in model_server.headers[0].get("Authorization", "")  # the stack held it


def test_a_traceback_after_megabytes_of_output_reaches_the_model_whole(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    code = "import sys\nsys.stdout.write('x' * 3_000_000)\nraise ValueError('the real error')\n"
    model_server.call_tool("exec", {"language": "python", "code": code}).reply("It failed.")
    say(stack, "run my script")

    result = tool_result(model_server, 1)
    assert len(result) <= 16_000  # TOOL_RESULT_MAX_CHARS: the tool fitted it, nothing cut it
    assert "exit code 1" in result and "3,000,000 bytes in all" in result
    assert result.endswith(
        "ValueError: the real error\n[output truncated: the middle of a long "
        "stream is cut]\n</untrusted_web_content>"
    )


def test_a_person_s_and_a_group_s_runs_take_and_give_files_in_their_own_scope(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """Ada's code (in her private chat, then in the group) reads her scope's file and writes
    into that scope; the owner's file of the same name is never read, nothing reaches the
    owner's workspace."""
    stack.workspace.write("plan.txt", b"the owner's plan")
    code = "open('out.txt', 'w').write(open('plan.txt').read().upper())\nprint('done')\n"
    for in_group, scope, update_id in (
        (False, "scopes/people/111111111/", 920000001),
        (True, "scopes/groups/1001234567890/", 920000002),
    ):
        stack.workspace_of(GROUP if in_group else ADA).write("plan.txt", b"ada's plan")
        model_server.call_tool(
            "exec", {"language": "python", "code": code, "files": ["plan.txt"]}
        ).reply("Done.")
        ada_says(stack, "shout my plan", update_id, in_group=in_group)
        result = tool_result(model_server, len(model_server.requests) - 1)
        assert "exit code 0" in result
        written = stack.workspace_of(GROUP if in_group else ADA).read("out.txt")
        assert written is not None and written.data == b"ADA'S PLAN"
        assert f"{scope}out.txt" in keys(stack, scope)
    assert stack.workspace.read("out.txt") is None
    assert stack.poller.failures == 0 and not model_server.unexpected
