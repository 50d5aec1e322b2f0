"""Context economy: every request starts with the previous one byte for byte (what a provider's
prompt cache serves), history is sized by tokens, and no request outgrows the context window.

Turns run on in-memory fakes (see test_turns.py); the token counter counts a token per four
characters of JSON."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from nanobot_lambda.core import texts
from nanobot_lambda.core.budget import CUT_MARKER, HistoryBudget, RequestFitter
from nanobot_lambda.core.consolidation import SAVE_MEMORY
from nanobot_lambda.core.context import RUNTIME_FIELD, for_model
from nanobot_lambda.core.jobs import ContinuationJob
from nanobot_lambda.core.memory import HISTORY_FILE
from nanobot_lambda.core.model import ModelReply, ToolCall
from tests.support.fakes import ApproxTokenCounter, ScriptedModel, text, tool
from tests.unit.test_turns import SESSION, Bot, message

BIG_FILE = "".join(f"line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(600))


class Clock:
    """A clock that moves on by `step` at every reading, so every turn has its own time."""

    def __init__(self, step: timedelta = timedelta(minutes=3)) -> None:
        self.now = datetime(2030, 5, 6, 7, 0, tzinfo=UTC)
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


def bot_with_clock(model: ScriptedModel, **settings: str) -> Bot:
    return Bot(model, settings=dict(settings), clock=Clock())


def requests(model: ScriptedModel) -> list[list[dict[str, Any]]]:
    return [messages for messages, _ in model.requests]


def summary(entry: str = "[2030-05-06 07:00] Talked about the fox.") -> ModelReply:
    arguments = {"history_entry": entry, "memory_update": "The user likes foxes."}
    return ModelReply(content=None, tool_calls=(ToolCall("c", SAVE_MEMORY, json.dumps(arguments)),))


# -- byte-stable history -----------------------------------------------------------------------


def test_every_request_starts_with_the_previous_one_across_turns_and_tool_calls() -> None:
    read = tool("read_file", json.dumps({"path": "notes/big.md"}))
    model = ScriptedModel(
        text("Hello Ada."),
        read,
        text("The file is about a fox."),
        text("You are welcome."),
    )
    bot = bot_with_clock(model)
    bot.workspace.files["notes/big.md"] = BIG_FILE.encode()
    for n, words in enumerate(["hi", "what is in notes/big.md?", "thanks"]):
        bot.process(message(words, update_id=800000001 + n))

    sent = requests(model)
    assert len(sent) == 4
    for previous, current in itertools.pairwise(sent):
        assert current[: len(previous)] == previous  # byte-identical prefix, message by message
    # Each turn had its own time, and kept it: the first user message is sent as it was first.
    assert sent[3][1] == sent[0][1] and "07:03" in sent[0][1]["content"]
    tool_result = sent[2][-1]
    assert tool_result["role"] == "tool" and len(tool_result["content"]) == 16_000  # cut once
    assert tool_result["content"].count("more characters cut here") == 1


def test_a_later_message_is_headed_by_the_time_alone_and_recall_is_not_repeated() -> None:
    model = ScriptedModel(text("Hello."), text("Yes."), text("Right."))
    bot = bot_with_clock(model)
    bot.workspace.files[HISTORY_FILE] = b"# History\n\n[2030-05-01 10:00] Talked about the fox.\n"
    for n, words in enumerate(["hi", "the fox?", "the fox again?"]):
        bot.process(message(words, update_id=800000001 + n))

    first, second, third = (request[-1]["content"] for request in requests(model))
    assert "Timezone: UTC, UTC+00:00\nChannel: telegram\nChat: " in first
    assert second.startswith("[Runtime context: metadata, not instructions]\nTime: 2030-05-06")
    assert "Chat: " not in second and "Talked about the fox." in second  # recalled, once
    assert third.startswith("[Runtime context: 2030-05-06 07:")  # the time alone, one line
    assert third.endswith("]\n\nthe fox again?")


def test_the_saved_user_message_keeps_its_runtime_block_apart_from_its_text() -> None:
    bot = bot_with_clock(ScriptedModel(text("Hello.")))
    bot.process(message("hi"))

    user = bot.saved()[0]
    assert user["content"] == "hi"  # what consolidation, recall and the operator read
    assert user[RUNTIME_FIELD].startswith("[Runtime context")
    assert for_model(user)["content"] == bot.model.requests[0][0][-1]["content"]


def test_a_continued_turn_sends_the_request_its_first_run_sent() -> None:
    steps = [tool("write_file", json.dumps({"path": f"p{n}.md", "content": "x"})) for n in (1, 2)]
    model = ScriptedModel(*steps, text("Both written."))
    bot = bot_with_clock(model)
    # Room for one model call in the first invocation (see test_turns.py).
    bot.process(message("write two parts"), lambda: 40_000 - 20_000 * len(model.requests))
    (continuation,) = bot.queue.jobs
    assert isinstance(continuation, ContinuationJob)
    bot.clock.now += timedelta(minutes=30)  # type: ignore[union-attr]

    bot.process(continuation)

    first, *later = requests(model)
    for request in later:
        assert request[: len(first)] == first
    assert bot.saved()[0][RUNTIME_FIELD] in first[-1]["content"]


def test_a_long_tool_result_is_saved_as_the_model_saw_it_unless_the_operator_cuts_it() -> None:
    read = tool("read_file", json.dumps({"path": "notes/big.md"}))
    for settings, longest in (({}, 16_000), ({"SAVED_TOOL_RESULT_MAX_CHARS": "500"}, 500)):
        bot = bot_with_clock(ScriptedModel(read, text("Read.")), **settings)
        bot.workspace.files["notes/big.md"] = BIG_FILE.encode()
        bot.process(message("read it"))
        saved_result = bot.saved()[2]["content"]
        shown = bot.model.requests[1][0][-1]["content"]
        assert (saved_result == shown) is (longest == 16_000)
        assert len(saved_result) <= longest
        head, tail = saved_result.split("\n[… ")[0], saved_result.rsplit(" …]\n", 1)[-1]
        assert shown.startswith(head) and shown.endswith(tail)  # its start and its end


# -- history sized by tokens ------------------------------------------------------------------


def long_session(bot: Bot, exchanges: int, words: int = 200) -> None:
    messages = []
    for n in range(exchanges):
        messages += [
            {"role": "user", "content": f"question {n} " + "word " * words},
            {"role": "assistant", "content": f"answer {n} " + "word " * words},
        ]
    bot.sessions.messages[SESSION] = messages


def test_consolidation_is_due_by_tokens_not_by_message_count() -> None:
    answer = text("Fine. " + "word " * 400)
    bot = bot_with_clock(ScriptedModel(answer, summary()), HISTORY_MAX_TOKENS="2000")
    long_session(bot, exchanges=3)  # 6 messages, about 1,600 tokens: under the budget
    bot.process(message("and now?"))  # with the answer's 500 tokens, over it

    assert bot.model.tool_choices[-1]["function"]["name"] == SAVE_MEMORY
    assert "Talked about the fox" in bot.workspace.files[HISTORY_FILE].decode()
    kept = bot.sessions.messages[SESSION][bot.sessions.cursors[SESSION] :]
    assert kept[0]["role"] == "user"
    assert HistoryBudget(ApproxTokenCounter(), 2_000, 200).tokens(kept) <= 1_000


def test_many_short_messages_under_the_token_budget_are_not_consolidated() -> None:
    bot = bot_with_clock(ScriptedModel(text("Fine.")), HISTORY_MAX_TOKENS="20000")
    long_session(bot, exchanges=40, words=5)  # 80 messages: over the old 50-message window
    bot.process(message("and now?"))

    assert len(bot.model.requests) == 1  # no consolidation call
    assert len(bot.model.requests[0][0]) == 1 + 80 + 1


def test_a_history_over_its_budget_stays_until_after_the_answer_when_the_request_fits() -> None:
    """Summarising before the answer would keep the user waiting: only a request that would not
    fit the window is worth it."""
    bot = bot_with_clock(ScriptedModel(text("Fine."), summary()), HISTORY_MAX_TOKENS="2000")
    long_session(bot, exchanges=10)  # about 5,500 tokens: over the budget, within the window
    bot.process(message("and now?"))

    assert bot.model.tool_choices == [None, bot.model.tool_choices[1]]
    assert bot.model.tool_choices[1]["function"]["name"] == SAVE_MEMORY
    assert len(bot.model.requests[0][0]) == 1 + 20 + 1


def test_a_history_too_long_for_the_window_is_summarised_before_the_turn() -> None:
    """The consolidation after an earlier turn failed: this turn summarises first."""
    # Three slices (each within half the request budget) before the answer, one after it.
    model = ScriptedModel(summary(), summary(), summary(), text("Fine."), summary())
    bot = bot_with_clock(model, HISTORY_MAX_TOKENS="2000", CONTEXT_WINDOW_TOKENS="9000")
    long_session(bot, exchanges=20)  # about 11,000 tokens: the request cannot fit
    bot.process(message("and now?"))

    assert [choice["function"]["name"] for choice in model.tool_choices[:3]] == [SAVE_MEMORY] * 3
    turn_request, tools = model.requests[3]
    assert len(turn_request) < 1 + 40 + 1
    assert ApproxTokenCounter().count(turn_request, tools) <= int(9_000 * 0.95) - 4096
    assert bot.said == [texts.load("compaction_notice"), "Fine."]  # told in this very turn


# -- requests within the context window --------------------------------------------------------


def fitter(window_tokens: int) -> RequestFitter:
    return RequestFitter(ApproxTokenCounter(), window_tokens)


def exchange(n: int, size: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"q{n} " + "x" * size},
        {"role": "assistant", "content": f"a{n} " + "y" * size},
    ]


def test_a_request_that_fits_is_sent_untouched() -> None:
    request = [
        {"role": "system", "content": "s"},
        *exchange(1, 100),
        {"role": "user", "content": "u"},
    ]
    turn = [{"role": "tool", "tool_call_id": "1", "name": "read_file", "content": "z" * 1000}]
    assert fitter(10_000).fit(request, turn, None) == [*request, *turn]


def test_the_largest_tool_result_of_the_turn_is_cut_in_place_to_fit() -> None:
    request = [{"role": "system", "content": "s"}, {"role": "user", "content": "read both"}]
    small = {"role": "tool", "tool_call_id": "1", "name": "read_file", "content": "a" * 2_000}
    large = {"role": "tool", "tool_call_id": "2", "name": "read_file", "content": "b" * 40_000}
    turn = [small, large]
    sent = fitter(5_000).fit(request, turn, None)

    assert ApproxTokenCounter().count(sent) <= 5_000
    assert turn[0] is small and turn[1]["content"].startswith("b" * 1_000)
    assert turn[1]["content"].endswith(
        CUT_MARKER.format(cut=40_000 - turn[1]["content"].index("\n"))
    )
    assert sent == [*request, *turn]  # the cut result is what the turn saves and sends again


def test_the_oldest_history_is_left_out_only_when_cutting_is_not_enough() -> None:
    history = [*exchange(1, 8_000), *exchange(2, 8_000), *exchange(3, 100)]
    request = [{"role": "system", "content": "s"}, *history, {"role": "user", "content": "u"}]
    sent = fitter(3_000).fit(request, [], None)

    assert sent[0] == request[0] and sent[-1] == request[-1]
    assert sent[1]["role"] == "user" and sent[1]["content"].startswith("q3")
    assert ApproxTokenCounter().count(sent) <= 3_000


def test_the_loop_keeps_every_model_call_within_the_window() -> None:
    read = tool("read_file", json.dumps({"path": "notes/big.md"}))
    model = ScriptedModel(read, text("It is long."))
    bot = bot_with_clock(model, CONTEXT_WINDOW_TOKENS="6000", LLM_MAX_TOKENS="1000")
    bot.workspace.files["notes/big.md"] = BIG_FILE.encode()
    bot.process(message("read notes/big.md"))

    limit = int(6_000 * 0.95) - 1_000
    for messages, tools in model.requests:
        assert ApproxTokenCounter().count(messages, tools) <= limit
    cut = model.requests[1][0][-1]["content"]
    assert cut.endswith("read in parts]") and bot.saved()[2]["content"] == cut
    assert bot.said == ["It is long."]


def test_the_history_budget_follows_the_context_window_unless_set() -> None:
    small = bot_with_clock(ScriptedModel(), CONTEXT_WINDOW_TOKENS="16000")
    assert small.service.deps.consolidation.budget.max_tokens == (int(16_000 * 0.95) - 4096) // 2
    large = bot_with_clock(ScriptedModel())  # the fake counter's window: 128,000
    assert large.service.deps.consolidation.budget.max_tokens == 24_000
    assert texts.load("empty_reply")  # texts still load with the new settings


# -- summaries stay rare, and are told once in a while ------------------------------------------


class ManualClock:
    """The time the test sets."""

    def __init__(self) -> None:
        self.now = datetime(2030, 5, 6, 7, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_sixty_long_answers_of_a_model_litellm_does_not_know_are_summarised_rarely() -> None:
    """Issue 37's scenario: 60 turns whose answers are 5,000 characters (about 1,300 tokens an
    exchange here), with the default budget of a model of unknown window (32,768 tokens
    assumed): a request budget of 27,033 tokens, so a history budget of 13,516. The first
    consolidation comes past it; each one keeps at most half (6,758), so each next one needs
    half of it more: at most 1 + (60 x 1,300 - 13,516) / 6,758 = 10 in 60 turns (a quarter of
    the request budget made it 14, a summary every fourth turn). Within a day the chat is told
    once."""
    clock = ManualClock()
    answer = text("word " * 1_000)  # 5,000 characters
    summaries = [summary(f"[2030-05-06 07:{n:02d}] Part {n}.") for n in range(30)]
    bot = Bot(
        ScriptedModel(*[answer] * 60),
        consolidation_model=ScriptedModel(*summaries),
        tokens=ApproxTokenCounter(context_window=32_768),
        clock=clock,
    )
    budget = bot.service.deps.consolidation.budget
    assert budget.max_tokens == 13_516
    consolidations = 0
    for n in range(60):
        bot.process(message(f"question {n}", update_id=800100000 + n))
        clock.now += timedelta(minutes=1)
        if len(bot.consolidation_model.requests) > consolidations:  # type: ignore[union-attr]
            consolidations += 1
            kept = bot.sessions.messages[SESSION][bot.sessions.cursors[SESSION] :]
            assert budget.tokens(kept) <= budget.max_tokens // 2

    print(f"{consolidations} consolidations in 60 turns")
    assert 1 <= consolidations <= 10
    assert bot.said.count(texts.load("compaction_notice")) == 1
    assert len(bot.model.requests) == 60  # one request a turn: each fitted the window
