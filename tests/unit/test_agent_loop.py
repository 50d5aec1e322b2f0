"""The tool-calling loop with a scripted in-memory model."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from typing import Any

import pytest

from nanobot_lambda.core import texts
from nanobot_lambda.core.agent import (
    AgentLoop,
    Resume,
    TurnOutcome,
    for_saving,
    tool_hint,
    truncate,
)
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.model import CompletionRequest, ModelReply, ToolCall, Usage
from nanobot_lambda.core.reasoning import strip_thinking
from nanobot_lambda.core.tools import ToolRegistry
from nanobot_lambda.tools.context import JobContext
from nanobot_lambda.tools.files import file_tools
from nanobot_lambda.tools.web import UNTRUSTED_NOTE, frame
from tests.support.fakes import MemoryWorkspace, ScriptedModel, outage, text, tool
from tests.support.hostile_names import HOSTILE_NAMES, seen
from tests.support.job_context import job_context

REQUEST = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]


class Loop:
    """An agent loop with the file tools, and the job's context it runs them with."""

    def __init__(self, loop: AgentLoop[JobContext], workspace: MemoryWorkspace) -> None:
        self.loop = loop
        self.ctx = job_context(workspace)

    def run(self, messages: list[dict[str, Any]], **options: Any) -> TurnOutcome:
        return self.loop.run(self.ctx, messages, **options)


def loop(model: ScriptedModel, workspace: MemoryWorkspace | None = None, limit: int = 5) -> Loop:
    return Loop(AgentLoop(model, ToolRegistry(file_tools()), limit), workspace or MemoryWorkspace())


def test_plain_answer() -> None:
    model = ScriptedModel(text("Hello!"))
    outcome = loop(model).run(REQUEST)
    assert outcome.reply == "Hello!"
    assert outcome.new_messages == [{"role": "assistant", "content": "Hello!"}]
    assert outcome.iterations == 1
    ((messages, tools),) = model.requests
    assert messages == REQUEST
    assert {t["function"]["name"] for t in tools} == {
        "read_file",
        "write_file",
        "edit_file",
        "list_dir",
        "grep",
    }


def test_tool_call_then_answer() -> None:
    workspace = MemoryWorkspace()
    model = ScriptedModel(
        tool("write_file", '{"path": "notes/todo.md", "content": "milk"}', content="Saving it."),
        text("Saved."),
    )
    outcome = loop(model, workspace).run(REQUEST)
    assert workspace.files["notes/todo.md"] == b"milk"
    assert outcome.reply == "Saved."
    assert outcome.tool_calls == 1
    assistant, result, final = outcome.new_messages
    assert assistant["content"] == "Saving it."
    assert assistant["tool_calls"][0]["function"]["name"] == "write_file"
    assert result == {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "write_file",
        "content": "Wrote 4 characters to notes/todo.md.",
    }
    # The second request carries the tool call and its result, in order.
    second_request = model.requests[1][0]
    assert second_request[-2:] == [assistant, result]
    assert final == {"role": "assistant", "content": "Saved."}


def test_tool_calls_decided_by_presence_not_finish_reason() -> None:
    """A reply with tool calls and text runs the tools; the text is not the final answer."""
    model = ScriptedModel(tool("list_dir", "{}", content="Let me look."), text("Empty."))
    outcome = loop(model).run(REQUEST)
    assert outcome.reply == "Empty."


def test_bad_tool_calls_come_back_as_errors_and_the_loop_continues() -> None:
    model = ScriptedModel(
        tool("shell", '{"cmd": "ls"}', call_id="a"),
        tool("read_file", "{not json", call_id="b"),
        tool("read_file", '{"path": "../etc/passwd"}', call_id="c"),
        text("I could not do it."),
    )
    outcome = loop(model).run(REQUEST)
    results = [m["content"] for m in outcome.new_messages if m["role"] == "tool"]
    assert results[0].startswith("Error: there is no tool named 'shell'")
    assert results[1].startswith("Error: the arguments are not valid JSON")
    assert results[2].startswith("Error: '..' is not allowed")
    assert outcome.reply == "I could not do it."


def test_iteration_limit_gives_a_clear_message_and_keeps_partial_work() -> None:
    workspace = MemoryWorkspace()
    model = ScriptedModel(
        *(
            tool("write_file", f'{{"path": "f{n}.md", "content": "x"}}', call_id=f"c{n}")
            for n in range(3)
        )
    )
    outcome = loop(model, workspace, limit=3).run(REQUEST)
    assert outcome.hit_iteration_limit
    assert outcome.reply == texts.render("iteration_limit", limit=3)
    assert "3 tool steps" in outcome.reply
    assert set(workspace.files) == {"f0.md", "f1.md", "f2.md"}
    assert outcome.new_messages[-1] == {"role": "assistant", "content": outcome.reply}
    assert len(model.requests) == 3


def test_model_error_propagates_and_produces_no_messages() -> None:
    model = ScriptedModel(tool("list_dir", "{}"), outage())
    with pytest.raises(ModelError):
        loop(model).run(REQUEST)


def test_think_blocks_are_never_shown() -> None:
    model = ScriptedModel(text("<think>The user wants X.</think>Here is X."))
    assert loop(model).run(REQUEST).reply == "Here is X."
    assert strip_thinking("<THINK>unclosed reasoning") == ""


def test_empty_answer_gets_a_fallback_text() -> None:
    outcome = loop(ScriptedModel(ModelReply(content=None))).run(REQUEST)
    assert outcome.reply == texts.load("empty_reply")


def test_usage_is_summed_over_the_turn() -> None:
    model = ScriptedModel(
        ModelReply(None, (ToolCall("1", "list_dir", "{}"),), Usage(100, 10, 50, 0.001)),
        ModelReply("done", (), Usage(150, 5, 100, None)),
    )
    usage = loop(model).run(REQUEST).usage
    assert usage == Usage(250, 15, 150, 0.001)


def test_long_tool_results_are_shortened_for_saving_only() -> None:
    content = "start " + "y" * 50_000 + " the end"
    message = {"role": "tool", "tool_call_id": "1", "name": "read_file", "content": content}
    saved = for_saving(message, max_tool_chars=2_000)
    assert len(saved["content"]) <= 2_000
    assert saved["content"].startswith("start yyy") and saved["content"].endswith("yyy the end")
    assert "chars not saved" in saved["content"]
    assert saved["tool_call_id"] == "1"
    assert message["content"] == content
    assert for_saving({"role": "assistant", "content": "z" * 50_000})["content"] == "z" * 50_000


def test_long_tool_results_are_cut_for_the_model_too() -> None:
    workspace = MemoryWorkspace({"big.md": "line\n" * 10_000})
    model = ScriptedModel(tool("read_file", '{"path": "big.md"}'), text("ok"))
    AgentLoop(model, ToolRegistry(file_tools()), 5, tool_result_max_chars=1_000).run(
        job_context(workspace), REQUEST
    )
    seen = model.requests[1][0][-1]["content"]
    assert len(seen) <= 1_000
    assert "more characters cut" in seen
    assert seen.startswith("line\nline") and seen.endswith("use offset=2001 to read more]")
    assert truncate("short", 10) == "short"


def test_a_framed_result_cut_by_the_loop_keeps_its_frame_whole() -> None:
    """A tool whose result is over the cap (an MCP server's, a web page's): the loop cuts its
    middle, so the frame still opens at the start and closes at the end."""
    framed = frame("page text " * 5_000, url="https://example.com/")
    for limit in (500, 1_000, 16_000):
        cut = truncate(framed, limit)
        assert len(cut) <= limit
        assert cut.startswith(UNTRUSTED_NOTE + "\n<untrusted_web_content url=")
        assert cut.endswith("page text\n</untrusted_web_content>")
        assert cut.count("<untrusted_web_content") == cut.count("</untrusted_web_content>") == 1


def test_reasoning_is_passed_back_within_the_turn_and_not_saved() -> None:
    block = {"type": "thinking", "thinking": "list first", "signature": "sig"}
    model = ScriptedModel(
        ModelReply(
            None,
            (ToolCall("1", "list_dir", "{}"),),
            reasoning_content="r",
            thinking_blocks=(block,),
        ),
        text("done"),
    )
    outcome = loop(model).run(REQUEST)
    sent_back = model.requests[1][0][-2]
    assert sent_back["reasoning_content"] == "r"
    assert sent_back["thinking_blocks"] == [block]
    saved = for_saving(outcome.new_messages[0])
    assert "reasoning_content" not in saved and "thinking_blocks" not in saved
    assert saved["tool_calls"][0]["function"]["name"] == "list_dir"


def test_progress_text_and_tool_hints() -> None:
    progress: list[str] = []
    model = ScriptedModel(
        tool("grep", '{"pattern": "lisbon trip details", "path": "memory"}', content="Looking."),
        tool("list_dir", "{}"),
        text("Found it."),
    )
    AgentLoop(model, ToolRegistry(file_tools()), 5, tool_hints=True).run(
        job_context(), REQUEST, on_progress=progress.append
    )
    shown = [seen(hint).text for hint in progress]
    assert shown == ['Looking.\n🔎 grep("lisbon trip details")', '📁 list_dir("")']
    silent: list[str] = []
    loop(ScriptedModel(tool("list_dir", "{}"), text("ok"))).run(REQUEST, on_progress=silent.append)
    assert silent == []  # no text and hints off: nothing to show
    assert tool_hint(ToolCall("1", "web_fetch", '{"url": "' + "u" * 60 + '"}')).endswith('…")')


@pytest.mark.parametrize(("name", "shown"), HOSTILE_NAMES)
def test_a_tool_hint_shows_its_argument_as_text(name: str, shown: str) -> None:
    """The argument may be a file name or words from the chat: no link, mention or markup."""
    hint = seen(tool_hint(ToolCall("1", "read_file", json.dumps({"path": name}))))
    cut = shown if len(shown) <= 40 else shown[:39].rstrip() + "…"
    assert hint.text == f'📖 read_file("{cut}")' and hint.entities == []


def test_stop_is_checked_between_iterations() -> None:
    workspace = MemoryWorkspace()
    checks: list[int] = []

    def stop_after_first() -> bool:
        checks.append(1)
        return True

    model = ScriptedModel(tool("write_file", '{"path": "a.md", "content": "x"}'), text("never"))
    outcome = loop(model, workspace).run(REQUEST, should_stop=stop_after_first)
    assert outcome.stopped and outcome.reply == texts.load("stopped")
    assert workspace.files == {"a.md": b"x"}  # the work before the stop is kept
    assert len(model.requests) == 1 and checks == [1]
    # A one-step answer never even asks.
    loop(ScriptedModel(text("hi"))).run(REQUEST, should_stop=stop_after_first)
    assert checks == [1]


class WordByWordModel(ScriptedModel):
    """Streams its answer a word at a time, as a provider does."""

    def complete(self, request: CompletionRequest) -> ModelReply:
        reply = super().complete(replace(request, on_text=None))
        words = (reply.content or "").split(" ")
        for n in range(1, len(words) + 1):
            if request.on_text is not None:
                request.on_text(" ".join(words[:n]))
        return reply


def test_a_stop_while_the_answer_is_written_ends_it_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """/stop during a one-step answer, as Telegram's user sees it stream: the answer ends with
    what was written so far, marked as stopped (the stop flag is read now and then, not per
    word: here every time)."""
    monkeypatch.setattr("nanobot_lambda.core.agent.STOP_CHECK_SECONDS", 0)
    shown: list[str] = []
    model = WordByWordModel(text("<think>plan</think>one two three four five six"))
    outcome = loop(model).run(REQUEST, should_stop=lambda: len(shown) >= 3, on_text=shown.append)
    assert outcome.stopped
    assert outcome.reply == f"one two three\n\n{texts.load('stopped')}"
    assert shown[-1] == "one two three"  # nothing written after the stop is shown
    assert outcome.new_messages[-1] == {"role": "assistant", "content": outcome.reply}


def test_a_stream_nobody_stops_is_answered_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("nanobot_lambda.core.agent.STOP_CHECK_SECONDS", 0)
    asked: list[int] = []
    model = WordByWordModel(text("one two three"))
    outcome = loop(model).run(
        REQUEST, should_stop=lambda: bool(asked.append(1)), on_text=lambda _: None
    )
    assert not outcome.stopped and outcome.reply == "one two three" and asked


class SlowWorkspace(MemoryWorkspace):
    """Reads take a while and record how many overlap. With `until_overlap`, a read waits (up
    to 5 s) until another read is under way too: concurrent reads always overlap then, however
    slowly their threads start."""

    def __init__(self, files: dict[str, str | bytes], *, until_overlap: bool = False) -> None:
        super().__init__(files)
        self.active = 0
        self.most_active = 0
        self.lock = threading.Lock()
        self.overlapped = threading.Event()
        self.patience = 5.0 if until_overlap else 0.05

    def read(self, path: str, *, fresh: bool = False):  # type: ignore[no-untyped-def]
        with self.lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
            if self.active > 1:
                self.overlapped.set()
        self.overlapped.wait(self.patience)
        with self.lock:
            self.active -= 1
        return super().read(path, fresh=fresh)


def calls(*pairs: tuple[str, str]) -> ModelReply:
    return ModelReply(
        None, tuple(ToolCall(f"c{n}", name, args) for n, (name, args) in enumerate(pairs))
    )


def test_independent_tool_calls_run_concurrently_and_keep_their_order() -> None:
    workspace = SlowWorkspace({f"f{n}.md": f"content {n}" for n in range(4)}, until_overlap=True)
    reads = [("read_file", f'{{"path": "f{n}.md"}}') for n in range(4)]
    model = ScriptedModel(calls(*reads), text("ok"))
    outcome = loop(model, workspace).run(REQUEST)
    assert workspace.most_active > 1
    results = [m["content"] for m in outcome.new_messages if m["role"] == "tool"]
    assert results == [f"content {n}" for n in range(4)]
    assert [m["tool_call_id"] for m in outcome.new_messages if m["role"] == "tool"] == [
        "c0",
        "c1",
        "c2",
        "c3",
    ]


def test_calls_touching_the_same_file_run_in_order() -> None:
    workspace = SlowWorkspace({"a.md": "old"})
    model = ScriptedModel(
        calls(
            ("write_file", '{"path": "a.md", "content": "new"}'),
            ("read_file", '{"path": "a.md"}'),
        ),
        text("ok"),
    )
    outcome = loop(model, workspace).run(REQUEST)
    assert workspace.most_active == 1
    assert outcome.new_messages[2]["content"] == "new"  # the read saw the write


def test_an_answer_explaining_think_tags_reaches_the_user_whole() -> None:
    answer = (
        "Models like DeepSeek-R1 wrap their reasoning in <think> tags before they answer.\n\n"
        "Close one with `</think>`; everything after it is the reply you see:\n\n"
        "```\n<think>plan</think>\nHello!\n```"
    )
    outcome = loop(ScriptedModel(text(answer))).run(REQUEST)
    assert outcome.reply == answer
    assert outcome.new_messages == [{"role": "assistant", "content": answer}]


def test_a_turn_resumed_after_its_answer_was_recorded_does_not_ask_the_model_again() -> None:
    recorded = [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": "found"},
        {"role": "assistant", "content": "The long answer."},
    ]
    model = ScriptedModel()  # any call fails the test
    outcome = loop(model).run(REQUEST, resume=Resume(recorded, iterations=2))
    assert outcome.reply == "The long answer."
    assert outcome.new_messages == recorded  # the answer is not appended twice
    assert model.requests == []


def test_a_turn_resumed_after_tool_results_asks_the_model_for_the_next_step() -> None:
    recorded = [
        {"role": "assistant", "content": "Looking.", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": "found"},
    ]
    outcome = loop(ScriptedModel(text("Found it."))).run(REQUEST, resume=Resume(recorded, 1))
    assert outcome.reply == "Found it."
    assert outcome.iterations == 2


def test_a_step_is_recorded_before_its_progress_shows_and_its_tools_run() -> None:
    workspace = MemoryWorkspace()
    model = ScriptedModel(
        tool("write_file", '{"path": "a.md", "content": "A"}', content="Writing."), text("Done.")
    )
    events: list[str] = []
    loop(model, workspace).run(
        REQUEST,
        on_step=lambda outcome: events.append(f"step {len(outcome.new_messages)}"),
        on_progress=lambda text: events.append(f"shown {text} ({'a.md' in workspace.files})"),
        on_iteration=lambda outcome: events.append(f"done {len(outcome.new_messages)}"),
    )
    assert events == ["step 1", "shown Writing. (False)", "done 2"]


def test_a_step_recorded_without_its_results_runs_its_tools_not_the_model() -> None:
    """A run died while the step's tools ran: the next run runs them again, shows the step's
    text again (the outbox knows whether the user saw it), and asks the model what comes next."""
    workspace = MemoryWorkspace()
    recorded = [
        {
            "role": "assistant",
            "content": "Writing.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "write_file",
                        "arguments": '{"path": "a.md", "content": "A"}',
                    },
                }
            ],
        }
    ]
    model = ScriptedModel(text("Done."))
    shown: list[str] = []
    outcome = loop(model, workspace).run(
        REQUEST, resume=Resume(recorded, 1), on_progress=shown.append
    )
    assert workspace.files["a.md"] == b"A"
    assert shown == ["Writing."]
    assert [m["role"] for m in outcome.new_messages] == ["assistant", "tool", "assistant"]
    ((request, _),) = model.requests
    assert request[-2]["tool_calls"] and request[-1]["role"] == "tool"


def test_a_step_whose_tools_would_outlast_the_invocation_is_continued_not_cut_off() -> None:
    """Too little time for the step's tools: nothing of it is shown or run here; the turn is
    suspended with the step recorded, and the invocation that resumes it runs it."""
    workspace = MemoryWorkspace()
    model = ScriptedModel(
        tool("write_file", '{"path": "a.md", "content": "A"}', content="Writing."), text("Done.")
    )
    shown: list[str] = []
    outcome = loop(model, workspace).run(
        REQUEST, on_progress=shown.append, time_left=lambda: 60, tool_time_left=lambda: 3
    )
    assert outcome.suspended and shown == [] and "a.md" not in workspace.files
    resumed = loop(model, workspace).run(
        REQUEST,
        resume=Resume(outcome.new_messages, outcome.iterations),
        on_progress=shown.append,
        tool_time_left=lambda: 60,
    )
    assert shown == ["Writing."] and workspace.files["a.md"] == b"A"
    assert resumed.reply == "Done." and len(model.requests) == 2
