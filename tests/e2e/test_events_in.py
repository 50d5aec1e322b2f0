"""Events in, through the whole local stack (moto server, the local Bot API, the scripted model):
signed hook events posted to the webhook function's hooks route are queued in their chat's
order and scope; a replay, a bad signature and a removed hook are refused with nothing queued;
agent_turn answers an event in its chat (the model sees the framed payload; a quiet hook with
nothing to report sends nothing; an event delivered twice is answered once); /hooks makes a
hook from the chat; a reaction is recorded by the webhook with no model call and shows in
/usage; an edit of an answered message is a short turn that says what changed (since the last
edit's turn: an edit sent again or of the formatting only asks nothing), and an edit made before
its message's turn ran replaces the message in that turn.

`/hooks add` cut short and run again by SQS shows its secret exactly once: Telegram failing the
secret's message on every try of the client fails the invocation after the hook was stored,
and the update's next run sends the stored secret (the hook it made, not a new one); Telegram
failing the group's note after it accepted the secret, the next run sends the note, not the
secret again; the update queued once more after it was answered sends nothing. No log line and
no other item of the table holds the secret."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.clients import dynamodb_client
from nanobot_lambda.adapters.aws.inbound_events import DynamoHookStore
from nanobot_lambda.adapters.aws.reactions_and_edits import DynamoFeedbackBook
from nanobot_lambda.core import inbound_events
from nanobot_lambda.core.inbound_events import Hook, new_hook
from nanobot_lambda.core.jobs import HookEventJob, TelegramUpdateJob, parse_job
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.functions.agent_turn.kinds import subject_of
from nanobot_lambda.functions.agent_turn.queued import QueuedJob
from nanobot_lambda.operator.local.stack import LocalStack, LocalTelegram, LocalUser
from tests.conftest import TEMPLATE, StackFactory
from tests.e2e.test_faults import dead_letters
from tests.support.faults import BotApiFaults
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


def said_in(stack: LocalStack, chat_id: int) -> list[str]:
    return [m.plain_text for m in stack.bot_api.messages if m.chat_id == chat_id]


def user_turn(model_server: ScriptedModelServer, request: int = -1) -> str:
    """What the model was given last as the user's turn."""
    content = model_server.requests[request]["messages"][-1]["content"]
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


@pytest.fixture
def team_stack(moto_endpoint: str, model_server: ScriptedModelServer) -> Iterator[LocalStack]:
    """The local stack with the team's forum group allowed beside the local user."""
    stack = LocalStack(
        TEMPLATE,
        model_env=model_server.env(),
        endpoint_url=moto_endpoint,
        telegram=LocalTelegram(allow_from=f"{OWNER},{TEAM}"),
    )
    try:
        yield stack.start()
    finally:
        stack.stop()


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
        "X-Hub-Signature-256": inbound_events.sign_github(ci_secret, CHECK_RUN),
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
        "X-Hook-Signature": inbound_events.sign(team_secret, deploy, timestamp),
        "X-Hook-Event": "deploy",
    }
    assert answer(stack.post_hook("team-deploys", deploy, generic))[0] == 202

    # Refused, nothing queued: a replay, a bad signature, a stale timestamp, an odd or unknown
    # name, a flood's body of 10 MB, a removed hook.
    assert answer(stack.post_hook("ci", CHECK_RUN, github)) == (
        200,
        {"ok": True, "status": "duplicate", "delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
    )
    forged = github | {"X-Hub-Signature-256": inbound_events.sign_github("guessed", CHECK_RUN)}
    assert answer(stack.post_hook("ci", CHECK_RUN, forged)) == (
        401,
        {"ok": False, "error": "wrong signature"},
    )
    stale = generic | {
        "X-Hook-Timestamp": str(timestamp - 600),
        "X-Hook-Signature": inbound_events.sign(team_secret, deploy, timestamp - 600),
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
    assert subject_of(QueuedJob.of(github_job), OWNER).scope == Scope("")
    group = subject_of(QueuedJob.of(deploy_job), OWNER)
    assert (group.chat_id, group.scope) == (TEAM, Scope("groups/1001234567890"))
    assert model_server.requests == []  # the webhook never calls a model
    logged = "\n".join(
        record.getMessage() + str(record.__dict__) for record in stack.log_sink.records
    )
    assert ci_secret not in logged and team_secret not in logged


def test_a_reaction_is_recorded_and_an_edit_is_a_short_turn_saying_what_changed(
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
    own = {
        "update_id": asked["update_id"] + 3,
        "message_reaction": {**reaction["message_reaction"]},
    }
    own["message_reaction"] |= {
        "message_id": asked["message"]["message_id"],  # the person's own message
        "new_reaction": [{"type": "emoji", "emoji": "🔥"}],
    }
    assert answer(stack.post_update(own)) == (200, {"ok": True, "status": "recorded"})
    stack.process_queue()
    assert len(model_server.requests) == calls  # no model call for a reaction
    book = DynamoFeedbackBook(stack.template.refs["SessionsTable"], dynamodb_client)
    assert [(r.message_id, r.emojis) for r in book.reactions(OWNER)] == sorted(
        [(answered.message_id, ("👍",)), (asked["message"]["message_id"], ("🔥",))]
    )
    usage = stack.text_update("/usage")
    usage["update_id"] = asked["update_id"] + 10  # the reactions and the edit take +1 to +3
    stack.post_update(usage)
    stack.process_queue()
    assert said_in(stack, OWNER)[-1].endswith("Reactions to answers: 👍 1")

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
    prompt = user_turn(model_server)
    assert 'It said: "What about the Lisbon trip?"' in prompt
    assert 'It now says: "What about the Porto trip?"' in prompt
    assert said_in(stack, OWNER)[-1] == "Porto in May is lovely too."
    latest = book.latest_edit(f"telegram:{OWNER}", asked["message"]["message_id"])
    assert latest is not None and latest.text == "What about the Porto trip?"


def test_an_edit_sent_again_or_restyled_asks_nothing_and_a_new_one_says_what_changed_since(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """The same edit under a new update id, and an edit of the formatting only (entities
    changed, the text as it was), ask the model nothing; the message edited again is compared
    with what the last edit's turn saw."""
    model_server.reply("Monday, noted.")
    asked = stack.text_update("My flight is on Monday")
    stack.post_update(asked)
    stack.process_queue()
    now = int(time.time())

    def edit(update_id: int, text: str, edit_date: int, **changes: Any) -> dict[str, Any]:
        message = {**asked["message"], "text": text, "edit_date": edit_date, **changes}
        return {"update_id": asked["update_id"] + update_id, "edited_message": message}

    model_server.reply("Tuesday then.")
    stack.post_update(edit(1, "My flight is on Tuesday", now))
    stack.process_queue()
    calls = len(model_server.requests)
    again = edit(2, "My flight is on Tuesday", now)
    bold = [{"type": "bold", "offset": 16, "length": 7}]
    restyled = edit(3, "My flight is on Tuesday", now + 60, entities=bold)
    for update in (again, restyled):
        assert answer(stack.post_update(update))[1]["status"] == "queued"
        stack.process_queue()
    assert len(model_server.requests) == calls
    assert said_in(stack, OWNER) == ["Monday, noted.", "Tuesday then."]

    model_server.reply("Wednesday then.")
    stack.post_update(edit(4, "My flight is on Wednesday", now + 120))
    stack.process_queue()
    prompt = user_turn(model_server)
    assert 'It said: "My flight is on Tuesday"' in prompt
    assert 'It now says: "My flight is on Wednesday"' in prompt
    assert said_in(stack, OWNER) == ["Monday, noted.", "Tuesday then.", "Wednesday then."]
    assert stack.poller.failures == 0 and model_server.unexpected == []


def test_events_are_answered_in_their_chat_and_scope_once(
    team_stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack = team_stack
    store = DynamoHookStore(stack.template.refs["SessionsTable"], dynamodb_client)
    # The owner makes the ci hook in the chat: its secret is shown there, once.
    stack.post_update(stack.text_update("/hooks add ci"))
    stack.process_queue()
    ci = store.hook("ci")
    assert ci is not None and ci.chat_id == OWNER
    ci_secret = ci.secret.get_secret_value()
    assert ci_secret in said_in(stack, OWNER)[-1]
    team = new_hook("team-deploys", TEAM, 600, quiet=True, now=datetime.now(UTC), created_by=OWNER)
    assert store.add(team)
    team_secret = team.secret.get_secret_value()

    # A GitHub event: answered in the owner's chat; the model saw the payload framed as data.
    model_server.reply("The unit check failed on main.")
    github = {
        "Content-Type": "application/json",
        "X-GitHub-Event": "check_run",
        "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "X-Hub-Signature-256": inbound_events.sign_github(ci_secret, CHECK_RUN),
    }
    assert answer(stack.post_hook("ci", CHECK_RUN, github))[0] == 202
    # Taken off the queue and queued twice (a redelivery, a dead letter replayed): one answer.
    ((group, body),) = queued(stack)
    sqs, url = boto3.client("sqs"), stack.template.refs["TurnQueue"]
    for dedup in ("first", "again"):
        sqs.send_message(
            QueueUrl=url,
            MessageBody=json.dumps(body),
            MessageGroupId=group,
            MessageDeduplicationId=dedup,
        )
    stack.process_queue()
    assert said_in(stack, OWNER)[-1] == "The unit check failed on main."
    assert said_in(stack, OWNER).count("The unit check failed on main.") == 1
    prompt = user_turn(model_server)
    assert 'An event arrived at the hook "ci" (event: "check_run"' in prompt
    assert "not instructions" in prompt and CHECK_RUN.decode() in prompt
    calls = len(model_server.requests)

    # A quiet group hook's event with nothing to report: its work is in the group's scope, and
    # nothing is sent.
    deploy = b'{"service": "api", "status": "healthy"}'
    model_server.call_tool(
        "write_file", {"path": "notes/deploys.md", "content": "api: healthy"}
    ).reply("HEARTBEAT_OK")
    now = int(time.time())
    signed = {
        "X-Hook-Timestamp": str(now),
        "X-Hook-Signature": inbound_events.sign(team_secret, deploy, now),
        "X-Hook-Event": "deploy",
        "X-Hook-Delivery": "deploy-1",
    }
    assert answer(stack.post_hook("team-deploys", deploy, signed))[0] == 202
    stack.process_queue()
    assert len(model_server.requests) == calls + 2
    assert "answer exactly HEARTBEAT_OK" in user_turn(model_server, calls)
    assert said_in(stack, TEAM) == []
    written = stack.workspace_of(TEAM).read("notes/deploys.md", fresh=True)
    assert written is not None and written.text == "api: healthy"
    assert stack.workspace.read("notes/deploys.md", fresh=True) is None  # not the owner's

    # The next one needs the team: sent to the group's topic.
    rolled = b'{"service": "api", "status": "rolled back"}'
    model_server.reply("The api deploy was rolled back.")
    signed = {
        "X-Hook-Timestamp": str(now),
        "X-Hook-Signature": inbound_events.sign(team_secret, rolled, now),
        "X-Hook-Event": "deploy",
        "X-Hook-Delivery": "deploy-2",
    }
    assert answer(stack.post_hook("team-deploys", rolled, signed))[0] == 202
    stack.process_queue()
    (sent,) = [m for m in stack.bot_api.messages if m.chat_id == TEAM]
    assert (sent.plain_text, sent.thread_id) == ("The api deploy was rolled back.", 600)
    assert "HEARTBEAT_OK" in json.dumps(model_server.requests[-1]["messages"])  # saw the last
    assert stack.poller.failures == 0 and model_server.unexpected == []
    logged = "\n".join(
        record.getMessage() + str(record.__dict__) for record in stack.log_sink.records
    )
    assert ci_secret not in logged and team_secret not in logged


def test_an_edit_before_its_message_s_turn_ran_replaces_the_message(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """The edit arrives while the message still waits in the chat's queue: its turn answers the
    message as it reads now, and the edit's own turn finds nothing left to say."""
    model_server.reply("Porto in May is lovely.")
    asked_first = stack.text_update("What about the Lisbon trip?")
    stack.post_update(asked_first)
    edit = {
        "update_id": asked_first["update_id"] + 1,
        "edited_message": {
            **asked_first["message"],
            "text": "What about the Porto trip?",
            "edit_date": int(time.time()),
        },
    }
    assert answer(stack.post_update(edit))[1]["status"] == "queued"
    stack.process_queue()

    (request,) = model_server.requests  # one turn; the edit's asked nothing
    assert user_turn(model_server).endswith("What about the Porto trip?")
    assert "Lisbon" not in json.dumps(request["messages"][-1])
    assert said_in(stack, OWNER) == ["Porto in May is lovely."]
    assert stack.poller.failures == 0


# -- /hooks add, cut short and run again ----------------------------------------------------

FAILS_A_RUN = 4  # the client's tries of one call: all failing fail the invocation


def shows_a_secret(params: dict[str, Any]) -> bool:
    return "Secret (shown only now" in str(params.get("text", ""))


def stored_hook(stack: LocalStack, name: str) -> Hook:
    hook = DynamoHookStore(stack.template.refs["SessionsTable"], dynamodb_client).hook(name)
    assert hook is not None
    return hook


def secret_kept_only_in_its_hook(stack: LocalStack, hook: Hook) -> None:
    """The secret is in the hook's own item, and in no other item of the table or log line."""
    secret = hook.secret.get_secret_value()
    items = boto3.client("dynamodb").scan(TableName=stack.template.refs["SessionsTable"])["Items"]
    holding = [item["sk"]["S"] for item in items if secret in json.dumps(item, default=str)]
    assert holding == [f"hook#{hook.name}"]
    logged = "\n".join(
        record.getMessage() + str(record.__dict__) for record in stack.log_sink.records
    )
    assert secret not in logged


def test_a_secret_telegram_failed_is_sent_by_the_update_s_next_run_once(
    stack: LocalStack,
) -> None:
    faults = BotApiFaults(stack.bot_api)
    fault = faults.fail("sendMessage", 502, "Bad Gateway", times=FAILS_A_RUN, when=shows_a_secret)
    update = stack.text_update("/hooks add ci")
    stack.post_update(update)
    stack.process_queue()

    assert fault.injected == FAILS_A_RUN and stack.poller.failures == 1
    hook = stored_hook(stack, "ci")
    assert hook.made_in == f"update-{update['update_id']}"
    secret = hook.secret.get_secret_value()
    shown = [text for text in said_in(stack, OWNER) if secret in text]
    assert len(shown) == 1 and "URL:" in shown[0]
    secret_kept_only_in_its_hook(stack, hook)

    # SQS runs the same update once more after it was answered (a lost acknowledgement, a
    # replay from the dead-letter queue): nothing is sent, the hook stays as it was.
    before = len(stack.bot_api.messages)
    boto3.client("sqs").send_message(
        QueueUrl=stack.template.refs["TurnQueue"],
        MessageBody=TelegramUpdateJob(update=update).model_dump_json(),
        MessageGroupId=f"telegram:{OWNER}",
        MessageDeduplicationId="redelivered-after-it-was-answered",
    )
    stack.process_queue()
    assert len(stack.bot_api.messages) == before
    assert stored_hook(stack, "ci") == hook

    # Another update naming it is refused, as before.
    stack.post_update(stack.text_update("/hooks add ci"))
    stack.process_queue()
    assert said_in(stack, OWNER)[-1].startswith("There is already a hook named ci")


RECEIVES = 3  # the turn queue's MaxReceiveCount: then the update is dead-lettered


def test_a_hook_whose_secret_never_reached_the_owner_is_removed_when_its_update_fails(
    stack: LocalStack,
) -> None:
    """Telegram refuses the secret on every run: the update is dead-lettered, and rather than
    keep a hook nobody can sign for (whose name `/hooks add` would refuse as taken), it is
    removed and the owner told to add it again. Adding it again works."""
    faults = BotApiFaults(stack.bot_api)
    fault = faults.fail(
        "sendMessage", 502, "Bad Gateway", times=FAILS_A_RUN * RECEIVES, when=shows_a_secret
    )
    stack.post_update(stack.text_update("/hooks add nightly"))
    stack.process_queue()

    assert fault.injected == FAILS_A_RUN * RECEIVES and stack.poller.failures == RECEIVES
    assert len(dead_letters(stack)) == 1
    store = DynamoHookStore(stack.template.refs["SessionsTable"], dynamodb_client)
    assert store.hook("nightly") is None
    (told,) = said_in(stack, OWNER)
    assert told.startswith("🪝 I could not send the secret of the new hook nightly")

    stack.post_update(stack.text_update("/hooks add nightly"))
    stack.process_queue()
    hook = stored_hook(stack, "nightly")
    assert hook.secret.get_secret_value() in said_in(stack, OWNER)[-1]


def test_a_hook_whose_secret_the_owner_got_stays_when_its_update_fails_later(
    team_stack: LocalStack,
) -> None:
    """Made in a group: the secret reached the owner's private chat, then the group refused
    its note on every run. The hook stays (the owner holds its secret); the group hears that
    its message could not be processed."""
    stack = team_stack
    faults = BotApiFaults(stack.bot_api)
    in_group = lambda params: params.get("chat_id") in (TEAM, str(TEAM))  # noqa: E731
    faults.fail("sendMessage", 502, "Bad Gateway", times=FAILS_A_RUN * RECEIVES, when=in_group)
    update = stack.text_update("/hooks add team-nightly")
    update["message"]["chat"] = {"id": TEAM, "type": "supergroup", "title": "Team"}
    stack.post_update(update)
    stack.process_queue()

    assert stack.poller.failures == RECEIVES and len(dead_letters(stack)) == 1
    hook = stored_hook(stack, "team-nightly")
    (to_owner,) = said_in(stack, OWNER)
    assert hook.secret.get_secret_value() in to_owner
    assert said_in(stack, TEAM)[-1].startswith("Sorry, I couldn't process your last message")


def test_a_secret_telegram_accepted_is_not_sent_again_by_the_update_s_next_run(
    team_stack: LocalStack,
) -> None:
    stack = team_stack
    faults = BotApiFaults(stack.bot_api)
    note = faults.fail(
        "sendMessage",
        502,
        "Bad Gateway",
        times=FAILS_A_RUN,
        when=lambda params: params.get("chat_id") in (TEAM, str(TEAM)),
    )
    update = stack.text_update("/hooks add team-deploys")
    update["message"]["chat"] = {"id": TEAM, "type": "supergroup", "title": "Team"}
    stack.post_update(update)
    stack.process_queue()

    assert note.injected == FAILS_A_RUN and stack.poller.failures == 1
    hook = stored_hook(stack, "team-deploys")
    secret = hook.secret.get_secret_value()
    assert hook.chat_id == TEAM
    to_owner = said_in(stack, OWNER)
    assert len(to_owner) == 1 and secret in to_owner[0]  # accepted by the first run only
    (in_group,) = said_in(stack, TEAM)
    assert "team-deploys" in in_group and secret not in in_group
    assert "sent to the owner privately" in in_group
    secret_kept_only_in_its_hook(stack, hook)
