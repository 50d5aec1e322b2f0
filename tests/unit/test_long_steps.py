"""A step whose tool calls cannot all run in one invocation: the loop runs the calls that fit
(concurrently where they are independent), records each result as it comes, and leaves the rest
to the next invocation, which runs at least one of them whatever it may take. So "draw three
variations" is drawn, each call run once, for every tool that states how long it may take
(`Tool.seconds_needed`): generate_image, exec, web_fetch and remote MCP tools.

Each turn here runs on a fake clock, invocation by invocation, as agent_turn runs it: the time a
model call may take is what is left minus the reserve, the time for tools what is left minus the
margin, and each invocation resumes from what the last one recorded (a copy, as the journal
keeps it). The last tests run whole turns on the fakes of test_turns.py (journal, outbox,
continuations)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from nanobot_lambda.adapters.web.netguard import Fetched
from nanobot_lambda.core import texts
from nanobot_lambda.core.agent import MAX_PARALLEL_TOOLS, AgentLoop, Resume, TurnOutcome
from nanobot_lambda.core.images import GeneratedImage
from nanobot_lambda.core.jobs import AnyJob
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.model import CompletionRequest, ModelReply, ToolCall
from nanobot_lambda.core.outgoing import OutgoingFile
from nanobot_lambda.core.remote_tools import RemoteResult, RemoteTool
from nanobot_lambda.core.sandbox import SandboxResult, SandboxRun
from nanobot_lambda.core.tools import Tool, ToolRegistry
from nanobot_lambda.functions.agent_turn.agent_runner import TOOL_TIME_MARGIN_SECONDS
from nanobot_lambda.tools.context import JobContext
from nanobot_lambda.tools.files import file_tools
from nanobot_lambda.tools.images import GenerateImageTool
from nanobot_lambda.tools.remote import remote_tool
from nanobot_lambda.tools.sandbox import ExecTool
from nanobot_lambda.tools.web import WebFetch
from tests.support.fakes import (
    MemoryTurnJournal,
    MemoryWorkspace,
    RecordingChannel,
    ScriptedModel,
    text,
)
from tests.support.job_context import job_context
from tests.unit.test_turns import SESSION, Bot, message

REQUEST = [{"role": "system", "content": "sys"}, {"role": "user", "content": "three, please"}]
RESERVE_SECONDS = 30  # TURN_TIME_RESERVE_SECONDS's default
MAX_CONTINUATIONS = 5  # MAX_CONTINUATIONS's default
MODEL_SECONDS = 10  # what each model call takes of the clock
PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 16


class Clock:
    """An invocation's clock, in seconds. A call takes its time from when it started, so calls
    that run concurrently overlap: with `together`, a call waits (up to 5 s of real time) until
    that many have started before it ends, so that concurrent calls all start at one time."""

    def __init__(self, together: int = 1) -> None:
        self.now = 0.0
        self._together = together
        self._started = 0
        self._changed = threading.Condition()

    def take(self, seconds: float) -> None:
        with self._changed:
            start = self.now
            self._started += 1
            self._changed.notify_all()
            self._changed.wait_for(lambda: self._started % self._together == 0, timeout=5)
            self.now = max(self.now, start + seconds)


class PacedModel(ScriptedModel):
    """The scripted model, each call taking MODEL_SECONDS of the clock."""

    def __init__(self, clock: Clock, *replies: ModelReply) -> None:
        super().__init__(*replies)
        self.clock = clock

    def complete(self, request: CompletionRequest) -> ModelReply:
        self.clock.now += MODEL_SECONDS
        return super().complete(request)


@dataclass
class Kind:
    """A tool that states its longest call, its three calls, and what each takes."""

    name: str
    tool: Callable[[Clock, list[str]], Tool]  # (the clock, the calls it ran, by argument)
    arguments: Callable[[int], dict[str, Any]]
    seconds: float  # what a call takes of the clock
    concurrent: bool = False  # its calls are independent (they run together)


@dataclass
class Images:
    clock: Clock
    ran: list[str]
    seconds: float

    def generate(self, prompt: str, *, source: bytes | None = None) -> GeneratedImage:
        self.ran.append(prompt)
        self.clock.take(self.seconds)
        return GeneratedImage(PNG + prompt.encode(), ".png", 0.04)


@dataclass
class Photos:
    """A turn's outbox that takes files (the generate_image tool sends its photo)."""

    files: list[OutgoingFile] = field(default_factory=list)

    def send(self, *args: Any, **kwargs: Any) -> bool:
        raise AssertionError("no text is sent here")

    def send_file(self, chat_id: int, file: OutgoingFile, thread_id: int | None = None) -> bool:
        self.files.append(file)
        return True


def image_tool(clock: Clock, ran: list[str]) -> Tool[JobContext]:
    # LLM_TIMEOUT_SECONDS' default: each image may take 120 s, and 15 more to keep and send it.
    return GenerateImageTool(Images(clock, ran, 120), timeout=120)


def turn_context() -> JobContext:
    """A person's turn's, in a workspace of its own (the same for every run of the turn)."""
    return job_context(MemoryWorkspace(), chat_id=222, outbox=Photos(), turn_id="turn-1")


@dataclass
class Sandbox:
    clock: Clock
    ran: list[str]

    def programs(self) -> frozenset[str]:
        return frozenset({"python3"})

    def run(self, run: SandboxRun) -> SandboxResult:
        self.ran.append(run.code)
        self.clock.take(run.timeout_seconds)
        return SandboxResult(exit_code=0, stdout="done\n", stderr="")


def exec_tool(clock: Clock, ran: list[str]) -> Tool[JobContext]:
    return ExecTool(Sandbox(clock, ran), 10_000)


@dataclass
class Fetcher:
    clock: Clock
    ran: list[str]
    timeout_seconds: float = 120  # WEB_FETCH_TIMEOUT_SECONDS' largest

    def get(self, url: str) -> Fetched:
        self.ran.append(url)
        self.clock.take(100)
        return Fetched(url, 200, "text/plain", "utf-8", b"a page", False)


def fetch_tool(clock: Clock, ran: list[str]) -> Tool[JobContext]:
    return WebFetch(Fetcher(clock, ran))  # type: ignore[arg-type]


@dataclass
class McpServer:
    clock: Clock
    ran: list[str]
    name: str = "search"
    timeout_seconds: float = 300  # a server's largest: longer than a 180-s invocation
    allowed_tools: frozenset[str] | None = None
    access: str = "owner"

    def list_tools(self, timeout: float) -> list[RemoteTool]:
        return [PAPERS]

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> RemoteResult:
        self.ran.append(str(arguments["query"]))
        self.clock.take(100)
        return RemoteResult("three papers")


PAPERS = RemoteTool(
    "papers",
    "Search papers",
    {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


def mcp_tool(clock: Clock, ran: list[str]) -> Tool:
    return remote_tool(McpServer(clock, ran), PAPERS, 300, 10_000)


KINDS = {
    "images": Kind("generate_image", image_tool, lambda n: {"prompt": f"variation {n}"}, 120),
    "exec": Kind(
        "exec",
        exec_tool,
        lambda n: {"language": "python", "code": f"run({n})", "timeout_seconds": 60},
        60,
    ),
    "web_fetch": Kind(
        "web_fetch", fetch_tool, lambda n: {"url": f"https://example.com/{n}"}, 100, True
    ),
    "mcp": Kind("search_papers", mcp_tool, lambda n: {"query": f"topic {n}"}, 100),
}


@dataclass
class Turn:
    outcome: TurnOutcome
    invocations: int
    records: list[list[dict[str, Any]]]  # what each checkpoint recorded


def run_turn(loop: AgentLoop, clock: Clock, timeout: float) -> Turn:
    """Run a turn invocation by invocation, each of `timeout` seconds on the clock, each
    resumed from the last record (as the journal holds it), as agent_turn does."""
    records: list[list[dict[str, Any]]] = []
    iterations = 0

    def record(outcome: TurnOutcome) -> None:
        nonlocal iterations
        records.append(json.loads(json.dumps(outcome.new_messages)))
        iterations = outcome.iterations

    resume, ctx = None, turn_context()
    for invocation in range(1, MAX_CONTINUATIONS + 2):
        clock.now = 0.0
        outcome = loop.run(
            ctx,
            REQUEST,
            resume=resume,
            on_step=record,
            on_iteration=record,
            time_left=lambda: timeout - clock.now - RESERVE_SECONDS,
            tool_time_left=lambda: timeout - clock.now - TOOL_TIME_MARGIN_SECONDS,
        )
        if not outcome.suspended:
            return Turn(outcome, invocation, records)
        resume = Resume(records[-1], iterations)
    raise AssertionError(f"the turn did not end within {MAX_CONTINUATIONS} continuations")


def three_calls(kind: Kind) -> ModelReply:
    return ModelReply(
        "Making three.",
        tuple(ToolCall(f"c{n}", kind.name, json.dumps(kind.arguments(n))) for n in range(1, 4)),
    )


@pytest.mark.parametrize(
    ("kind", "timeout", "invocations"),
    [
        # 3 x 135 s do not fit 300 s: two now, the third in the next invocation.
        ("images", 300, 2),
        ("images", 180, 3),  # one image per invocation
        ("exec", 180, 2),  # 3 x 65 s: two, then one
        ("exec", 120, 3),
        # Fetches are independent: they run together, as long as the longest.
        ("web_fetch", 300, 1),
        # No time for a fetch after the model call: the next invocation fetches all three.
        ("web_fetch", 120, 3),
        # A call that may take 300 s (the server's timeout) fits no invocation: each fresh
        # invocation runs one anyway.
        ("mcp", 300, 4),
        ("mcp", 180, 4),
    ],
)
def test_three_calls_that_do_not_fit_one_invocation_all_run_once(
    kind: str, timeout: float, invocations: int
) -> None:
    tool_kind = KINDS[kind]
    clock = Clock(together=3 if tool_kind.concurrent else 1)
    ran: list[str] = []
    model = PacedModel(clock, three_calls(tool_kind), text("Here are all three."))
    loop = AgentLoop(model, ToolRegistry([tool_kind.tool(clock, ran)]), max_iterations=5)

    turn = run_turn(loop, clock, timeout)

    assert turn.outcome.reply == "Here are all three."
    assert turn.invocations == invocations
    assert len(ran) == len(set(ran)) == 3  # each call ran, once
    messages = turn.outcome.new_messages
    assert [m["role"] for m in messages] == ["assistant", "tool", "tool", "tool", "assistant"]
    assert [m["tool_call_id"] for m in messages[1:4]] == ["c1", "c2", "c3"]
    assert not any(m["content"].startswith("Error") for m in messages[1:4])
    assert len(model.requests) == 2  # the step was not asked for again


def test_each_result_is_recorded_as_it_comes_and_a_resumed_step_runs_only_the_others() -> None:
    """Images (sent to the chat: one after the other) in a 300-s invocation: two are made and
    each recorded; the next invocation makes the third only."""
    clock = Clock()
    ran: list[str] = []
    kind = KINDS["images"]
    model = PacedModel(clock, three_calls(kind), text("Done."))
    loop = AgentLoop(model, ToolRegistry([kind.tool(clock, ran)]), max_iterations=5)

    turn = run_turn(loop, clock, 300)

    results = [[m.get("tool_call_id") for m in record[1:]] for record in turn.records]
    assert results == [[], ["c1"], ["c1", "c2"], ["c1", "c2", "c3"]]
    assert ran == ["variation 1", "variation 2", "variation 3"]


def test_a_call_whose_result_was_lost_runs_again_and_the_recorded_ones_do_not() -> None:
    """The invocation died while the second image was made: its result was never recorded, so
    the resumed step runs that call again (generate_image keeps what a call made under the
    call's name, and sends that), and the third, not the first."""
    clock = Clock()
    ran: list[str] = []
    kind = KINDS["images"]
    step = three_calls(kind)
    recorded = [
        {
            "role": "assistant",
            "content": step.content,
            "tool_calls": [
                {"id": c.id, "function": {"name": c.name, "arguments": c.arguments}}
                for c in step.tool_calls
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": kind.name, "content": "Made the first."},
    ]
    shown: list[str] = []
    model = PacedModel(clock, text("Done."))
    loop = AgentLoop(model, ToolRegistry([kind.tool(clock, ran)]), max_iterations=5)
    outcome = loop.run(
        turn_context(), REQUEST, resume=Resume(recorded, 1), on_progress=shown.append
    )

    assert ran == ["variation 2", "variation 3"]
    assert shown == []  # the step's text was shown before its first result was recorded
    assert [m.get("tool_call_id") for m in outcome.new_messages[1:4]] == ["c1", "c2", "c3"]
    assert outcome.new_messages[1]["content"] == "Made the first."


def test_results_keep_the_order_of_the_calls_whichever_answers_first() -> None:
    """Concurrent reads answer last to first: each is recorded as it comes, and the step's
    results are in the order of its calls (providers want each call answered, in order)."""

    class Staggered(MemoryWorkspace):
        """f3.md reads at once, f2.md once f3.md's result is recorded, f1.md after f2.md's."""

        def __init__(self) -> None:
            super().__init__({f"f{n}.md": f"content {n}" for n in (1, 2, 3)})
            self.go = {"f1.md": threading.Event(), "f2.md": threading.Event()}

        def read(self, path: str, *, fresh: bool = False):  # type: ignore[no-untyped-def]
            if path in self.go:
                self.go[path].wait(5)
            return super().read(path, fresh=fresh)

    workspace = Staggered()
    records: list[list[str]] = []

    def record(outcome: TurnOutcome) -> None:
        records.append([m["tool_call_id"] for m in outcome.new_messages[1:]])
        workspace.go["f2.md" if len(records) == 1 else "f1.md"].set()

    reads = tuple(
        ToolCall(f"c{n}", "read_file", json.dumps({"path": f"f{n}.md"})) for n in (1, 2, 3)
    )
    model = ScriptedModel(ModelReply(None, reads), text("Read."))
    loop = AgentLoop(model, ToolRegistry(file_tools()), max_iterations=5)
    outcome = loop.run(job_context(workspace), REQUEST, on_iteration=record)

    assert records == [["c3"], ["c2", "c3"], ["c1", "c2", "c3"]]
    assert [m["content"] for m in outcome.new_messages[1:4]] == [
        "content 1",
        "content 2",
        "content 3",
    ]


@pytest.mark.parametrize(("timeout", "invocations"), [(300, 2), (180, 3)])
def test_draw_three_variations_sends_each_photo_and_the_step_s_text_once(
    timeout: float, invocations: int
) -> None:
    """The whole turn, with its journal, outbox and continuations: the step's text is shown
    once, each photo is sent once, the person hears it is still going once, then the answer;
    the session holds the step's three results in the order of its calls."""
    clock = Clock()
    made: list[str] = []
    kind = KINDS["images"]
    model = PacedModel(clock, three_calls(kind), text("Here are all three."))
    bot = Bot(model, images=Images(clock, made, 120), settings={"SEND_PROGRESS": "true"})
    job: AnyJob = message("draw three variations")
    for invocation in range(1, MAX_CONTINUATIONS + 2):
        clock.now = 0.0
        bot.process(job, lambda: int((timeout - clock.now) * 1000))
        if len(bot.queue.jobs) < invocation:
            break
        job = bot.queue.jobs[-1]  # its continuation

    assert invocation == invocations
    assert made == ["variation 1", "variation 2", "variation 3"]
    assert len(bot.channel.files_sent) == 3
    assert bot.said == ["Making three.", texts.load("still_working"), "Here are all three."]
    saved = bot.saved(SESSION)
    assert [m["role"] for m in saved] == ["user", "assistant", "tool", "tool", "tool", "assistant"]
    assert [m["tool_call_id"] for m in saved[2:5]] == ["c1", "c2", "c3"]
    assert bot.journal.records == {}


def test_a_step_s_results_are_recorded_between_the_messages_its_other_calls_send() -> None:
    """A read answers while the step's message call is being sent: its result is recorded
    after that send and its own record, never halfway through (a record written then would
    hold the message's number without the message, and replace the message's own record)."""

    class SlowChannel(RecordingChannel):
        sending = False

        def send_part(self, *args: Any, **kwargs: Any) -> int:
            self.sending = True
            time.sleep(0.3)  # the read answers meanwhile
            sent = super().send_part(*args, **kwargs)
            self.sending = False
            return sent

    channel = SlowChannel()
    midway: list[int] = []

    class Journal(MemoryTurnJournal):
        def checkpoint(self, session_key: str, progress: TurnProgress) -> None:
            if channel.sending:
                midway.append(len(progress.messages))
            super().checkpoint(session_key, progress)

    calls = (
        ToolCall("c1", "message", json.dumps({"content": "Hello there."})),
        ToolCall("c2", "read_file", json.dumps({"path": "a.md"})),
    )
    bot = Bot(
        ScriptedModel(ModelReply(None, calls), text("Done.")),
        channel=channel,
        journal=Journal(),
        workspace=MemoryWorkspace({"a.md": "A"}),
    )
    bot.process(message("say hello and read a.md"))

    assert midway == []
    assert bot.said == ["Hello there.", "Done."]


def test_the_estimate_is_how_the_calls_run() -> None:
    """Independent calls run MAX_PARALLEL_TOOLS at a time: each group as long as its longest;
    calls run one after the other take the sum."""
    registry = ToolRegistry(file_tools())
    reads = [ToolCall(f"c{n}", "read_file", '{"path": "a.md"}') for n in range(10)]
    each = registry.seconds_needed(reads[:1])
    assert registry.seconds_needed(reads) == 10 * each
    assert registry.seconds_needed(reads, at_once=MAX_PARALLEL_TOOLS) == 2 * each
    assert registry.seconds_needed(reads[:3], at_once=MAX_PARALLEL_TOOLS) == each
