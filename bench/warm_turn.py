"""Warm agent turns: AWS requests per turn by service, and the framework's own time.

The whole local stack (infra/template.yaml on moto server, the local Bot API) with the deployed
agent_turn handler, whose model is replaced by an in-process, zero-latency one (it answers at
once; asked for `save_memory`, it summarises), so what is timed is everything but waiting for a
model. Per variant: 2 turns to warm the container, then 100 warm turns, with the objects made
until then frozen for the garbage collector, as a Lambda container's init leaves them. Each
turn: the webhook queues a Telegram message, this script receives it and invokes the handler
as Lambda's event source mapping does, then deletes it (the ack). Timed: the handler invocation
only. Counted: the AWS requests from the receive to the ack.

moto's own latency is measured separately, inside moto's server (its WSGI application is timed
per request), and subtracted from the framework time. Every HISTORY_WINDOW/2 messages or so a
turn consolidates the session into memory (a second model call, workspace writes): those turns
are counted apart and are in the p95.

    make bench            or            .venv/bin/python bench/warm_turn.py [turns]
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from _moto import start_moto
from moto.server import ThreadedMotoServer

from nanobot_lambda.core.model import CompletionRequest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support: the request counter

import nanobot_lambda.adapters.aws.clients  # noqa: E402, F401 - first, as in the functions: sessions made after it parse timestamps fast
from nanobot_lambda.core.consolidation import SAVE_MEMORY  # noqa: E402
from nanobot_lambda.core.model import ModelReply, ToolCall, Usage  # noqa: E402
from nanobot_lambda.operator.local.runtime import sqs_event  # noqa: E402
from nanobot_lambda.operator.local.stack import LocalStack  # noqa: E402
from tests.support.aws_requests import RequestCounter  # noqa: E402

TURNS = 100
WARM_UP = 2
TEMPLATE = ROOT / "infra" / "template.yaml"
VARIANTS = (  # (skills in the workspace, messages already in the session)
    (1, 0),
    (20, 0),
    (200, 0),
    (20, 5000),
)
# moto answers a Query on a 5,000-item partition in ~0.3 s (DynamoDB reads only the window):
# fewer turns keep `make bench` within its time.
LONG_SESSION_TURNS = 30
SERVICES = ("s3", "dynamodb", "sqs")
SKILLS_GOAL = 1.2  # 200 skills cost at most this times the warm framework time of 20


class ZeroLatencyModel:
    """A ChatModel that answers at once: a short reply, or the tool call it is forced to make."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0

    def complete(self, request: CompletionRequest) -> ModelReply:
        """Its `on_text` and `reasoning_effort` are ignored: no stream to measure here, nothing
        to think about."""
        tool_choice = request.tool_choice
        start = time.perf_counter()
        self.calls += 1
        usage = Usage(prompt_tokens=1000, completion_tokens=20)
        if isinstance(tool_choice, dict) and tool_choice["function"]["name"] == SAVE_MEMORY:
            arguments = {
                "history_entry": "[2026-01-01 10:00] The user chatted; nothing to remember.",
                "memory_update": "",
            }
            call = ToolCall(f"call_{self.calls}", SAVE_MEMORY, json.dumps(arguments))
            reply = ModelReply(content=None, tool_calls=(call,), usage=usage)
        else:
            reply = ModelReply(content="Noted, thank you.", usage=usage)
        self.seconds += time.perf_counter() - start
        return reply


class TimedApp:
    """moto's WSGI application, timing each request inside the server."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self._app = app
        self._lock = threading.Lock()
        self.spans: list[tuple[float, float]] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        start = time.perf_counter()
        try:
            return self._app(environ, start_response)
        finally:
            with self._lock:
                self.spans.append((start, time.perf_counter()))

    def within(self, start: float, end: float) -> list[float]:
        with self._lock:
            return [e - s for s, e in self.spans if s >= start and e <= end]


@dataclass
class Turn:
    framework_ms: float
    moto_ms: float
    cpu_ms: float
    model_calls: int
    requests: dict[str, int]
    operations: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def consolidated(self) -> bool:
        return self.model_calls > 1


def start_timed_moto() -> tuple[ThreadedMotoServer, TimedApp, str]:
    server = start_moto()
    timed = TimedApp(server._server.app)  # type: ignore[union-attr]  # moto keeps it private
    server._server.app = timed  # type: ignore[union-attr]
    return server, timed, os.environ["AWS_ENDPOINT_URL"]


def start_stack(endpoint: str, model: ZeroLatencyModel) -> LocalStack:
    stack = LocalStack(
        TEMPLATE,
        model_env={"LLM_MODEL": "openai/bench"},
        endpoint_url=endpoint,
    ).start()
    # The deployed handler with its model factory swapped for the in-process model.
    handler = stack.handlers["agent_turn"]
    handler.LitellmChatModel = lambda settings: model
    handler.records = handler.build_records()
    return stack


def add_skills(stack: LocalStack, count: int) -> None:
    for n in range(count):
        body = f"---\nname: chore-{n:03d}\ndescription: Does chore number {n}.\n---\n# {n}\n"
        stack.workspace.write(f"skills/chore-{n:03d}/SKILL.md", body.encode())


def seed_session(stack: LocalStack, key: str, count: int, window: int) -> None:
    """A long chat as the store lays it out, consolidated up to the recent window."""
    table = boto3.resource("dynamodb").Table(stack.template.refs["SessionsTable"])
    with table.batch_writer() as batch:
        for seq in range(count):
            role = "user" if seq % 2 == 0 else "assistant"
            message = {"role": role, "content": f"Message {seq} of a long conversation."}
            batch.put_item(
                Item={"pk": key, "sk": f"msg#{seq:012d}", "message": json.dumps(message)}
            )
        meta = {"pk": key, "sk": "~meta", "next_seq": count, "consolidated_upto": count - window}
        batch.put_item(Item=meta)


def one_turn(
    stack: LocalStack, counter: RequestCounter, moto: TimedApp, model: ZeroLatencyModel, n: int
) -> Turn:
    assert stack.post_update(stack.text_update(f"warm turn {n}"))["statusCode"] == 200
    sqs = boto3.client("sqs")
    queue_url = stack.template.refs["TurnQueue"]
    counter.reset()
    calls_before = model.calls
    received = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=1, AttributeNames=["All"]
    )["Messages"]
    event = sqs_event(received, "arn:aws:sqs:us-east-1:123456789012:turns", "us-east-1")
    model_before = model.seconds
    start, start_cpu = time.perf_counter(), time.thread_time()
    response = stack.handlers["agent_turn"].handler(event, stack._context("agent_turn"))
    end, cpu_ms = time.perf_counter(), (time.thread_time() - start_cpu) * 1000
    assert not response["batchItemFailures"], response
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=received[0]["ReceiptHandle"])
    moto_ms = sum(moto.within(start, end)) * 1000
    framework_ms = (end - start - (model.seconds - model_before)) * 1000
    return Turn(
        framework_ms,
        moto_ms,
        cpu_ms,
        model.calls - calls_before,
        {service: counter.total(service) for service in SERVICES},
        {service: counter.operations(service) for service in SERVICES},
    )


def run_variant(
    endpoint: str, moto: TimedApp, counter: RequestCounter, skills: int, messages: int, turns: int
) -> list[Turn]:
    model = ZeroLatencyModel()
    stack = start_stack(endpoint, model)
    try:
        add_skills(stack, skills)
        if messages:
            window = int(stack.environment["agent_turn"].get("HISTORY_WINDOW", "50"))
            seed_session(stack, f"telegram:{stack.user.id}", messages, window // 2)
        for n in range(WARM_UP):
            one_turn(stack, counter, moto, model, n)
        # As agent_turn's init does in a Lambda container (functions/init_phase.py): what lives on
        # is frozen, so the collector walks only what turns make. Here that also takes in
        # moto's objects, which on AWS are not in the function's process at all.
        gc.freeze()
        return [one_turn(stack, counter, moto, model, n) for n in range(turns)]
    finally:
        gc.unfreeze()
        stack.stop()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def describe(label: str, turns: list[Turn]) -> None:
    plain = [turn for turn in turns if not turn.consolidated] or turns
    counts = "  ".join(
        f"{statistics.median(t.requests[s] for t in plain):>4.0f} "
        f"{max(t.requests[s] for t in turns):>3}"
        for s in SERVICES
    )
    framework = [t.framework_ms for t in turns]
    net = [t.framework_ms - t.moto_ms for t in turns]
    moto = [t.moto_ms for t in turns]
    cpu = [t.cpu_ms for t in turns]
    print(
        f"  {label:<34} {counts}  {statistics.median(framework):6.1f} {p95(framework):6.1f}"
        f"  {statistics.median(moto):5.1f}  {statistics.median(net):5.1f} {p95(net):5.1f}"
        f"  {statistics.median(cpu):5.1f} {p95(cpu):5.1f}  {sum(t.consolidated for t in turns):>3}"
    )


def skills_scaling(few: list[Turn], many: list[Turn]) -> str:
    """200 skills against 20, p50 of turns without consolidation (issue 31: at most 1.2x).
    The goal is judged on the framework's own time, moto's excluded (moto lists a bucket far
    slower than S3, more so the more keys it has), and on the handler's CPU time."""

    def ratio(measure: Callable[[Turn], float]) -> float:
        plain = [[turn for turn in turns if not turn.consolidated] for turns in (few, many)]
        return statistics.median(map(measure, plain[1])) / statistics.median(map(measure, plain[0]))

    own = ratio(lambda turn: turn.framework_ms - turn.moto_ms)
    cpu = ratio(lambda turn: turn.cpu_ms)
    whole = ratio(lambda turn: turn.framework_ms)
    verdict = "met" if max(own, cpu) <= SKILLS_GOAL else "NOT met"
    return (
        f"  200 skills against 20: minus moto {own:.2f}x, handler CPU {cpu:.2f}x (goal <= "
        f"{SKILLS_GOAL}x: {verdict}); framework with moto's time {whole:.2f}x"
    )


def operations(turns: list[Turn]) -> str:
    plain = next(turn for turn in turns if not turn.consolidated)
    return "; ".join(f"{service}: {plain.operations[service]}" for service in SERVICES)


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else TURNS
    server, moto, endpoint = start_timed_moto()
    counter = RequestCounter()  # before any client is created: clients copy the hooks
    null = open(os.devnull, "w")  # noqa: SIM115 - the functions' loggers keep it to the end
    try:
        print(
            f"Warm agent turns ({turns} per variant, {LONG_SESSION_TURNS} with the long session, "
            f"after {WARM_UP} warm-up turns; zero-latency in-process model; moto server as AWS)"
        )
        print(
            f"  {'requests per turn / ms per turn':<34} {'S3':>8}  {'DynamoDB':>8}  {'SQS':>8}"
            f"  {'framework':>13}  {'moto':>5}  {'minus moto':>11}  {'handler CPU':>11}  cons."
        )
        print(
            f"  {'':<34} {'med':>4} {'max':>3}  {'med':>4} {'max':>3}  {'med':>4} {'max':>3}"
            f"  {'p50':>6} {'p95':>6}  {'p50':>5}  {'p50':>5} {'p95':>5}  {'p50':>5} {'p95':>5}"
        )
        results = {}
        for skills, messages in VARIANTS:
            label = f"{skills} skills" + (f", {messages}-message session" if messages else "")
            # The functions log JSON lines to stdout (INFO, as deployed): written, not shown.
            count = min(turns, LONG_SESSION_TURNS) if messages else turns
            with contextlib.redirect_stdout(null):
                results[label] = run_variant(endpoint, moto, counter, skills, messages, count)
            describe(label, results[label])
        print(
            "  requests: median over turns without consolidation, max over all turns; framework:"
            " the handler's wall time, the model's excluded; minus moto: without the time moto's"
            " server spent on the turn's requests; handler CPU: the handler thread's CPU time"
            " (moto and the Bot API stand-in run in other threads); cons.: turns that"
            " consolidated memory"
        )
        print(f"  a plain turn with 20 skills: {operations(results['20 skills'])}")
        print(skills_scaling(results["20 skills"], results["200 skills"]))
        print(
            "  SQS: ReceiveMessage and DeleteMessage (the ack) are the event source mapping's; "
            "the handler's one ChangeMessageVisibility (the record hidden until just past the "
            "invocation's end, should it die) runs beside the turn's start"
        )
        spans = moto.within(0, time.perf_counter())
        print(f"  moto's own time per request: median {statistics.median(spans) * 1000:.2f} ms")
    finally:
        counter.close()
        server.stop()
        null.close()


if __name__ == "__main__":
    main()
