"""Fault injection, end to end: each fault is injected into the running local stack (moto server
as AWS, the scripted model server, the local Bot API) and every test asserts the same three
things: each reply is delivered exactly once, nothing accepted is lost (it ends in a reply, an
apology or the dead-letter queue), and the session holds only what the user saw.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import boto3

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.adapters.aws.workspace import WORKSPACE_PREFIX
from nanobot_lambda.core import texts
from nanobot_lambda.core.jobs import TelegramUpdateJob
from nanobot_lambda.operator.local.runtime import LocalLambdaContext
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import StackFactory
from tests.support.aws_requests import RequestCounter
from tests.support.faults import BotApiFaults, Pauses, text_is
from tests.support.scripted_model import ScriptedModelServer, Step


def sent_texts(stack: LocalStack) -> list[str]:
    return [message.plain_text for message in stack.bot_api.messages]


def session(stack: LocalStack) -> list[dict[str, Any]]:
    store = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
    return store.load(f"telegram:{stack.user.id}", 200).messages


def dead_letters(stack: LocalStack) -> list[dict[str, Any]]:
    response = boto3.client("sqs").receive_message(
        QueueUrl=stack.template.refs["TurnDeadLetterQueue"], MaxNumberOfMessages=10
    )
    return list(response.get("Messages", []))


def say(stack: LocalStack, text: str) -> dict[str, Any]:
    update = stack.text_update(text)
    assert stack.post_update(update)["statusCode"] == 200
    stack.process_queue(max_seconds=120)
    return update


def versions(stack: LocalStack, path: str) -> int:
    """How many times the file was written (the bucket is versioned)."""
    key = WORKSPACE_PREFIX + path
    listed = boto3.client("s3").list_object_versions(
        Bucket=stack.template.refs["WorkspaceBucket"], Prefix=key
    )
    return len([v for v in listed.get("Versions", []) if v["Key"] == key])


def test_a_turn_cut_short_after_a_send_resumes_without_resending(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """Telegram fails the final answer (5xx on every retry): the job fails and SQS re-delivers
    it. The retried turn resumes after its completed iteration: the tool is not run again, the
    progress message is not sent again, and the answer arrives once."""
    faults = BotApiFaults(stack.bot_api)
    faults.fail("sendMessage", 502, "Bad Gateway", times=4, when=text_is("All done."))
    model_server.call_tool("write_file", {"path": "notes/a.md", "content": "A"}, content="On it.")
    model_server.reply("All done.")  # first run: its delivery fails
    model_server.reply("All done.")  # the resumed run asks the model once more
    say(stack, "write a note")

    assert sent_texts(stack) == ["On it.", "All done."]
    assert stack.poller.failures == 1
    assert len(model_server.requests) == 3  # iteration 1 was not redone
    assert versions(stack, "notes/a.md") == 1  # the tool ran once
    saved = session(stack)
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "assistant"]
    assert saved[-1]["content"] == "All done."


def test_messages_sent_with_the_message_tool_are_not_repeated_by_a_retried_turn(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    faults = BotApiFaults(stack.bot_api)
    faults.fail("sendMessage", 500, times=4, when=text_is("Finished."))
    model_server.call_tool("message", {"content": "Step 1 done"})
    model_server.call_tool("message", {"content": "Step 2 done"})
    model_server.reply("Finished.")
    # The retry resumes after step 2, its last completed iteration: only the answer is asked for.
    model_server.reply("Finished.")
    say(stack, "do it in two steps")

    assert sent_texts(stack) == ["Step 1 done", "Step 2 done", "Finished."]
    assert stack.poller.failures == 1
    assert len(model_server.requests) == 4


def long_answer(parts: int, label: str = "Part") -> str:
    """An answer Telegram gets as `parts` messages (paragraphs of about 3,000 characters).
    Its words vary: litellm ends a stream that repeats one chunk 100 times (a looping model)."""
    words = " ".join(f"word{n % 10}" for n in range(520))
    return "\n\n".join(f"{label} {n}: {words}" for n in range(1, parts + 1))


def test_a_long_answer_cut_short_resumes_at_its_first_part_not_yet_accepted(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """Telegram accepts parts 1 and 2 of a three-part answer, then fails part 3 on every
    attempt of the client: the job fails before the turn is saved and SQS re-delivers it. The
    retry sends part 3 only, of the same answer, without asking the model again."""
    faults = BotApiFaults(stack.bot_api)
    faults.fail("sendMessage", 502, times=4, when=lambda p: p["text"].startswith("Part 3"))
    answer = long_answer(3)
    model_server.reply(answer)
    say(stack, "tell me everything")

    assert [text.split(":")[0] for text in sent_texts(stack)] == ["Part 1", "Part 2", "Part 3"]
    assert stack.poller.failures == 1
    assert len(model_server.requests) == 1  # the answer was recorded before its first part
    saved = session(stack)
    assert [m["role"] for m in saved] == ["user", "assistant"]
    assert saved[-1]["content"] == answer


def test_a_long_progress_message_cut_short_is_finished_not_repeated(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """The text the model writes beside a tool call goes out in two parts; the second fails
    until the job is retried. The step was recorded before its text was shown, so the retry
    does not ask the model for it again: it finishes the message the user began reading, once,
    runs the step's tool, then answers."""
    faults = BotApiFaults(stack.bot_api)
    faults.fail("sendMessage", 502, times=4, when=lambda p: p["text"].startswith("Step 2"))
    first = long_answer(2, "Step")
    model_server.call_tool("write_file", {"path": "notes/a.md", "content": "A"}, content=first)
    model_server.reply("Done.")
    say(stack, "plan, then write")

    assert [text.split(":")[0] for text in sent_texts(stack)] == ["Step 1", "Step 2", "Done."]
    assert stack.poller.failures == 1
    assert len(model_server.requests) == 2  # the step was not asked for again
    assert versions(stack, "notes/a.md") == 1
    saved = session(stack)
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "assistant"]
    assert saved[1]["content"] == first


class ModelPacedContext(LocalLambdaContext):
    """An invocation whose clock is the model: each model call uses 100 of its 300 seconds."""

    def __init__(self, model_server: ScriptedModelServer) -> None:
        super().__init__("agent_turn", timeout_seconds=300)
        self._server = model_server
        self._calls_before = len(model_server.requests)

    def get_remaining_time_in_millis(self) -> int:
        used = len(self._server.requests) - self._calls_before
        return max(0, 300_000 - 100_000 * used)


def test_a_task_longer_than_one_invocation_continues_and_completes(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """With 30 s kept in reserve, an invocation has room for three model calls: the turn
    records where it is, tells the user, and a queued continuation finishes it."""
    stack.poller.context = lambda: ModelPacedContext(model_server)
    for n in range(1, 6):
        model_server.call_tool("write_file", {"path": f"parts/{n}.md", "content": str(n)})
    model_server.reply("All five parts are written.")
    say(stack, "write five parts")

    assert sent_texts(stack) == [texts.load("still_working"), "All five parts are written."]
    assert len(model_server.requests) == 6  # no call repeated across the two invocations
    assert stack.poller.invocations == 2 and stack.poller.failures == 0
    for n in range(1, 6):
        assert versions(stack, f"parts/{n}.md") == 1
    saved = session(stack)
    assert [m["role"] for m in saved] == ["user", *["assistant", "tool"] * 5, "assistant"]
    # The second invocation saw the first one's tool results, not a fresh start.
    resumed = model_server.requests[3]["messages"]
    assert sum(1 for m in resumed if m["role"] == "tool") == 3


def test_a_poison_message_reaches_the_dead_letter_queue_and_the_user_is_told_once(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    faults = BotApiFaults(stack.bot_api)
    faults.fail("sendMessage", 500, times=-1, when=text_is("An answer Telegram refuses."))
    for _ in range(3):
        model_server.reply("An answer Telegram refuses.")
    model_server.reply("Yes, I'm here.")
    poison = say(stack, "first")
    say(stack, "are you there?")  # the chat is not blocked once the attempts are spent

    assert stack.poller.failures == 3  # MaxReceiveCount
    assert sent_texts(stack) == [texts.load("could_not_process"), "Yes, I'm here."]
    (dead,) = dead_letters(stack)
    assert TelegramUpdateJob.model_validate_json(dead["Body"]).update == poison
    assert [m["content"] for m in session(stack) if m["role"] == "user"] == ["are you there?"]


def test_the_fallback_model_answers_when_the_primary_is_down(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(LlmFallbackModels="openai/backup")
    model_server.fail(503, times=3)  # LLM_MODEL: the first try and litellm's two retries
    model_server.reply("Answered by the backup.")
    say(stack, "hello")
    assert sent_texts(stack) == ["Answered by the backup."]
    assert [r["model"] for r in model_server.requests] == ["scripted"] * 3 + ["backup"]


def test_every_model_down_gets_one_apology_and_a_clean_session(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    stack = stack_factory(LlmFallbackModels="openai/backup")
    model_server.fail(429, times=6)
    say(stack, "hello")
    assert sent_texts(stack) == [texts.load("model_error")]
    assert session(stack) == []
    assert stack.poller.failures == 0
    model_server.reply("Hello again.")  # the user sends the message again, and it works
    say(stack, "hello")
    assert sent_texts(stack)[-1] == "Hello again."
    assert [m["content"] for m in session(stack)] == ["hello", "Hello again."]


def test_telegram_429_is_retried_after_the_time_it_asks_for(
    stack: LocalStack, model_server: ScriptedModelServer, pauses: Pauses
) -> None:
    faults = BotApiFaults(stack.bot_api)
    fault = faults.fail("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
    model_server.reply("Sent after waiting.")
    say(stack, "hello")
    assert fault.injected == 1
    assert pauses.asked == [1.0]  # Telegram's retry_after
    assert sent_texts(stack) == ["Sent after waiting."]
    assert stack.poller.failures == 0


def test_telegram_5xx_is_retried_without_duplicating(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    faults = BotApiFaults(stack.bot_api)
    faults.fail("sendMessage", 502, "Bad Gateway", times=2)
    model_server.reply("Sent on the third try.")
    say(stack, "hello")
    assert sent_texts(stack) == ["Sent on the third try."]
    assert stack.poller.failures == 0


def test_an_answer_whose_connection_dropped_after_telegram_took_it_shows_at_most_twice(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """The second window of README's "Delivery guarantees": Telegram performed sendMessage and
    the connection dropped before its answer. The client sends it again rather than lose it:
    the user sees it twice, never not at all; the turn is saved once, as sent."""
    faults = BotApiFaults(stack.bot_api)
    fault = faults.drop("sendMessage", when=text_is("Sent once, perhaps twice."))
    model_server.reply("Sent once, perhaps twice.")
    say(stack, "hello")
    assert fault.injected == 1
    assert sent_texts(stack) == ["Sent once, perhaps twice."] * 2
    assert stack.poller.failures == 0
    assert [m["content"] for m in session(stack)] == ["hello", "Sent once, perhaps twice."]
    assert any("dropped after the request" in r.getMessage() for r in stack.log_sink.records)


def test_a_user_who_blocked_the_bot_ends_the_turn_cleanly(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    faults = BotApiFaults(stack.bot_api)
    faults.fail("sendMessage", 403, "Forbidden: bot was blocked by the user", times=-1)
    model_server.reply("Nobody will read this.")
    say(stack, "hello")
    assert stack.poller.failures == 0  # not retried: there is nobody to deliver to
    assert sent_texts(stack) == []
    assert dead_letters(stack) == []
    assert any("blocked the bot" in r.getMessage() for r in stack.log_sink.records)


def test_an_update_delivered_again_an_hour_later_gets_no_second_turn(
    stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    counter = RequestCounter()
    try:
        stack = stack_factory()
        model_server.reply("Only once.")
        update = say(stack, "hello")
        # Telegram re-sends it (its retry horizon is a day; SQS forgets dedup ids in 5 minutes).
        counter.reset()
        response = stack.post_update(update)
        assert json.loads(response["body"]) == {"ok": True, "status": "duplicate"}
        assert counter.operations("sqs") == {}  # not even offered to the queue
    finally:
        counter.close()
    # And should the same job reach the queue again anyway (a redelivery after a lost ack, a
    # replay from the dead-letter queue), agent_turn recognises the finished turn.
    boto3.client("sqs").send_message(
        QueueUrl=stack.template.refs["TurnQueue"],
        MessageBody=TelegramUpdateJob(update=update).model_dump_json(),
        MessageGroupId=f"telegram:{stack.user.id}",
        MessageDeduplicationId="redelivered-after-an-hour",
    )
    stack.process_queue()
    assert sent_texts(stack) == ["Only once."]
    assert len(model_server.requests) == 1
    assert [m["content"] for m in session(stack)] == ["hello", "Only once."]


def test_a_session_changed_during_the_turn_is_saved_without_answering_twice(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """Another writer appends to the session while the model thinks: the turn's save conflicts,
    is retried on the new header, and the job does not fail (a retry would answer again)."""
    written = threading.Event()  # the model answers once the other writer is done
    model_server.steps.append(Step(content="Saved anyway.", hold=written))
    store = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
    key = f"telegram:{stack.user.id}"

    def interfere() -> None:
        deadline = time.monotonic() + 30
        while not model_server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            store.append(store.load(key, 10), [{"role": "user", "content": "written meanwhile"}])
        finally:
            written.set()

    writer = threading.Thread(target=interfere)
    writer.start()
    say(stack, "hello")
    writer.join(30)
    assert sent_texts(stack) == ["Saved anyway."]
    assert stack.poller.failures == 0
    assert [m["content"] for m in session(stack)] == ["written meanwhile", "hello", "Saved anyway."]
