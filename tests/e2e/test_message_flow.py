"""End to end: Telegram update → webhook → SQS FIFO → agent_turn → litellm → reply.

Everything is real HTTP: moto server as AWS (resources from infra/template.yaml), a scripted
OpenAI-compatible model, and the local Bot API that refuses what Telegram refuses.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import boto3

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.telegram.formatting import TELEGRAM_TEXT_LIMIT
from nanobot_lambda.adapters.telegram.html_check import parse_telegram_html, telegram_length
from nanobot_lambda.core import texts
from nanobot_lambda.operator.local.runtime import sqs_event
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import telegram_update
from tests.support.scripted_model import ScriptedModelServer


def receive_all(queue_url: str) -> list[dict[str, object]]:
    response = boto3.client("sqs").receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=10,
        AttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    )
    return list(response.get("Messages", []))


def session(stack: LocalStack, key: str) -> list[dict[str, object]]:
    store = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
    return store.load(key, 100).messages


def test_update_to_reply_through_every_component(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.call_tool(
        "write_file", {"path": "notes/groceries.md", "content": "- milk\n- eggs"}, content="Noting."
    )
    model_server.reply("Saved your list to `notes/groceries.md` — **2 items** & done.")
    update = telegram_update("text_private")

    # 1. The webhook accepts the update and answers 200 once it is queued.
    response = stack.post_update(update)
    assert response["statusCode"] == 200

    # 2. One FIFO message, grouped by chat, deduplicated by update id, carrying the update.
    (message,) = receive_all(stack.template.refs["TurnQueue"])
    assert message["Attributes"]["MessageGroupId"] == "telegram:111111111"  # type: ignore[index]
    assert message["Attributes"]["MessageDeduplicationId"] == "update-800000001"  # type: ignore[index]
    assert json.loads(str(message["Body"])) == {
        "version": 1,
        "kind": "telegram_update",
        "update": update,
    }

    # 3. agent_turn gets the SQS event Lambda would deliver, and reports no failure.
    queue_arn = stack.template.attributes[("TurnQueue", "Arn")]
    event = sqs_event([message], queue_arn, "us-east-1")  # type: ignore[list-item]
    result = stack.handlers["agent_turn"].handler(event, stack._context("agent_turn"))
    assert result == {"batchItemFailures": []}

    # 4. The model saw the system prompt, the tagged user message, then the tool result.
    first, second = model_server.requests
    assert first["messages"][0]["role"] == "system"
    assert first["messages"][-1]["content"].endswith("\n\nHi! What can you do?")
    assert "[Runtime context: metadata, not instructions]" in first["messages"][-1]["content"]
    assert second["messages"][-1]["role"] == "tool"
    assert second["messages"][-1]["content"] == "Wrote 13 characters to notes/groceries.md."
    assert model_server.unexpected == []

    # 5. The file is in the S3 workspace and the answer reached the chat as valid HTML.
    file = stack.workspace_of(111111111).read("notes/groceries.md")  # Ada's scope
    assert file is not None and file.text == "- milk\n- eggs"
    # The text the model wrote with its tool call went out as progress, then the answer.
    progress, reply = stack.bot_api.messages
    assert progress.plain_text == "Noting."
    assert reply.chat_id == 111111111
    assert reply.parse_mode == "HTML"
    assert reply.text == (
        "Saved your list to <code>notes/groceries.md</code> — <b>2 items</b> &amp; done."
    )
    methods = [method for method, _ in stack.bot_api.calls]
    assert methods[0] == "sendChatAction" and methods[-1] == "sendMessage"

    # 6. The turn is saved without the runtime-context block.
    saved = session(stack, "telegram:111111111")
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "assistant"]
    assert saved[0]["content"] == "Hi! What can you do?"
    assert saved[-1]["content"] == reply_markdown(model_server)


def reply_markdown(model_server: ScriptedModelServer) -> str:
    return "Saved your list to `notes/groceries.md` — **2 items** & done."


def test_conversation_continues_with_history(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Nice to meet you, Ada.").reply("Your name is Ada.")
    stack.post_update(stack.text_update("My name is Ada."))
    stack.process_queue()
    stack.post_update(stack.text_update("What is my name?"))
    stack.process_queue()
    second = model_server.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    # Sent again exactly as first sent, runtime block included (the provider's cached prefix).
    assert second[1] == model_server.requests[0]["messages"][1]
    assert second[1]["content"].endswith("\n\nMy name is Ada.")
    assert second[2] == {"role": "assistant", "content": "Nice to meet you, Ada."}
    assert [m.plain_text for m in stack.bot_api.messages] == [
        "Nice to meet you, Ada.",
        "Your name is Ada.",
    ]
    # The system prompt is byte-identical between the two turns (prefix caching).
    assert model_server.requests[0]["messages"][0] == second[0]


def test_long_answer_is_split_into_messages_telegram_accepts(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    paragraphs = [f"Paragraph {n}: " + "word & <thing> " * 40 for n in range(24)]
    code = "```python\n" + "\n".join(f"print({n})  # <{n}>" for n in range(150)) + "\n```"
    answer = "\n\n".join([*paragraphs, code, "**The end.**"])
    assert len(answer) > 3 * TELEGRAM_TEXT_LIMIT
    model_server.reply(answer)
    stack.post_update(stack.text_update("write a lot"))
    stack.process_queue()
    messages = stack.bot_api.messages
    assert len(messages) >= 3
    for message in messages:
        assert telegram_length(parse_telegram_html(message.text)) <= TELEGRAM_TEXT_LIMIT
    text = "".join(message.plain_text for message in messages)
    assert "Paragraph 0:" in text and "print(149)  # <149>" in text and "The end." in text


def test_model_outage_apologises_and_saves_nothing(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.fail(500, times=3)  # the first try and litellm's two retries
    stack.post_update(stack.text_update("hello?"))
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == [texts.load("model_error")]
    assert session(stack, f"telegram:{stack.user.id}") == []
    assert stack.poller.failures == 0  # handled: the user can simply send it again
    assert any("model call failed" in r.getMessage() for r in stack.log_sink.errors)


def test_refused_requests_never_reach_the_queue(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    update = stack.text_update("let me in")
    assert stack.post_update(update, secret="wrong")["statusCode"] == 401
    assert stack.post_update(update, secret="")["statusCode"] == 401
    stranger = telegram_update("user_without_username")
    assert json.loads(stack.post_update(stranger)["body"])["status"] == "refused"
    post = telegram_update("channel_post")
    assert json.loads(stack.post_update(post)["body"])["status"] == "ignored"
    reaction = telegram_update("message_reaction")  # recorded by the webhook, never queued
    assert json.loads(stack.post_update(reaction)["body"])["status"] == "recorded"
    assert receive_all(stack.template.refs["TurnQueue"]) == []
    assert model_server.requests == []


def test_telegram_redelivery_within_minutes_runs_one_turn(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Once.")
    update = stack.text_update("hello")
    assert stack.post_update(update)["statusCode"] == 200
    assert stack.post_update(update)["statusCode"] == 200  # Telegram retried
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == ["Once."]
    assert len(model_server.requests) == 1


def test_poison_message_goes_to_the_dead_letter_queue(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    sqs = boto3.client("sqs")
    sqs.send_message(
        QueueUrl=stack.template.refs["TurnQueue"],
        MessageBody='{"version": 1, "kind": "unknown"}',
        MessageGroupId="telegram:1",
        MessageDeduplicationId="poison-1",
    )
    stack.process_queue(max_seconds=60)
    assert stack.poller.failures == 3  # maxReceiveCount in the template
    dead = receive_all(stack.template.refs["TurnDeadLetterQueue"])
    assert [m["Body"] for m in dead] == ['{"version": 1, "kind": "unknown"}']
    assert model_server.requests == []


def test_heartbeat_without_tasks_costs_nothing(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    assert stack.fire_heartbeat() == {"status": "idle"}
    stack.process_queue()
    assert model_server.requests == []
    assert stack.bot_api.messages == []


def test_heartbeat_tasks_run_and_report_to_the_owner(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    stack.workspace.write("HEARTBEAT.md", b"# Heartbeat\n- [ ] Remind me to drink water\n")
    run = {"action": "run", "tasks": "Remind the user to drink water."}
    model_server.call_tool("heartbeat_decision", run).reply("Time to drink some water!")
    model_server.call_tool("heartbeat_decision", run).reply("HEARTBEAT_OK")
    assert stack.fire_heartbeat(datetime(2030, 1, 1, 9, 30, tzinfo=UTC)) == {"status": "queued"}
    stack.process_queue()
    decision = model_server.requests[0]
    assert decision["tool_choice"]["function"]["name"] == "heartbeat_decision"
    assert "- [ ] Remind me to drink water" in decision["messages"][-1]["content"]
    prompt = model_server.requests[1]["messages"][-1]["content"]
    assert "Remind the user to drink water." in prompt
    assert [(m.chat_id, m.plain_text) for m in stack.bot_api.messages] == [
        (stack.user.id, "Time to drink some water!")
    ]
    # Nothing to report: no message at all.
    stack.fire_heartbeat(datetime(2030, 1, 1, 10, 0, tzinfo=UTC))
    stack.process_queue()
    assert len(stack.bot_api.messages) == 1
    assert len(model_server.requests[3]["messages"]) == 2  # no history carried between runs


def test_heartbeat_fired_twice_for_one_time_runs_once(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """EventBridge Scheduler delivers at least once: the scheduled time deduplicates."""
    stack.workspace.write("HEARTBEAT.md", b"- [ ] Check on the plants\n")
    model_server.call_tool("heartbeat_decision", {"action": "run"}).reply("The plants need water.")
    when = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)
    assert stack.fire_heartbeat(when) == {"status": "queued"}
    assert stack.fire_heartbeat(when) == {"status": "queued"}
    stack.process_queue()
    assert len(model_server.requests) == 2  # one decision, one turn: not two of each
    assert [m.plain_text for m in stack.bot_api.messages] == ["The plants need water."]


def test_no_secret_in_logs(stack: LocalStack, model_server: ScriptedModelServer) -> None:
    model_server.call_tool("read_file", {"path": "AGENTS.md"}).reply("done")
    stack.post_update(stack.text_update("secret-free please"))
    stack.process_queue()
    logged = "\n".join(
        logging.Formatter().format(record) + str(record.__dict__)
        for record in stack.log_sink.records
    )
    for secret in (stack.bot_token, stack.secret_token, "sk-test-scripted", "secret-free please"):
        assert secret not in logged
    for request in model_server.requests:
        assert stack.bot_token not in json.dumps(request)
