"""Live replies on fakes: the draft stream (throttle, settle, 429, refusal), the outbox's use
of it, and which turns stream (private chats with STREAM_REPLIES on) and which do not."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.jobs import TelegramUpdateJob
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.model import CompletionRequest
from nanobot_lambda.functions.agent_turn.draft_stream import DraftStream, draft_id
from nanobot_lambda.functions.agent_turn.outbox import JournaledOutbox
from tests.conftest import telegram_update
from tests.support.fakes import MemoryTurnJournal, RecordingChannel, ScriptedModel, text, tool
from tests.unit.test_turns import Bot, message

CHAT = 111111111


class TimedChannel(RecordingChannel):
    """Records when each draft arrived; a draft can be held until a test releases it."""

    def __init__(self) -> None:
        super().__init__()
        self.draft_times: list[float] = []
        self.failures: list[ChannelError] = []  # raised by the next drafts, in order
        self.hold: threading.Event | None = None
        self.draft_started = threading.Event()

    def send_draft(
        self, chat_id: int, draft_id: int, part: str, *, thread_id: int | None = None
    ) -> None:
        self.draft_started.set()
        if self.hold is not None:
            self.hold.wait(5)
        self.draft_times.append(time.monotonic())
        if self.failures:
            raise self.failures.pop(0)
        super().send_draft(chat_id, draft_id, part, thread_id=thread_id)


def wait_for(condition: Any, seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def shown(channel: RecordingChannel) -> list[str]:
    return [part for _, _, part in channel.drafts]


# -- the stream ------------------------------------------------------------------------------


def test_drafts_are_throttled_and_the_latest_text_wins() -> None:
    channel = TimedChannel()
    stream = DraftStream(channel, CHAT, None, "update-1", interval=0.2)
    words = [f"word{n}" for n in range(40)]
    for count in range(1, len(words) + 1):
        stream.show(1, " ".join(words[:count]))
        time.sleep(0.01)  # 40 texts in about 0.4 s
    wait_for(lambda: shown(channel) and shown(channel)[-1].endswith("word39"))
    stream.close()

    assert 2 <= len(channel.drafts) <= 5  # not one draft per text
    gaps = [
        later - earlier
        for earlier, later in zip(channel.draft_times, channel.draft_times[1:], strict=False)
    ]
    assert all(gap >= 0.19 for gap in gaps)
    assert shown(channel)[0].startswith("word0")  # the first text goes out at once


def test_settle_waits_for_a_draft_being_sent_and_drops_the_one_not_yet_sent() -> None:
    channel = TimedChannel()
    channel.hold = threading.Event()
    stream = DraftStream(channel, CHAT, None, "update-1", interval=0.05)
    stream.show(1, "first")
    assert channel.draft_started.wait(2)
    stream.show(1, "first and second")  # pending while "first" is in flight

    settled = threading.Event()
    settler = threading.Thread(target=lambda: (stream.settle(), settled.set()))
    settler.start()
    time.sleep(0.1)
    assert not settled.is_set()  # the draft in flight must land before the message
    channel.hold.set()
    settler.join(2)
    assert settled.is_set()
    time.sleep(0.15)
    stream.close()

    assert shown(channel) == ["first"]  # "first and second" was dropped by settle


def test_a_rate_limited_draft_delays_the_next_by_what_telegram_asks() -> None:
    channel = TimedChannel()
    channel.failures = [
        ChannelError(
            "sendMessageDraft", 429, "Too Many Requests", kind="rate_limited", retry_after=0.4
        )
    ]
    stream = DraftStream(channel, CHAT, None, "update-1", interval=0.05)
    stream.show(1, "one")
    wait_for(lambda: len(channel.draft_times) == 1)
    for count in range(2, 30):
        stream.show(1, " ".join(["one"] * count))
        time.sleep(0.02)
    wait_for(lambda: len(channel.draft_times) >= 2)
    stream.close()

    assert channel.draft_times[1] - channel.draft_times[0] >= 0.39
    assert channel.drafts  # drafts went on after the wait


def test_a_chat_that_refuses_drafts_gets_no_more() -> None:
    channel = TimedChannel()
    channel.failures = [
        ChannelError("sendMessageDraft", 400, "Bad Request: TEXTDRAFT_PEER_INVALID", kind="refused")
    ]
    refused: list[bool] = []
    stream = DraftStream(
        channel, -100123, None, "update-1", interval=0.01, on_refused=lambda: refused.append(True)
    )
    stream.show(1, "one")
    wait_for(lambda: stream.refused)
    for count in range(2, 10):
        stream.show(1, " ".join(["one"] * count))
        time.sleep(0.02)
    stream.close()

    assert refused == [True]
    assert len(channel.draft_times) == 1 and channel.drafts == []


def test_a_text_shown_while_the_refused_draft_was_in_flight_is_not_sent() -> None:
    """The model goes on writing while Telegram refuses the first draft: the text it wrote
    meanwhile goes nowhere (e2e: test_drafts_refused_by_telegram_fall_back_to_typing_silently)."""
    channel = TimedChannel()
    channel.failures = [ChannelError("sendMessageDraft", 404, "Not Found", kind="refused")]
    channel.hold = threading.Event()
    stream = DraftStream(channel, CHAT, None, "update-1", interval=0.01)
    stream.show(1, "one")
    assert channel.draft_started.wait(5)
    stream.show(1, "one two")  # while the first draft is in flight
    channel.hold.set()
    wait_for(lambda: stream.refused)
    time.sleep(0.05)  # several intervals: time for a second draft, were one to go
    stream.close()

    assert len(channel.draft_times) == 1


def test_other_draft_failures_skip_that_draft_only() -> None:
    channel = TimedChannel()
    channel.failures = [ChannelError("sendMessageDraft", None, "ConnectionError")]
    stream = DraftStream(channel, CHAT, None, "update-1", interval=0.01)
    stream.show(1, "one")
    wait_for(lambda: len(channel.draft_times) == 1)
    stream.show(1, "one two")
    wait_for(lambda: len(channel.drafts) == 1)
    stream.close()

    assert shown(channel) == ["one two"] and not stream.refused


def test_a_long_answer_drafts_its_last_part_under_its_own_id() -> None:
    channel = TimedChannel()
    stream = DraftStream(channel, CHAT, None, "update-1", interval=0.01)
    long_text = "\n\n".join(" ".join([f"p{n}"] * 900) for n in range(1, 4))  # ~8 KB
    stream.show(1, long_text[:3000])
    wait_for(lambda: len(channel.drafts) == 1)
    stream.show(1, long_text)
    wait_for(lambda: len(channel.drafts) == 2)
    stream.close()

    (_, first_id, _), (_, last_id, last) = channel.drafts
    parts = channel.message_parts(long_text)
    assert len(parts) > 1 and last == parts[-1]
    assert first_id == draft_id("update-1", 1, 1) and last_id == draft_id("update-1", 1, len(parts))
    assert first_id != last_id


def test_draft_ids_are_non_zero_and_stable_per_turn_message_and_part() -> None:
    ids = {
        draft_id(f"update-{turn}", number, part)
        for turn in range(50)
        for number in (1, 2)
        for part in (1, 2)
    }
    assert 0 not in ids and len(ids) == 200
    assert all(0 < value < 2**31 for value in ids)
    assert draft_id("update-7", 2, 1) == draft_id("update-7", 2, 1)


# -- the outbox ------------------------------------------------------------------------------


def test_the_outbox_drafts_its_next_message_and_settles_before_sending() -> None:
    channel = TimedChannel()
    journal = MemoryTurnJournal()
    outbox = JournaledOutbox(channel, journal, "telegram:1", TurnProgress("update-1"))
    outbox.drafts = DraftStream(channel, CHAT, None, "update-1", interval=0.01)
    outbox.draft("Looking it up")
    wait_for(lambda: len(channel.drafts) == 1)
    outbox.send(CHAT, "Looking it up")
    outbox.draft("The answer")
    wait_for(lambda: len(channel.drafts) == 2)
    outbox.drafts.close()

    ids = [identifier for _, identifier, _ in channel.drafts]
    assert ids == [draft_id("update-1", 1, 1), draft_id("update-1", 2, 1)]
    assert channel.texts == ["Looking it up"]  # drafts are not messages


# -- which turns stream ----------------------------------------------------------------------


class ShownBeforeDone(ScriptedModel):
    """Streams each reply's text and answers only once a draft of it was shown (the stream
    drops a draft not yet shown when the message goes out: a real model takes longer)."""

    channel: RecordingChannel

    def complete(self, request: CompletionRequest) -> Any:
        reply = super().complete(replace(request, on_text=None))
        if request.on_text is not None and reply.content:
            drafts_before = len(self.channel.drafts)
            request.on_text(reply.content)
            wait_for(lambda: len(self.channel.drafts) > drafts_before)
        return reply


def test_a_private_chat_sees_its_answer_drafted_then_sent_once() -> None:
    model = ShownBeforeDone(
        tool("list_dir", '{"path": ""}', content="Let me look."), text("All **done**.")
    )
    bot = Bot(model)
    model.channel = bot.channel
    bot.process(message("tidy up"))

    assert shown(bot.channel) == ["Let me look.", "All <b>done</b>."]
    assert bot.said == ["Let me look.", "All done."]  # the progress message and the answer
    drafts_ids = [identifier for _, identifier, _ in bot.channel.drafts]
    assert drafts_ids == [draft_id("update-800000001", 1, 1), draft_id("update-800000001", 2, 1)]


def test_no_drafts_when_stream_replies_is_off() -> None:
    bot = Bot(ScriptedModel(text("Hello")), settings={"STREAM_REPLIES": "false"})
    bot.process(message("hi"))

    assert bot.said == ["Hello"] and bot.channel.drafts == []


def test_no_drafts_in_a_group() -> None:
    bot = Bot(
        ScriptedModel(text("Hello group")), settings={"ALLOW_FROM": "111111111,-1001234567890"}
    )
    bot.process(TelegramUpdateJob(update=telegram_update("group_mention")))

    assert bot.said == ["Hello group"] and bot.channel.drafts == []
    assert bot.channel.typing_in  # the group sees "typing…" instead


def test_a_refused_chat_keeps_typing_and_gets_its_answer() -> None:
    bot = Bot(ScriptedModel(text("Hello"), text("Again")))
    bot.channel.fail_drafts_with = ChannelError(
        "sendMessageDraft", 404, "Not Found", kind="refused"
    )
    # The first turn's model "writes" until its draft was tried (the worker thread races the
    # final send otherwise, which drops a draft not yet shown).
    tried = threading.Event()
    send_draft = bot.channel.send_draft

    def send_draft_and_tell(*args: Any, **kwargs: Any) -> Any:
        tried.set()
        return send_draft(*args, **kwargs)

    bot.channel.send_draft = send_draft_and_tell  # type: ignore[method-assign]
    complete = bot.model.complete

    def complete_after_the_draft(*args: Any, **kwargs: Any) -> Any:
        reply = complete(*args, **kwargs)
        assert tried.wait(5)
        return reply

    bot.model.complete = complete_after_the_draft  # type: ignore[method-assign]
    bot.process(message("hi"))
    bot.model.complete = complete  # type: ignore[method-assign]
    bot.channel.fail_drafts_with = None
    bot.process(message("hi again", update_id=800000002))

    assert bot.said == ["Hello", "Again"]
    assert bot.channel.drafts == []  # refused once: not tried again in this container
