"""A saved message fits one item of the session store (core/sessions.py, `within_item_limit`):
one at the limit is saved as it is, one past it as a shortened copy that fits, its longest
strings cut in the middle with a note, a tool call's arguments still JSON, names never cut; and
a turn whose `write_file` call is past it is saved (on in-memory fakes, see test_turns.py)."""

from __future__ import annotations

import json

import pytest

from nanobot_lambda.core.sessions import (
    SAVED_MESSAGE_MAX_BYTES,
    Message,
    cut_to_fit,
    within_item_limit,
)
from tests.support.fakes import ScriptedModel, text, tool
from tests.unit.test_turns import Bot, message


def size(message: Message) -> int:
    return len(json.dumps(message, ensure_ascii=False).encode())


def write_call(content: str) -> Message:
    arguments = json.dumps({"path": "notes/report.md", "content": content})
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "write_file", "arguments": arguments},
    }
    return {"role": "assistant", "content": "Writing it.", "tool_calls": [call]}


def padded_to(total: int) -> Message:
    """A write_file call whose JSON is `total` bytes."""
    message = write_call("")
    return write_call("x" * (total - size(message)))


def test_a_message_at_the_limit_is_saved_as_it_is() -> None:
    at_limit = padded_to(SAVED_MESSAGE_MAX_BYTES)
    assert size(at_limit) == SAVED_MESSAGE_MAX_BYTES
    assert within_item_limit(at_limit) is at_limit


def test_a_message_one_byte_past_the_limit_is_cut_to_fit_and_stays_json() -> None:
    past = padded_to(SAVED_MESSAGE_MAX_BYTES + 1)
    saved = within_item_limit(past)
    assert size(saved) <= SAVED_MESSAGE_MAX_BYTES
    assert size(saved) > SAVED_MESSAGE_MAX_BYTES - 200  # cut by about what was over, no more
    call = saved["tool_calls"][0]
    assert (call["id"], call["function"]["name"]) == ("call_1", "write_file")
    arguments = json.loads(call["function"]["arguments"])
    assert arguments["path"] == "notes/report.md"
    assert "chars not saved" in arguments["content"]
    assert saved["content"] == "Writing it."  # short strings are kept whole
    assert past["tool_calls"][0]["function"]["arguments"] != call["function"]["arguments"]
    assert within_item_limit(saved) is saved  # a saved copy is saved as it is


def test_escaped_and_wide_characters_count_as_the_store_counts_them() -> None:
    """Quotes and newlines take two bytes once escaped, twice over inside the arguments' JSON;
    "é" two in UTF-8: the cut is measured on the message as stored."""
    message = write_call('é"\n' * 150_000)
    saved = within_item_limit(message)
    assert size(message) > SAVED_MESSAGE_MAX_BYTES >= size(saved)
    assert json.loads(saved["tool_calls"][0]["function"]["arguments"])["content"].startswith('é"\n')


def test_several_large_strings_are_all_cut_and_arguments_that_are_not_json_are_cut_as_text() -> (
    None
):
    big = "y" * 300_000
    call = {
        "id": "c2",
        "type": "function",
        "function": {"name": "exec", "arguments": "not json " + big},
    }
    message = {"role": "assistant", "content": "z" * 300_000, "tool_calls": [call]}
    saved = within_item_limit(message)
    assert size(saved) <= SAVED_MESSAGE_MAX_BYTES
    assert "chars not saved" in saved["content"]
    assert saved["tool_calls"][0]["function"]["arguments"].startswith("not json y")
    assert message["content"] == "z" * 300_000  # the message itself is unchanged


def test_a_write_file_call_too_large_for_one_item_is_saved_shortened_and_the_file_whole() -> None:
    content = "line of the report\n" * 30_000  # 570 KB
    arguments = json.dumps({"path": "report.md", "content": content})
    bot = Bot(ScriptedModel(tool("write_file", arguments, content="Writing."), text("Written.")))
    bot.process(message("write the report"))

    assert bot.workspace.files["report.md"] == content.encode()  # the tool got it all
    assert bot.said == ["Writing.", "Written."]
    call = bot.saved()[1]["tool_calls"][0]
    saved_arguments = json.loads(call["function"]["arguments"])  # still JSON
    assert saved_arguments["path"] == "report.md" and call["function"]["name"] == "write_file"
    assert "chars not saved" in saved_arguments["content"]
    assert saved_arguments["content"].startswith("line of the report\n")
    for saved in bot.saved():
        assert len(json.dumps(saved, ensure_ascii=False).encode()) <= SAVED_MESSAGE_MAX_BYTES
    # What the model was sent in the turn was the whole call.
    step = bot.model.requests[1][0][-2]
    assert step["tool_calls"][0]["function"]["arguments"] == arguments


def test_messages_that_fit_together_are_kept_as_they_are() -> None:
    messages = [{"role": "user", "content": "short"}]
    assert cut_to_fit(messages, lambda cut: True) is messages


def test_messages_are_cut_together_to_the_longest_strings_that_fit() -> None:
    """A turn's checkpoint (adapters/aws/journal.py): its messages cut as one, to a limit."""
    messages: list[Message] = [
        {"role": "user", "content": "a" * 5_000},
        {"role": "tool", "tool_call_id": "call_1", "content": "b" * 20_000},
        write_call("c" * 30_000),
    ]

    def fits(cut: list[Message]) -> bool:
        return len(json.dumps(cut, ensure_ascii=False).encode()) <= 12_000

    fitted = cut_to_fit(messages, fits)
    assert fits(fitted) and not fits(cut_to_fit(messages, lambda cut: True))
    asked, result, call = fitted
    assert (asked["role"], result["tool_call_id"], call["tool_calls"][0]["id"]) == (
        "user",
        "call_1",
        "call_1",
    )
    assert "chars not saved" in result["content"] and "chars not saved" in asked["content"]
    written = json.loads(call["tool_calls"][0]["function"]["arguments"])  # still JSON
    assert written["path"] == "notes/report.md" and "chars not saved" in written["content"]


def test_messages_whose_names_alone_do_not_fit_are_refused() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        cut_to_fit([{"role": "user", "content": "x" * 100}], lambda cut: False)
