"""agent_turn's turns, one job kind at a time, on in-memory fakes of every port (no moto, no
HTTP): what reaches the chat, what is saved, what is recorded, and what a retry does."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from nanobot_lambda.core import texts
from nanobot_lambda.core.albums import AlbumWait
from nanobot_lambda.core.bot_commands import help_text
from nanobot_lambda.core.cron import CronJob
from nanobot_lambda.core.errors import ChannelError
from nanobot_lambda.core.heartbeat import DECISION
from nanobot_lambda.core.jobs import (
    AnnouncementJob,
    AnyJob,
    ContinuationJob,
    CronTaskJob,
    HeartbeatJob,
    SubagentJob,
    TelegramUpdateJob,
)
from nanobot_lambda.core.model import ModelReply
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.core.usage_counts import Tally
from nanobot_lambda.functions.agent_turn.dispatch import Dispatcher
from nanobot_lambda.functions.agent_turn.queued import QueuedJob
from nanobot_lambda.functions.agent_turn.turn_deps import Services, Stores, TurnPorts
from nanobot_lambda.settings import AgentSettings
from tests.conftest import telegram_update
from tests.support.fakes import (
    ApproxTokenCounter,
    MemoryAlbumBook,
    MemoryApprovalBook,
    MemoryApprovalDeadlines,
    MemoryFeedbackBook,
    MemoryHookStore,
    MemoryJobStore,
    MemoryPairingStore,
    MemoryQueue,
    MemorySchedules,
    MemorySessionStore,
    MemoryStopFlags,
    MemoryTurnJournal,
    MemoryUsageStore,
    MemoryWorkspace,
    RecordingChannel,
    RecordingMetrics,
    RecordingSpeaker,
    ScriptedModel,
    outage,
    text,
    tool,
    wall_clock_ms,
)
from tests.support.settings import AGENT_ENV

QUIET_MS = AlbumWait().quiet_ms

ADA = 111111111
SESSION = f"telegram:{ADA}"
HINTS = {"SEND_PROGRESS": "true", "SEND_TOOL_HINTS": "true"}


@dataclass
class Bot:
    """A Dispatcher on fakes, and the fakes, for the assertions."""

    model: ScriptedModel
    channel: RecordingChannel = field(default_factory=RecordingChannel)
    workspace: MemoryWorkspace = field(default_factory=MemoryWorkspace)  # the owner's
    scopes: dict[str, MemoryWorkspace] = field(default_factory=dict)  # the others', by name
    journal: MemoryTurnJournal = field(default_factory=MemoryTurnJournal)
    jobs: MemoryJobStore = field(default_factory=MemoryJobStore)
    usage: MemoryUsageStore = field(default_factory=MemoryUsageStore)
    stop_flags: MemoryStopFlags = field(default_factory=MemoryStopFlags)
    # Parts recorded as if the album had gone quiet already: a lead takes them at once (the
    # wait itself is core/albums.py's, tested with its own clock in test_albums.py).
    albums: MemoryAlbumBook = field(
        default_factory=lambda: MemoryAlbumBook(now_ms=lambda: wall_clock_ms() - QUIET_MS)
    )
    pairing: MemoryPairingStore = field(default_factory=MemoryPairingStore)
    hooks: MemoryHookStore = field(default_factory=MemoryHookStore)
    feedback: MemoryFeedbackBook = field(default_factory=MemoryFeedbackBook)
    queue: MemoryQueue = field(default_factory=MemoryQueue)
    approvals: MemoryApprovalBook = field(default_factory=MemoryApprovalBook)
    deadlines: MemoryApprovalDeadlines = field(default_factory=MemoryApprovalDeadlines)
    metrics: RecordingMetrics = field(default_factory=RecordingMetrics)
    tokens: ApproxTokenCounter = field(default_factory=ApproxTokenCounter)
    heartbeat_model: ScriptedModel | None = None  # HEARTBEAT_MODEL
    consolidation_model: ScriptedModel | None = None  # CONSOLIDATION_MODEL
    speaker: RecordingSpeaker | None = None  # TTS_MODEL
    sandbox: Any = None  # the code sandbox (SANDBOX_FUNCTION): the exec tool
    models: Any = None  # the models /model and /think choose from (core/model_choice.py)
    images: Any = None  # IMAGE_MODEL: the generate_image tool
    embedder: Any = None  # EMBEDDING_MODEL: hybrid recall (with `recall_indexes`)
    recall_indexes: Any = None
    clock: Callable[[], datetime] | None = None  # default: the real time
    settings: dict[str, str] = field(default_factory=dict)
    environ: dict[str, str] = field(default_factory=dict)  # agent_turn's (skills' requires.env)

    def scope_workspace(self, scope: Scope) -> MemoryWorkspace:
        """A person's or a group's own workspace (core/scopes.py), kept for the assertions."""
        return self.scopes.setdefault(scope.name, MemoryWorkspace())

    def any_workspace(self, scope: Scope) -> MemoryWorkspace:
        """Any scope's workspace, the owner's included (/memory)."""
        return self.workspace if scope.is_owner else self.scope_workspace(scope)

    def __post_init__(self) -> None:
        self.sessions = MemorySessionStore(self.journal)
        ports = TurnPorts(
            Stores(
                workspace=self.workspace,
                scope_workspace=self.scope_workspace,
                versioned_workspace=self.any_workspace,
                sessions=self.sessions,
                journal=self.journal,
                jobs=self.jobs,
                usage=self.usage,
                stop_flags=self.stop_flags,
                albums=self.albums,
                pairing=self.pairing,
                hooks=self.hooks,
                feedback=self.feedback,
                approvals=self.approvals,
                recall_indexes=self.recall_indexes,
            ),
            Services(
                channel=self.channel,
                media=self.channel,
                model=self.model,
                tokens=self.tokens,
                queue=self.queue,
                schedules=MemorySchedules(),
                deadlines=self.deadlines,
                heartbeat_model=self.heartbeat_model,
                consolidation_model=self.consolidation_model,
                speaker=self.speaker,
                sandbox=self.sandbox,
                models=self.models,
                images=self.images,
                embedder=self.embedder,
            ),
            self.metrics,
        )
        environment = {**AGENT_ENV, "ALLOW_FROM": str(ADA), **self.settings}
        settings = AgentSettings.from_env(environment)
        if self.clock is None:
            self.service = Dispatcher(settings, ports, environ=self.environ)
        else:
            self.service = Dispatcher(settings, ports, environ=self.environ, clock=self.clock)

    def process(self, job: AnyJob, remaining_ms: Callable[[], int] | None = None) -> None:
        self.service.process(QueuedJob.of(job), remaining_ms)

    def give_up(self, job: AnyJob) -> None:
        """The job failed for the last time (sqs_records.py)."""
        self.service.give_up(QueuedJob.of(job))

    @property
    def said(self) -> list[str]:
        return self.channel.texts

    def saved(self, key: str = SESSION) -> list[dict[str, Any]]:
        return self.sessions.messages.get(key, [])


def message(text_: str, update_id: int = 800000001) -> TelegramUpdateJob:
    update = telegram_update("text_private")
    update["update_id"] = update_id
    update["message"]["text"] = text_
    return TelegramUpdateJob(update=update)


def long_answer(parts: int) -> str:
    return "\n\n".join(f"Part {n}: " + " ".join(["word"] * 600) for n in range(1, parts + 1))


# -- a Telegram message ------------------------------------------------------------------------


def test_a_message_is_answered_then_saved_with_its_usage() -> None:
    bot = Bot(ScriptedModel(text("Hello Ada!")))
    bot.process(message("hi"))

    assert bot.said == ["Hello Ada!"]
    assert [(m["role"], m["content"]) for m in bot.saved()] == [
        ("user", "hi"),
        ("assistant", "Hello Ada!"),
    ]
    assert bot.sessions.recent[SESSION] == ("update-800000001",)
    assert bot.journal.records == {}  # nothing left open
    assert bot.usage.tallies[(ADA, "total")].turns == 1
    assert bot.jobs.private_chat == ADA  # where the heartbeat reports
    (request,) = bot.model.requests
    assert request[0][-1]["content"].endswith("hi")


def test_a_message_delivered_again_after_its_turn_is_skipped() -> None:
    bot = Bot(ScriptedModel(text("Once.")))
    bot.process(message("hi"))
    bot.process(message("hi"))  # SQS delivered it again

    assert bot.said == ["Once."]
    assert len(bot.saved()) == 2
    assert bot.metrics.total("DuplicatesSuppressed") == 1


def test_tool_calls_run_and_the_progress_is_shown() -> None:
    bot = Bot(
        ScriptedModel(
            tool(
                "write_file", json.dumps({"path": "notes/a.md", "content": "A"}), content="On it."
            ),
            text("Written."),
        )
    )
    bot.process(message("write a note"))

    assert bot.said == ["On it.", "Written."]
    assert bot.workspace.files["notes/a.md"] == b"A"
    assert [m["role"] for m in bot.saved()] == ["user", "assistant", "tool", "assistant"]


def test_a_model_outage_gets_one_apology_and_saves_nothing() -> None:
    bot = Bot(ScriptedModel(outage()))
    bot.process(message("hi"))

    assert bot.said == [texts.load("model_error")]
    assert bot.saved() == []
    assert bot.journal.records == {}


def test_a_user_who_blocked_the_bot_ends_the_turn_without_saving() -> None:
    bot = Bot(ScriptedModel(text("You will not see this.")))
    bot.channel.fail_with = ChannelError(
        "sendMessage", 403, "Forbidden: bot was blocked", kind="blocked"
    )
    bot.process(message("hi"))

    assert bot.said == []
    assert bot.saved() == []


def test_a_failed_send_fails_the_job_and_its_retry_does_not_repeat_anything() -> None:
    bot = Bot(
        ScriptedModel(
            tool("write_file", json.dumps({"path": "a.md", "content": "A"}), content="On it."),
            text("Done."),
            text("Done."),  # the retry asks for the answer once more (it was never sent)
        )
    )
    bot.channel.fail_on = "Done."
    with pytest.raises(ChannelError):
        bot.process(message("go"))
    bot.process(message("go"))  # SQS's retry

    assert bot.said == ["On it.", "Done."]
    assert len(bot.model.requests) == 3  # the tool iteration was not redone
    assert [m["role"] for m in bot.saved()] == ["user", "assistant", "tool", "assistant"]


def test_a_long_answer_cut_short_is_finished_by_the_retry_without_a_new_model_call() -> None:
    answer = long_answer(3)
    bot = Bot(ScriptedModel(text(answer)))
    bot.channel.fail_on = "Part 3"
    with pytest.raises(ChannelError):
        bot.process(message("tell me everything"))
    bot.process(message("tell me everything"))

    assert [said.split(":")[0] for said in bot.said] == ["Part 1", "Part 2", "Part 3"]
    assert len(bot.model.requests) == 1
    assert bot.saved()[-1]["content"] == answer


def test_a_stopped_turn_keeps_what_was_done_and_clears_the_flag() -> None:
    bot = Bot(ScriptedModel(tool("list_dir", json.dumps({"path": ""})), text("never asked for")))
    bot.stop_flags.request(SESSION, at_ms=1)
    bot.process(message("list everything"))

    assert bot.said == [texts.load("stopped")]
    assert len(bot.model.requests) == 1
    assert bot.stop_flags.flags == {}
    assert [m["role"] for m in bot.saved()] == ["user", "assistant", "tool", "assistant"]


def test_a_turn_out_of_time_continues_in_another_invocation() -> None:
    steps = [tool("write_file", json.dumps({"path": f"p{n}.md", "content": "x"})) for n in (1, 2)]
    model = ScriptedModel(*steps, text("Both written."))
    bot = Bot(model)
    # 40 s left and 30 kept in reserve, each model call taking 20: room for one call only.
    bot.process(message("write two parts"), lambda: 40_000 - 20_000 * len(model.requests))

    (continuation,) = bot.queue.jobs
    assert isinstance(continuation, ContinuationJob) and continuation.part == 2
    assert bot.said == [texts.load("still_working")]
    assert bot.saved() == []

    bot.process(continuation)  # the next invocation, with all the time it needs

    assert bot.said == [texts.load("still_working"), "Both written."]
    assert len(bot.model.requests) == 3  # no model call repeated
    assert [m["role"] for m in bot.saved()] == [
        "user",
        *["assistant", "tool"] * 2,
        "assistant",
    ]


# -- commands ----------------------------------------------------------------------------------


def test_help_is_answered_without_the_model_and_saves_nothing() -> None:
    bot = Bot(ScriptedModel())
    bot.process(message("/help"))

    assert bot.said == [help_text()]
    assert bot.model.requests == [] and bot.saved() == []


def test_stop_with_nothing_running_says_so_and_clears_the_flag() -> None:
    bot = Bot(ScriptedModel())
    bot.stop_flags.request(SESSION, at_ms=1)  # raised by the webhook
    bot.process(message("/stop"))

    assert bot.said == [texts.load("nothing_to_stop")]
    assert bot.stop_flags.flags == {}


def test_usage_reports_the_chats_figures() -> None:
    bot = Bot(ScriptedModel(ModelReply("Hi!")))
    bot.process(message("hi"))
    bot.process(message("/usage", update_id=800000002))

    assert "turns" in bot.said[-1].lower()
    assert bot.usage.tallies[(ADA, "total")] == Tally(turns=1, model_calls=1, unpriced_calls=1)


# -- scheduled turns ---------------------------------------------------------------------------


def cron_task(fired_at: str = "2026-11-23T09:00:00Z") -> CronTaskJob:
    return CronTaskJob(
        job_id="ab12cd34",
        chat_id=ADA,
        name="notes",
        message="Summarise my notes",
        fired_at=fired_at,
    )


def test_a_scheduled_task_runs_in_its_own_session_and_reports_to_its_chat() -> None:
    bot = Bot(ScriptedModel(text("Nothing new in your notes.")))
    bot.process(cron_task())

    assert bot.said == ["Nothing new in your notes."]
    assert bot.channel.sent[0][0] == ADA
    assert [m["role"] for m in bot.saved("cron:ab12cd34")] == ["user", "assistant"]
    assert bot.saved() == []  # not the chat's session
    bot.process(cron_task())  # a repeated delivery of the same firing
    assert len(bot.said) == 1


def quiet_task(fired_at: str = "2026-11-23T09:00:00Z") -> CronTaskJob:
    return cron_task(fired_at).model_copy(update={"quiet": True})


def with_job_record(bot: Bot, quiet: bool = True) -> Bot:
    """The task's record, as the cron tool stored it (its runs are recorded there)."""
    bot.jobs.put(
        CronJob(
            job_id="ab12cd34",
            chat_id=ADA,
            kind="task",
            message="Summarise my notes",
            name="notes",
            expression="rate(1 hour)",
            timezone="UTC",
            description="every hour",
            one_time=False,
            created_at="2026-11-22T08:00:00+00:00",
            quiet=quiet,
        )
    )
    return bot


def last_status(bot: Bot) -> str | None:
    record = bot.jobs.get(ADA, "ab12cd34")
    assert record is not None
    return record.last_status


def test_a_quiet_task_with_nothing_to_report_sends_nothing_and_saves_its_turn() -> None:
    listed = tool("list_dir", json.dumps({"path": ""}), content="Let me look at the notes.")
    bot = with_job_record(Bot(ScriptedModel(listed, text("HEARTBEAT_OK")), settings=HINTS))
    bot.process(quiet_task())

    assert bot.said == []  # no report, and no progress text or tool hint either
    prompt = bot.model.requests[0][0][-1]["content"]
    assert "answer exactly HEARTBEAT_OK" in prompt and "earlier runs" in prompt
    saved = bot.saved("cron:ab12cd34")
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "assistant"]
    assert saved[-1]["content"] == "HEARTBEAT_OK"
    assert last_status(bot) == "done: nothing to report"
    assert bot.journal.records == {}  # the save closed the turn's record

    bot.process(quiet_task())  # a repeated delivery of the same firing
    assert bot.said == [] and len(bot.model.requests) == 2
    assert len(bot.saved("cron:ab12cd34")) == 4  # not saved twice


def test_a_quiet_task_reports_news_once_comparing_with_its_earlier_runs() -> None:
    bot = with_job_record(
        Bot(ScriptedModel(text("HEARTBEAT_OK"), text("A new note: buy tea.")), settings=HINTS)
    )
    bot.process(quiet_task("2026-11-23T09:00:00Z"))
    bot.process(quiet_task("2026-11-23T10:00:00Z"))
    bot.process(quiet_task("2026-11-23T10:00:00Z"))  # delivered again

    assert bot.said == ["A new note: buy tea."]
    second_request = bot.model.requests[1][0]
    assert {"role": "assistant", "content": "HEARTBEAT_OK"} in second_request  # the earlier run
    assert [m["role"] for m in bot.saved("cron:ab12cd34")] == ["user", "assistant"] * 2
    assert last_status(bot) == "done"


def test_a_quiet_tasks_retry_after_its_save_neither_sends_nor_saves_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bot = with_job_record(Bot(ScriptedModel(text("HEARTBEAT_OK"))))
    record_run = bot.jobs.record_run

    def crash(*_: Any, **__: Any) -> None:
        raise RuntimeError("the process died")

    monkeypatch.setattr(bot.jobs, "record_run", crash)
    with pytest.raises(RuntimeError):
        bot.process(quiet_task())  # saved, then the invocation died
    monkeypatch.setattr(bot.jobs, "record_run", record_run)
    bot.process(quiet_task())  # SQS's retry

    assert bot.said == [] and len(bot.model.requests) == 1
    assert len(bot.saved("cron:ab12cd34")) == 2
    assert bot.metrics.total("DuplicatesSuppressed") == 1


def test_a_quiet_task_out_of_time_stays_quiet_in_its_continuation() -> None:
    steps = [tool("write_file", json.dumps({"path": f"p{n}.md", "content": "x"})) for n in (1, 2)]
    model = ScriptedModel(*steps, text("HEARTBEAT_OK"))
    bot = with_job_record(Bot(model))
    bot.process(quiet_task(), lambda: 40_000 - 20_000 * len(model.requests))

    (continuation,) = bot.queue.jobs
    assert isinstance(continuation, ContinuationJob) and continuation.job == quiet_task()
    bot.process(continuation)

    assert bot.said == [] and len(model.requests) == 3
    assert len(bot.saved("cron:ab12cd34")) == 6
    assert last_status(bot) == "done: nothing to report"


def test_a_task_that_is_not_quiet_reports_every_run_as_before() -> None:
    tools_then_text = [
        tool("list_dir", json.dumps({"path": ""}), content="Looking."),
        text("Nothing new."),
    ]
    bot = with_job_record(Bot(ScriptedModel(*tools_then_text, text("Still nothing new."))), False)
    bot.process(cron_task("2026-11-23T09:00:00Z"))
    bot.process(cron_task("2026-11-23T10:00:00Z"))

    assert bot.said == ["Looking.", "Nothing new.", "Still nothing new."]
    assert "HEARTBEAT_OK" not in bot.model.requests[0][0][-1]["content"]
    assert last_status(bot) == "done"


def test_a_task_that_is_not_quiet_sends_even_the_marker() -> None:
    # Its prompt never asks for the marker; its answer is sent whatever it says, as before.
    bot = Bot(ScriptedModel(text("HEARTBEAT_OK")))
    bot.process(cron_task())

    assert bot.said == ["HEARTBEAT_OK"]


def heartbeat_job() -> HeartbeatJob:
    return HeartbeatJob(chat_id=ADA, tasks="- [ ] water the plants", fired_at="2026-11-23T09:30Z")


def decide(action: str) -> ModelReply:
    return tool(DECISION, json.dumps({"action": action}))


def test_a_heartbeat_with_nothing_due_costs_one_small_call_and_says_nothing() -> None:
    bot = Bot(ScriptedModel(decide("skip")))
    bot.process(heartbeat_job())

    assert bot.said == [] and len(bot.model.requests) == 1


def test_a_heartbeat_runs_due_tasks_and_reports_only_news_once() -> None:
    bot = Bot(ScriptedModel(decide("run"), text("The plants need water today.")))
    bot.process(heartbeat_job())
    bot.process(heartbeat_job())  # delivered again

    assert bot.said == ["The plants need water today."]
    assert len(bot.model.requests) == 2
    (record,) = bot.journal.records.values()
    assert record.done


def test_heartbeat_model_does_the_heartbeat_and_nothing_else() -> None:
    cheap = ScriptedModel(decide("run"), text("The plants need water today."))
    bot = Bot(ScriptedModel(text("Hello Ada.")), heartbeat_model=cheap)
    bot.process(heartbeat_job())
    bot.process(message("hi"))

    assert bot.said == ["The plants need water today.", "Hello Ada."]
    assert len(cheap.requests) == 2 and len(bot.model.requests) == 1
    assert bot.usage.tallies[(ADA, "total")].model_calls == 3  # the cheaper model's too


def test_consolidation_model_summarises_and_the_main_model_answers() -> None:
    summary = tool(
        "save_memory",
        json.dumps({"history_entry": "[2030-01-01 10:00] Chat.", "memory_update": "- Ada"}),
    )
    cheap = ScriptedModel(summary)
    bot = Bot(
        ScriptedModel(text("One."), text("Two.")),
        consolidation_model=cheap,
        settings={"HISTORY_WINDOW": "2"},
    )
    bot.process(message("first"))
    bot.process(message("second", update_id=800000002))

    assert bot.said == ["One.", "Two."]
    assert len(cheap.requests) == 1 and cheap.tool_choices[0]["function"]["name"] == "save_memory"
    assert len(bot.model.requests) == 2


def test_a_heartbeat_with_nothing_to_report_stays_silent() -> None:
    bot = Bot(ScriptedModel(decide("run"), text("HEARTBEAT_OK")))
    bot.process(heartbeat_job())

    assert bot.said == []


# -- background tasks --------------------------------------------------------------------------


def subagent_job() -> SubagentJob:
    return SubagentJob(subagent_id="s1", chat_id=ADA, label="notes", task="Read my notes")


def test_a_background_task_hands_its_result_to_its_chat() -> None:
    bot = Bot(ScriptedModel(text("Three notes, all about tea.")))
    bot.jobs.start_subagent(ADA, "s1", now=0)
    bot.process(subagent_job())

    assert bot.said == []  # it tells the chat's agent, not the user
    ((announcement, group, dedup_id),) = bot.queue.sent
    assert isinstance(announcement, AnnouncementJob)
    assert (announcement.result, announcement.succeeded) == ("Three notes, all about tea.", True)
    assert (group, dedup_id) == (SESSION, "announce-s1")
    assert bot.jobs.running_subagents(ADA, now=0) == 0
    offered = {tool_["function"]["name"] for tool_ in bot.model.requests[0][1]}
    assert "read_file" in offered and not offered & {"message", "spawn", "cron"}


def test_the_announcement_is_told_by_the_chats_agent_and_saved_in_its_session() -> None:
    bot = Bot(ScriptedModel(text("Your notes are all about tea.")))
    announcement = AnnouncementJob(
        subagent_id="s1", chat_id=ADA, label="notes", succeeded=True, result="Three notes, tea."
    )
    bot.process(announcement)

    assert bot.said == ["Your notes are all about tea."]
    assert "Three notes, tea." in bot.saved()[0]["content"]


# -- giving up ---------------------------------------------------------------------------------


def test_giving_up_tells_the_chat_once() -> None:
    bot = Bot(ScriptedModel())
    bot.give_up(ContinuationJob(job=message("hi"), part=2))

    assert bot.said == [texts.load("could_not_process")]
