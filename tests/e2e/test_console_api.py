"""The console's API on the local stack, over HTTP as the page calls it (the template's routes on
127.0.0.1, served by the console function's handler): signed in by launch data only, each
person in their own scope, every change made by the code the chat's commands use; and the
function never imports litellm."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

from nanobot_lambda.core import inbound_events, launch_data
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import ROOT
from tests.integration.conftest import resources  # noqa: F401 - fixture
from tests.support.scripted_model import ScriptedModelServer

ADA = {"id": 111111111, "first_name": "Ada"}  # allowed (tests/conftest.py), not the owner


def launch_of(stack: LocalStack, user: dict[str, Any] | None = None) -> str:
    url = stack.console_launch_url(user)
    assert url is not None
    fragment = urllib.parse.parse_qs(url.split("#", 1)[1])
    return fragment["tgWebAppData"][0]


def call(
    stack: LocalStack, route: str, body: dict[str, Any], launch: str
) -> tuple[int, dict[str, Any]]:
    assert stack.console_url is not None
    request = urllib.request.Request(  # noqa: S310 - the local stack, on 127.0.0.1
        f"{stack.console_url}/api/{route}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"tma {launch}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def system_prompt(model_server: ScriptedModelServer) -> str:
    content: str = model_server.requests[-1]["messages"][0]["content"]
    return content


def test_an_edit_of_memory_in_the_console_is_in_the_next_turn_s_prompt(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    owner = launch_of(stack)
    status, memory = call(stack, "memory", {}, owner)
    assert status == 200
    status, saved = call(
        stack,
        "memory/save",
        {"text": memory["text"] + "\nPrefers green tea, no sugar.", "version": memory["version"]},
        owner,
    )
    assert status == 200, saved
    model_server.reply("Noted.")
    stack.post_update(stack.text_update("Tea?"))
    stack.process_queue()
    assert "Prefers green tea, no sugar." in system_prompt(model_server)
    # The editor's version is stale now a turn could have written: a second save is refused.
    status, refused = call(stack, "memory/save", {"text": "x", "version": memory["version"]}, owner)
    assert status == 409
    assert "Prefers green tea" in refused["text"]  # the text as it is now, for the editor


def test_a_person_reads_their_own_scope_and_is_refused_another(stack: LocalStack) -> None:
    stack.workspace.write("memory/MEMORY.md", b"# Memory\n\nThe owner's secret plans.\n")
    ada = launch_of(stack, ADA)
    status, me = call(stack, "me", {}, ada)
    assert status == 200 and me["is_owner"] is False and me["scope"] == "people/111111111"
    status, memory = call(stack, "memory", {}, ada)
    assert status == 200 and "secret plans" not in memory["text"]
    assert call(stack, "memory", {"scope": "owner"}, ada)[0] == 403
    assert call(stack, "people", {}, ada)[0] == 403
    status, owners = call(stack, "memory", {}, launch_of(stack))
    assert status == 200 and "secret plans" in owners["text"]


def test_a_turn_s_model_tokens_cost_and_tools_are_in_spending_and_activity(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.response_model = "gpt-4o-mini"  # a model litellm has a price for
    model_server.call_tool("list_dir", {"path": "."}, prompt_tokens=1000, completion_tokens=20)
    model_server.reply("Two files.", prompt_tokens=1200, completion_tokens=30)
    stack.post_update(stack.text_update("What is in my folder?"))
    stack.process_queue()

    owner = launch_of(stack)
    status, spending = call(stack, "spending", {}, owner)
    assert status == 200, spending
    (model,) = spending["models"]  # the model as the chat's settings name it
    assert (model["model"], model["model_calls"]) == (ScriptedModelServer.MODEL, 2)
    assert (model["prompt_tokens"], model["completion_tokens"]) == (2200, 50)
    assert model["cost_usd"] > 0
    assert spending["everyone_models"] == spending["models"]  # the owner's chat is all there is

    status, activity = call(stack, "activity", {}, owner)
    assert status == 200, activity
    turn = activity["turns"][0]
    assert turn["models"] == [ScriptedModelServer.MODEL] and turn["tools"] == ["list_dir"]
    assert (turn["prompt_tokens"], turn["completion_tokens"]) == (2200, 50)
    assert turn["cost_usd"] == model["cost_usd"] and turn["error"] is None
    assert "What is in my folder" not in json.dumps(activity)

    # A person sees their own spending, none of the owner's models, and no activity.
    ada = launch_of(stack, ADA)
    status, theirs = call(stack, "spending", {}, ada)
    assert status == 200 and theirs["models"] == [] and "everyone_models" not in theirs
    assert call(stack, "activity", {}, ada)[0] == 403


def test_a_turn_that_ended_unanswered_shows_why_in_activity(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.fail(status=400, times=5)  # refused: no retry helps
    stack.post_update(stack.text_update("Hello?"))
    stack.process_queue()
    status, activity = call(stack, "activity", {}, launch_of(stack))
    assert status == 200, activity
    (turn,) = activity["turns"]
    assert turn["error"] and turn["steps"] == 0 and turn["models"] == []


def test_forged_expired_and_another_user_s_launch_data_are_refused(stack: LocalStack) -> None:
    owner = launch_of(stack)
    forged = owner.replace("hash=", "hash=f")
    fields = dict(urllib.parse.parse_qsl(owner))
    fields.pop("hash")
    fields["auth_date"] = str(int(time.time()) - 2 * 3600)
    expired = launch_data.sign(fields, stack.bot_token)
    for launch in (forged, expired, ""):
        status, answer = call(stack, "memory/save", {"text": "overwritten", "version": ""}, launch)
        assert status == 401, answer
    status, _ = call(stack, "memory", {"user_id": 111111111}, owner)
    assert status == 401
    memory = stack.workspace.read("memory/MEMORY.md")
    assert memory is not None and b"overwritten" not in memory.data


def test_a_paused_heartbeat_queues_no_turn_and_resumed_it_does(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """The heartbeat's schedule (the template's) keeps firing while paused: its firing does
    nothing, until the console resumes it."""
    stack.workspace.write("HEARTBEAT.md", b"- [ ] Check on the plants\n")
    heartbeat = stack.template.refs["HeartbeatSchedule"]
    owner = launch_of(stack)
    assert call(stack, "schedules/heartbeat/pause", {}, launch_of(stack, ADA))[0] == 403
    assert call(stack, "schedules/heartbeat/pause", {}, owner) == (200, {"paused": True})
    status, shown = call(stack, "schedules", {}, owner)
    assert status == 200 and shown["heartbeat"]["paused"] is True
    start = datetime.now(UTC)
    fired = stack.fire_due_schedules(start + timedelta(minutes=31))
    assert heartbeat in [name for name, _ in fired]
    stack.process_queue()
    assert model_server.requests == [] and stack.bot_api.messages == []

    assert call(stack, "schedules/heartbeat/resume", {}, owner) == (200, {"paused": False})
    model_server.call_tool("heartbeat_decision", {"action": "run"}).reply("The plants need water.")
    fired = stack.fire_due_schedules(start + timedelta(minutes=61))
    assert heartbeat in [name for name, _ in fired]
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == ["The plants need water."]


def test_a_hook_s_deliveries_show_what_each_caused_to_the_owner_only(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    owner = launch_of(stack)
    status, hook = call(stack, "hooks/add", {"name": "deploys", "request": "r1"}, owner)
    assert status == 200, hook
    body = b'{"service": "api", "status": "rolled back", "note": "PRIVATE-PAYLOAD"}'
    now = int(time.time())
    signed = {
        "X-Hook-Timestamp": str(now),
        "X-Hook-Signature": inbound_events.sign(hook["secret"], body, now),
        "X-Hook-Event": "deploy",
        "X-Hook-Delivery": "deploy-1",
    }
    assert stack.post_hook("deploys", body, signed)["statusCode"] == 202
    model_server.reply("The api deploy was rolled back.\nNothing else changed.")
    stack.process_queue()
    forged = signed | {"X-Hook-Signature": inbound_events.sign("guessed", body, now)}
    assert stack.post_hook("deploys", body, forged)["statusCode"] == 401

    status, shown = call(stack, "hooks/deliveries", {"name": "deploys"}, owner)
    assert status == 200, shown
    refused, queued = shown["deliveries"]  # newest first
    assert (refused["outcome"], refused["status"], refused["reason"]) == (
        "refused",
        401,
        "wrong signature",
    )
    assert refused["caused"] is None and refused["delivery_id"] is None
    assert (queued["outcome"], queued["delivery_id"], queued["event"]) == (
        "queued",
        "deploy-1",
        "deploy",
    )
    assert queued["size"] == len(body) and queued["digest"] == hashlib.sha256(body).hexdigest()
    assert queued["caused"] == {"state": "answered", "answer": "The api deploy was rolled back."}
    assert "PRIVATE-PAYLOAD" not in json.dumps(shown)
    # A person never sees the owner's hooks, nor their deliveries.
    assert call(stack, "hooks/deliveries", {"name": "deploys"}, launch_of(stack, ADA))[0] == 403


def test_skills_requirements_are_judged_by_what_the_sandbox_said_to_agent_turn(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """The console never asks the sandbox: agent_turn records what it found, on its first turn."""
    skill = "---\nname: {0}\ndescription: Uses {0}.\nrequires:\n  {1}: [{2}]\n---\nDo it.\n"
    for name, kind, needed in (
        ("shell", "bins", "sh"),
        ("nothing-has-it", "bins", "no-such-program-x9"),
        ("model", "env", "LLM_MODEL"),  # set in agent_turn's environment
        ("unset", "env", "NO_SUCH_VARIABLE_X9"),
    ):
        stack.workspace.write(f"skills/{name}/SKILL.md", skill.format(name, kind, needed).encode())
    owner = launch_of(stack)

    def shown() -> dict[str, Any]:
        status, answer = call(stack, "skills", {}, owner)
        assert status == 200, answer
        return answer

    before = shown()
    assert before["checked"] is None
    assert {s["name"]: s["available"] for s in before["skills"]}["shell"] is None  # unknown
    model_server.reply("Hello.")
    stack.post_update(stack.text_update("Hi"))
    stack.process_queue()
    after = shown()
    assert after["checked"]["sandbox"] is True
    available = {s["name"]: (s["available"], s["met"]) for s in after["skills"]}
    assert available["shell"] == (True, {"bin:sh": True})
    assert available["nothing-has-it"] == (False, {"bin:no-such-program-x9": False})
    assert available["model"] == (True, {"env:LLM_MODEL": True})
    assert available["unset"] == (False, {"env:NO_SUCH_VARIABLE_X9": False})


PROBE = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from nanobot_lambda.core import inbound_events, launch_data
    from nanobot_lambda.operator.local.runtime import LocalLambdaContext, load_handler_module

    started = time.perf_counter()
    module = load_handler_module(Path("functions/console"), "console_app")
    init = time.perf_counter() - started
    fields = {"user": json.dumps({"id": 111111111, "first_name": "Ada"}),
              "auth_date": str(int(time.time()))}
    event = {
        "version": "2.0", "rawPath": "/console/api/memory", "rawQueryString": "",
        "headers": {"authorization": "tma " + launch_data.sign(fields, "1:console-probe")},
        "requestContext": {"http": {"method": "POST", "path": "/console/api/memory"}},
        "body": "{}", "isBase64Encoded": False,
    }
    response = module.handler(event, LocalLambdaContext("console", 15, 256))
    heavy_roots = ("litellm", "openai", "tiktoken", "aws_xray_sdk", "markdown_it")
    heavy = sorted(name for name in sys.modules if name.split(".")[0] in heavy_roots)
    print(json.dumps({"status": response["statusCode"], "heavy": heavy, "init": init}))
    """
)


def test_the_console_answers_without_importing_litellm(
    resources: TemplateContext,  # noqa: F811
) -> None:
    refs = resources.refs
    env = {
        **os.environ,
        "TELEGRAM_BOT_TOKEN": "1:console-probe",
        "ALLOW_FROM": "111111111",
        "WORKSPACE_BUCKET": refs["WorkspaceBucket"],
        "SESSIONS_TABLE": refs["SessionsTable"],
        "JOBS_TABLE": refs["JobsTable"],
        "SCHEDULE_GROUP": refs["ScheduleGroup"],
        "SCHEDULER_TARGET_ARN": "arn:aws:lambda:us-east-1:123456789012:function:scheduler",
        "SCHEDULER_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler",
        "TURN_QUEUE_URL": refs["TurnQueue"],
    }
    completed = subprocess.run(  # noqa: S603
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert (result["status"], result["heavy"]) == (200, [])


def test_console_in_the_local_chat_says_where_the_console_runs(stack: LocalStack) -> None:
    stack.post_update(stack.text_update("/console"))
    stack.process_queue()
    answer = stack.bot_api.messages[-1]
    assert stack.console_url is not None and stack.console_url in answer.plain_text
    assert answer.web_apps == ()  # Telegram opens a Mini App from an https address only
    # The command menu lists it, and the banner's link opens the console signed in.
    launch = stack.console_launch_url()
    assert launch is not None and launch.startswith(f"{stack.console_url}#tgWebAppData=")
