"""Live replies through the whole stack: the answer streamed by litellm from the scripted
model's server-sent events, shown in message drafts by the local Bot API, then sent once.

Private chats get drafts; groups, and chats where Telegram refuses drafts, keep "typing…";
a rate-limited draft slows the drafts only; a model stream that breaks never turns into a
message (the retried answer, or the apology, is what arrives).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time

import boto3

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.core import texts
from nanobot_lambda.operator.local.stack import LocalStack
from tests.conftest import telegram_update
from tests.support.faults import BotApiFaults
from tests.support.scripted_model import ScriptedModelServer

ADA = 111111111
GROUP = -1001234567890
WORDS = " ".join(f"w{n}" for n in range(1, 41))
ANSWER = f"Here is the plan: {WORDS} and this is **important** before {WORDS} done."
ANSWER_SHOWN = ANSWER.replace("**", "")


def ask(stack: LocalStack, name: str = "text_private", text: str = "plan my day") -> None:
    update = telegram_update(name)
    if name == "text_private":
        update["message"]["text"] = text
        update["update_id"] += len(stack.bot_api.messages)  # a new update per question
    response = stack.post_update(update)
    assert json.loads(response["body"])["status"] == "queued"
    stack.process_queue()
    assert stack.poller.failures == 0


def words(text: str) -> str:
    return " ".join(text.split())


def methods(stack: LocalStack) -> list[str]:
    return [method for method, _ in stack.bot_api.calls]


def saved(stack: LocalStack, key: str) -> list[dict[str, object]]:
    store = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
    return store.load(key, 100).messages


def test_a_private_answer_grows_in_drafts_then_arrives_as_one_message(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply(ANSWER, tokens_per_second=60)  # 90 words: about 1.5 s
    ask(stack)

    assert model_server.streamed == [True]
    drafts = stack.bot_api.drafts
    assert len(drafts) >= 3  # a 1.5 s answer, a draft every 0.3 s at most
    assert {draft.chat_id for draft in drafts} == {ADA}
    assert len({draft.draft_id for draft in drafts}) == 1 and drafts[0].draft_id != 0
    shown = [words(draft.plain_text) for draft in drafts]
    assert all(len(a) < len(b) for a, b in itertools.pairwise(shown))  # growing
    assert all(ANSWER_SHOWN.startswith(text) for text in shown)  # never a wrong word
    assert not any("*" in draft.plain_text for draft in drafts)  # no raw markup, ever
    assert any("<b>" in draft.text for draft in drafts)  # bold while still being written
    # The final answer: one message, the whole text.
    assert [message.plain_text for message in stack.bot_api.messages] == [ANSWER_SHOWN]
    assert saved(stack, f"telegram:{ADA}")[-1]["content"] == ANSWER


def test_a_group_keeps_typing_and_gets_no_drafts(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("The agenda: lunch at noon.", tokens_per_second=50)
    ask(stack, "group_mention")

    assert "sendMessageDraft" not in methods(stack)
    assert ("sendChatAction", GROUP) in {
        (method, params.get("chat_id")) for method, params in stack.bot_api.calls
    }
    assert [(m.chat_id, m.plain_text) for m in stack.bot_api.messages] == [
        (GROUP, "The agenda: lunch at noon.")
    ]


def test_drafts_refused_by_telegram_fall_back_to_typing_silently(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    faults = BotApiFaults(stack.bot_api)
    faults.fail("sendMessageDraft", 404, "Not Found: method not found", times=-1)
    model_server.reply(ANSWER, tokens_per_second=80).reply("Second answer.", tokens_per_second=80)
    ask(stack)
    ask(stack, text="and tomorrow?")

    assert methods(stack).count("sendMessageDraft") == 1  # refused once: no more tries
    assert [m.plain_text for m in stack.bot_api.messages] == [ANSWER_SHOWN, "Second answer."]
    assert stack.log_sink.errors == []


def test_a_rate_limited_draft_slows_the_drafts_not_the_answer(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    faults = BotApiFaults(stack.bot_api)
    faults.fail("sendMessageDraft", 429, "Too Many Requests: retry after 1", retry_after=1)
    model_server.reply(ANSWER, tokens_per_second=45)  # about 2 s
    ask(stack)

    draft_calls = [at for at, method, _ in stack.bot_api.timeline if method == "sendMessageDraft"]
    assert len(draft_calls) >= 2
    assert draft_calls[1] - draft_calls[0] >= 0.99  # Telegram's retry_after, honoured
    assert [m.plain_text for m in stack.bot_api.messages] == [ANSWER_SHOWN]
    assert methods(stack).count("sendMessage") == 1  # the answer was not held back or retried


def test_a_stream_that_breaks_midway_is_retried_and_only_the_whole_answer_is_sent(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    model_server.reply("Wrong start that breaks off " + WORDS, tokens_per_second=40, break_after=20)
    model_server.reply(ANSWER, tokens_per_second=80)
    ask(stack)

    assert model_server.streamed == [True, True]
    assert [m.plain_text for m in stack.bot_api.messages] == [ANSWER_SHOWN]
    # The broken attempt may have shown in a draft; the draft then showed the retried answer.
    assert ANSWER_SHOWN.startswith(words(stack.bot_api.drafts[-1].plain_text))
    assert saved(stack, f"telegram:{ADA}")[-1]["content"] == ANSWER


def test_a_stream_that_keeps_failing_ends_in_the_apology_and_saves_nothing(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    for _ in range(3):  # the call and LLM_NUM_RETRIES=2 retries, each failing midway
        model_server.reply("Half an answer " + WORDS, tokens_per_second=100, error_after=10)
    ask(stack)

    assert len(model_server.requests) == 3
    assert [m.plain_text for m in stack.bot_api.messages] == [texts.load("model_error")]
    assert not any(re.search(r"\bw\d+\b", m.plain_text) for m in stack.bot_api.messages)
    assert saved(stack, f"telegram:{ADA}") == []


def test_a_stop_sent_while_the_answer_streams_ends_it_there(
    stack: LocalStack, model_server: ScriptedModelServer
) -> None:
    """/stop reaches the webhook while the answer is being written (its flag at once, the
    command behind the turn in the queue): the stream is cut within a stop check, and the chat
    gets what was written so far, marked as stopped, instead of the whole answer."""
    long_answer = " ".join(f"word{n}" for n in range(1, 201))
    model_server.reply(long_answer, tokens_per_second=25)  # 200 words: 8 s unless stopped
    update = telegram_update("text_private")
    update["message"]["text"] = "tell me everything"
    assert json.loads(stack.post_update(update)["body"])["status"] == "queued"
    worker = threading.Thread(target=stack.process_queue)
    worker.start()
    deadline = time.monotonic() + 20
    while not stack.bot_api.drafts and time.monotonic() < deadline:
        time.sleep(0.05)  # the answer is being written
    stop = telegram_update("text_private")
    stop["update_id"] += 1
    stop["message"]["text"] = "/stop"
    assert json.loads(stack.post_update(stop)["body"])["status"] == "queued"
    worker.join(timeout=60)
    stack.process_queue()  # the /stop command itself, behind the turn

    final = stack.bot_api.messages[0].plain_text
    assert final.endswith(texts.load("stopped"))
    written = final.removesuffix(texts.load("stopped")).split()
    assert 0 < len(written) < 200 and written == long_answer.split()[: len(written)]
    assert len(stack.bot_api.messages) == 1  # the stopped turn told the user; /stop says no more
    assert saved(stack, f"telegram:{ADA}")[-1]["content"].endswith(texts.load("stopped"))
