"""Exactly once when a run of a turn dies and the next run says something else: the two ways an
answer used to be lost (issue: "a retried turn whose model answers differently loses the
answer"), on in-memory fakes (see test_turns.py). A crash is a `Crash`: a BaseException that no
handler of the product catches, as nothing runs after a process dies; the job is then delivered
again, as SQS does once its visibility times out.

What the user sees, in each case, is asserted whole; so is what the session holds: only what
the user was shown, in the order it was shown."""

from __future__ import annotations

import json

import pytest

from nanobot_lambda.core import texts
from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.model import ModelReply, ToolCall
from tests.support.fakes import (
    MemoryTurnJournal,
    MemoryWorkspace,
    ScriptedModel,
    outage,
    text,
    tool,
)
from tests.unit.test_turns import Bot, message


class Crash(BaseException):
    """The function died here (a time-out, out of memory, a lost container)."""


class DiesWhileWriting(MemoryWorkspace):
    """A workspace whose first write of `path` kills the function: a crash in a tool's S3 write."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._path = path
        self.crashed = False

    def write(
        self, path: str, data: bytes, *, if_match: str | None = None, if_none_match: bool = False
    ) -> str:
        if path == self._path and not self.crashed:
            self.crashed = True
            raise Crash
        return super().write(path, data, if_match=if_match, if_none_match=if_none_match)


class DiesRecordingAResult(MemoryTurnJournal):
    """A journal whose first record of a tool's result kills the function: the call had done
    what it does, and its result was lost."""

    def __init__(self) -> None:
        super().__init__()
        self.crashed = False

    def checkpoint(self, session_key: str, progress: TurnProgress) -> None:
        if progress.messages[-1:] and progress.messages[-1]["role"] == "tool" and not self.crashed:
            self.crashed = True
            raise Crash
        super().checkpoint(session_key, progress)


class CheckpointsTooLarge(MemoryTurnJournal):
    """A journal whose checkpoints are all skipped, as DynamoTurnJournal skips one over the item
    limit: a run then resumes from nothing and the model is asked again for every step."""

    def checkpoint(self, session_key: str, progress: TurnProgress) -> None:
        return None


def write_note(content: str = "Let me check…") -> object:
    return tool("write_file", json.dumps({"path": "notes/a.md", "content": "A"}), content=content)


def test_a_crash_during_a_tool_resumes_the_recorded_step_without_asking_the_model_for_it() -> None:
    """The step was recorded before its progress was shown and its tool ran: the next run runs
    the tool again and asks the model only for what comes after it."""
    workspace = DiesWhileWriting("notes/a.md")
    bot = Bot(ScriptedModel(write_note(), text("Written.")), workspace=workspace)
    with pytest.raises(Crash):
        bot.process(message("write a note"))
    bot.process(message("write a note"))  # delivered again

    assert bot.said == ["Let me check…", "Written."]
    assert len(bot.model.requests) == 2
    assert workspace.files["notes/a.md"] == b"A"
    saved = bot.saved()
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "assistant"]
    assert [saved[1]["content"], saved[3]["content"]] == ["Let me check…", "Written."]


def test_a_crash_during_a_tool_then_a_different_answer_reaches_the_user_once() -> None:
    """Path 1 of the issue, with nothing recorded of the step (its checkpoint was too large):
    the model asked again answers at once. Its answer is not taken for the progress text the
    first run sent under the same number: the user gets it, once, after that text, and the
    session holds both, as shown."""
    workspace = DiesWhileWriting("notes/a.md")
    bot = Bot(
        ScriptedModel(write_note(), text("It is 42.")),
        workspace=workspace,
        journal=CheckpointsTooLarge(),
    )
    with pytest.raises(Crash):
        bot.process(message("what is it?"))
    bot.process(message("what is it?"))

    assert bot.said == ["Let me check…", "It is 42."]
    saved = bot.saved()
    assert [(m["role"], m["content"]) for m in saved[1:]] == [
        ("assistant", "Let me check…"),
        ("assistant", "It is 42."),
    ]
    assert bot.journal.records == {}


def test_a_retry_that_says_the_same_progress_again_does_not_repeat_it() -> None:
    workspace = DiesWhileWriting("notes/a.md")
    bot = Bot(
        ScriptedModel(write_note(), write_note(), text("Written.")),
        workspace=workspace,
        journal=CheckpointsTooLarge(),
    )
    with pytest.raises(Crash):
        bot.process(message("write a note"))
    bot.process(message("write a note"))

    assert bot.said == ["Let me check…", "Written."]
    assert [m["role"] for m in bot.saved()] == ["user", "assistant", "tool", "assistant"]


def test_a_retry_with_other_progress_sends_both_and_saves_both_in_order() -> None:
    """What the user sees when a run's progress text differs from the first run's: both, in the
    order sent, then the answer; the session holds the first text where it was shown."""
    workspace = DiesWhileWriting("notes/a.md")
    bot = Bot(
        ScriptedModel(write_note(), write_note("Looking it up…"), text("Written.")),
        workspace=workspace,
        journal=CheckpointsTooLarge(),
    )
    with pytest.raises(Crash):
        bot.process(message("write a note"))
    bot.process(message("write a note"))

    assert bot.said == ["Let me check…", "Looking it up…", "Written."]
    saved = bot.saved()
    assert [(m["role"], m["content"]) for m in saved[1:] if m["role"] == "assistant"] == [
        ("assistant", "Let me check…"),
        ("assistant", "Looking it up…"),
        ("assistant", "Written."),
    ]
    assert saved[1].get("tool_calls") is None and saved[3]["role"] == "tool"  # results follow calls


def test_a_crash_after_the_apology_never_starts_a_second_answer() -> None:
    """Path 2 of the issue: every model attempt failed, the apology was sent, and the function
    died before the turn was closed. The job delivered again finds the turn ended: no model
    call, no second apology, nothing saved; a third delivery is skipped outright."""
    bot = Bot(ScriptedModel(outage(), text("never asked for")))
    bot.sessions.append_failures.append(Crash())
    with pytest.raises(Crash):
        bot.process(message("hi"))
    bot.process(message("hi"))
    bot.process(message("hi"))

    assert bot.said == [texts.load("model_error")]
    assert len(bot.model.requests) == 1
    assert bot.saved() == [] and bot.journal.records == {}
    assert "update-800000001" in bot.sessions.recent["telegram:111111111"]


def test_a_crash_before_the_apology_was_sent_sends_it_on_the_next_delivery() -> None:
    """The turn's end was recorded, then the function died before Telegram took the apology:
    the next delivery sends it (once) and closes the turn, without asking the model again."""
    bot = Bot(ScriptedModel(outage(), text("never asked for")))

    def dies(*_: object, **__: object) -> None:
        raise Crash

    send_part = bot.channel.send_part
    bot.channel.send_part = dies  # type: ignore[method-assign]
    with pytest.raises(Crash):
        bot.process(message("hi"))
    bot.channel.send_part = send_part  # type: ignore[method-assign]
    bot.process(message("hi"))

    assert bot.said == [texts.load("model_error")]
    assert len(bot.model.requests) == 1
    assert bot.saved() == []


def test_a_file_sent_by_an_earlier_run_is_not_sent_again_but_another_one_is() -> None:
    workspace = MemoryWorkspace()
    workspace.files["a.txt"] = b"first"
    workspace.files["b.txt"] = b"second"
    send = tool("send_file", json.dumps({"path": "a.txt"}))
    other = tool("send_file", json.dumps({"path": "b.txt"}))
    bot = Bot(
        ScriptedModel(send, text("Sent."), other, text("Sent the other one.")),
        workspace=workspace,
        journal=CheckpointsTooLarge(),
    )
    bot.channel.fail_on = "Sent."
    with pytest.raises(ChannelError):
        bot.process(message("send it"))
    bot.process(message("send it"))  # the model, asked again, sends another file

    assert [file.name for _, file, _ in bot.channel.files_sent] == ["a.txt", "b.txt"]
    assert bot.said == ["Sent the other one."]


def two_calls(
    first: tuple[str, dict[str, object]], second: tuple[str, dict[str, object]]
) -> ModelReply:
    calls = tuple(
        ToolCall(f"call_{n}", name, json.dumps(arguments))
        for n, (name, arguments) in enumerate((first, second), start=1)
    )
    return ModelReply(content="On it.", tool_calls=calls)


def test_a_schedule_made_before_the_crash_is_not_made_twice_when_its_step_runs_again() -> None:
    """The function died before the cron call's result was recorded: the call runs again; it
    names its job after the call, so the job and its schedule exist once."""
    reminder = {"action": "add", "message": "Drink water", "every_seconds": 3600}
    bot = Bot(
        ScriptedModel(
            two_calls(("cron", reminder), ("write_file", {"path": "notes/a.md", "content": "A"})),
            text("Scheduled."),
        ),
        journal=DiesRecordingAResult(),
    )
    with pytest.raises(Crash):
        bot.process(message("remind me hourly"))
    bot.process(message("remind me hourly"))

    assert len(bot.jobs.jobs) == 1
    assert bot.said == ["On it.", "Scheduled."]
    results = [m["content"] for m in bot.saved() if m["role"] == "tool"]
    assert results[0].startswith("Added reminder 'Drink water'")


def test_a_background_task_started_before_the_crash_keeps_its_id_when_its_step_runs_again() -> None:
    """The function died before the spawn call's result was recorded: the call runs again; it
    names the task after the call, so the queue's deduplication (and the task's own journal)
    make a second start of it nothing."""
    bot = Bot(
        ScriptedModel(
            two_calls(
                ("spawn", {"task": "count the files"}),
                ("write_file", {"path": "notes/a.md", "content": "A"}),
            ),
            text("Started."),
        ),
        journal=DiesRecordingAResult(),
    )
    with pytest.raises(Crash):
        bot.process(message("count them in the background"))
    bot.process(message("count them in the background"))

    started = [(job.subagent_id, dedup) for job, _, dedup in bot.queue.sent]
    assert len(started) == 2 and started[0] == started[1]  # SQS drops the second
