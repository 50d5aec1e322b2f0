"""Events in, through the whole local stack (moto server, the local Bot API, the scripted model):
signed hook events posted to the webhook function's hooks route are queued in their chat's
order and scope; a replay, a bad signature and a removed hook are refused with nothing queued;
a reaction is recorded by the webhook with no model call; an edit of an answered message is a
short turn that says what it reads now."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import boto3

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.feedback import DynamoFeedbackBook
from nanobot_lambda.adapters.aws.hooks import DynamoHookStore
from nanobot_lambda.adapters.telegram.subjects import subject_of
from nanobot_lambda.core import hooks
from nanobot_lambda.core.hooks import new_hook
from nanobot_lambda.core.jobs import HookEventJob, parse_job
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.operator.local.stack import LocalStack, LocalUser
from tests.conftest import StackFactory
from tests.support.scripted_model import ScriptedModelServer

OWNER = LocalUser().id
TEAM = -1001234567890
CHECK_RUN = json.dumps(
    {"action": "completed", "check_run": {"name": "unit", "conclusion": "failure"}}
).encode()


def queued(stack: LocalStack) -> list[tuple[str, dict[str, Any]]]:
    """Take every job off the turn queue: (its message group, its body)."""
    sqs = boto3.client("sqs")
    url = stack.template.refs["TurnQueue"]
    taken = []
    while True:
        messages = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["MessageGroupId"]
        ).get("Messages", [])
        if not messages:
            return taken
        for message in messages:
            taken.append((message["Attributes"]["MessageGroupId"], json.loads(message["Body"])))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def answer(response: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    return response["statusCode"], json.loads(response["body"])


def test_signed_events_are_queued_in_their_chat_and_scope_and_the_rest_refused(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory()
    store = DynamoHookStore(stack.template.refs["SessionsTable"], dynamodb_client)
    now = time.time()
    made = datetime.now(UTC)
    ci = new_hook("ci", OWNER, None, quiet=False, now=made, created_by=OWNER)
    team = new_hook("team-deploys", TEAM, 600, quiet=True, now=made, created_by=OWNER)
    assert store.add(ci) and store.add(team)
    ci_secret, team_secret = ci.secret.get_secret_value(), team.secret.get_secret_value()

    # GitHub's form, as a GitHub webhook sends it.
    github = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "check_run",
        "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "X-Hub-Signature-256": hooks.sign_github(ci_secret, CHECK_RUN),
    }
    assert answer(stack.post_hook("ci", CHECK_RUN, github)) == (
        202,
        {"ok": True, "status": "queued", "delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
    )
    # The generic form, signed with a timestamp (as the README's curl example does).
    deploy = b'{"service": "api", "status": "rolled back"}'
    timestamp = int(now)
    generic = {
        "X-Hook-Timestamp": str(timestamp),
        "X-Hook-Signature": hooks.sign(team_secret, deploy, timestamp),
        "X-Hook-Event": "deploy",
    }
    assert answer(stack.post_hook("team-deploys", deploy, generic))[0] == 202

    # Refused, nothing queued: a replay, a bad signature, a stale timestamp, an odd or unknown
    # name, a flood's body of 10 MB, a removed hook.
    assert answer(stack.post_hook("ci", CHECK_RUN, github)) == (
        200,
        {"ok": True, "status": "duplicate", "delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
    )
    forged = github | {"X-Hub-Signature-256": hooks.sign_github("guessed", CHECK_RUN)}
    assert answer(stack.post_hook("ci", CHECK_RUN, forged)) == (
        401,
        {"ok": False, "error": "wrong signature"},
    )
    stale = generic | {
        "X-Hook-Timestamp": str(timestamp - 600),
        "X-Hook-Signature": hooks.sign(team_secret, deploy, timestamp - 600),
    }
    assert answer(stack.post_hook("team-deploys", deploy, stale))[0] == 401
    assert answer(stack.post_hook("Bad.Name", deploy, generic))[0] == 404
    huge = b"x" * (10 * 1024 * 1024)
    assert answer(stack.post_hook("ci", huge, {}))[0] == 413
    assert store.remove("team-deploys")
    again = generic | {"X-Hook-Delivery": "d-2"}
    assert answer(stack.post_hook("team-deploys", deploy, again)) == (
        404,
        {"ok": False, "error": "no such hook"},
    )

    jobs = queued(stack)
    assert [group for group, _ in jobs] == [f"telegram:{OWNER}", f"telegram:{TEAM}:600"]
    github_job, deploy_job = (parse_job(json.dumps(body)) for _, body in jobs)
    assert isinstance(github_job, HookEventJob) and isinstance(deploy_job, HookEventJob)
    assert (github_job.event, json.loads(github_job.payload)) == (
        "check_run",
        json.loads(CHECK_RUN),
    )
    assert (deploy_job.event, deploy_job.quiet, deploy_job.thread_id) == ("deploy", True, 600)
    # Whose they are, as agent_turn derives it: the owner's workspace, the group's own scope.
    assert subject_of(github_job, OWNER).scope == Scope("")
    group = subject_of(deploy_job, OWNER)
    assert (group.chat_id, group.scope) == (TEAM, Scope("groups/1001234567890"))
    assert model_server.requests == []  # the webhook never calls a model
    logged = "\n".join(
        record.getMessage() + str(record.__dict__) for record in stack.log_sink.records
    )
    assert ci_secret not in logged and team_secret not in logged


def test_a_reaction_is_recorded_and_an_edit_is_a_short_turn(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Lisbon in May is lovely.")
    asked = stack.text_update("What about the Lisbon trip?")
    stack.post_update(asked)
    stack.process_queue()
    (answered,) = [m for m in stack.bot_api.messages if m.chat_id == OWNER]
    calls = len(model_server.requests)

    chat = asked["message"]["chat"]
    user = asked["message"]["from"]
    reaction = {
        "update_id": asked["update_id"] + 1,
        "message_reaction": {
            "chat": chat,
            "message_id": answered.message_id,
            "user": user,
            "date": int(time.time()),
            "old_reaction": [],
            "new_reaction": [{"type": "emoji", "emoji": "👍"}],
        },
    }
    assert answer(stack.post_update(reaction)) == (200, {"ok": True, "status": "recorded"})
    stack.process_queue()
    assert len(model_server.requests) == calls  # no model call for a reaction
    book = DynamoFeedbackBook(stack.template.refs["SessionsTable"], dynamodb_client)
    (recorded,) = book.reactions(OWNER)
    assert (recorded.message_id, recorded.emojis) == (answered.message_id, ("👍",))

    model_server.reply("Porto in May is lovely too.")
    edit = {
        "update_id": asked["update_id"] + 2,
        "edited_message": {
            **asked["message"],
            "text": "What about the Porto trip?",
            "edit_date": int(time.time()),
        },
    }
    assert answer(stack.post_update(edit))[1]["status"] == "queued"
    stack.process_queue()
    prompt = json.dumps(model_server.requests[-1], ensure_ascii=False)
    assert 'It now says: \\"What about the Porto trip?\\"' in prompt
    said = [m.plain_text for m in stack.bot_api.messages if m.chat_id == OWNER]
    assert said[-1] == "Porto in May is lovely too."
    latest = book.latest_edit(f"telegram:{OWNER}", asked["message"]["message_id"])
    assert latest is not None and latest.text == "What about the Porto trip?"
