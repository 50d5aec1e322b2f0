"""Many people on one deployment at a day's peak, simulated on the local stack (issue 41):
what one deployment does with 1, 100, 1,000 and 10,000 people writing at once.

The parts, each real where a person's message would meet it:
- the local stack (infra/template.yaml on a fresh moto server per size, the webhook handler
  in-process as API Gateway calls it), its code sandbox and console off (no turn here runs
  code; nobody opens the console);
- agent_turn as Lambda runs it: up to `--concurrency` invocations at once, each in its own
  worker process (tests/soak/worker.py's WorkerPool: a container, warmed with the keep-warm
  ping before the arrivals start), fed by the turn queue as the event source mapping feeds it
  (QueuePoller: batch size 1, one message group at a time, a failed turn back after 10 s);
- the streaming stand-in model: every request answered with `--tokens` words, the first after
  `--first-token` s, then `--tokens-per-second` (bench/_load_parts.py, LoadModel);
- a Bot API stand-in that keeps Telegram's limits (tests/support/telegram_limits.py): about 30
  sends a second overall, 1 a second per chat with a burst of 3, 20 a minute per group, drafts
  counted; over them it answers 429 with `retry_after`.

People write as a Poisson process at the day's peak: `--per-person` turns a second each
(default 0.001, one message every ~17 minutes at the peak hour, so 10,000 people offer 10 turns
a second and 100 people 0.1). Each message is a private chat's text, its person drawn at random
among N; a size whose rate gives fewer than `--min-turns` messages in `--seconds` is offered
that many instead (one person alone would write nothing in a minute), and says so.

Per size it prints (measured where Telegram and AWS would see it):
- offered and achieved turns a second: messages posted / `--seconds`, and answers / the time
  from the first message to the last answer. When the machine (2 shared cores here) cannot keep
  up, achieved stays below offered: the output says so rather than hide it;
- first text p50/p95: from a message's arrival (when it was due) to the first text the Bot API
  accepted for its chat during its turn, a draft or a message (its p95 also from the webhook's
  answer, which runs late when one webhook cannot keep up);
- 429s: how many sends the Bot API refused, and their share of all sends;
- dead-lettered (in the DLQ at the end), lost (queued, never answered, not in the DLQ), and
  unfinished (still queued when the drain gave up): the first two must be 0;
- model calls per turn (1.0 for a plain turn) and turns whose model was asked more than once;
- seconds agent_turn slept in its invocations: the Telegram client's retry sleeps, counted by
  the workers' handler (bench/_load_handler/app.py) around the client's `sleep`;
- DynamoDB per turn, agent_turn's and the webhook's: requests (reads, writes), estimated read
  and write units (bench/_load_parts.py, AwsRequestLog, says how), and conflicts
  (ConditionalCheckFailed, TransactionCanceled; some are by design: a turn's first journal
  write, the webhook's idempotency); S3 requests per turn.

Goals (issue 41): at the 10,000-person peak no turn lost or asked twice, 429s under 1 % of
sends, first-text p95 within 2 s of the 100-person run. These are a baseline before pacing.

What it leaves out, or plays otherwise than AWS and Telegram would:
- one machine plays everything: moto (DynamoDB and S3 one request at a time), the model, the
  Bot API, the webhook and the workers share its cores, so past what it sustains the figures
  are a backed-up queue's (printed as such), not the deployment's at that rate;
- the webhook is one container (the stack invokes it one request at a time); agent_turn's
  concurrency is `--concurrency`, not Lambda's scaling; a failed turn is back after 10 s;
- Telegram's limits are a model of what it documents (the per-chat burst of 3 and counting
  drafts are assumptions: `--chat-burst`, `--free-drafts`); private chats only, no group;
- every turn is a person's plain question answered in one model call: no tools, files,
  sandbox or consolidation (each person writes a message or two), no provider rate limits,
  no cold starts (containers are warmed with the keep-warm ping and one turn each, `--cold`
  skips the turn); no spending limit unless given (`--parameter SpendLimitDailyUsd=100`);
- DynamoDB units are estimates from bytes and moto never throttles (on-demand tables'
  partition limits are not played); moto runs one DynamoDB request at a time, so it never
  cancels a transaction for a concurrent one on the same item (TransactionConflict): the
  conflicts counted are the product's own conditions refused, a floor for a hot item's.

    .venv/bin/python bench/load.py [--people 1,100,1000,10000] [--seconds 60]
        [--concurrency 16] [--tokens 200] [--json figures.json]
    make load ARGS="--people 1,100 --seconds 30"
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import boto3

ROOT = Path(__file__).resolve().parent.parent
# tests.support and tests.soak (the stand-ins, the workers), and this folder's parts (also when
# a test imports this file)
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from _load_parts import AwsRequestLog, LoadModel  # noqa: E402

from nanobot_lambda.functions.keep_warm import KEEP_WARM_EVENT  # noqa: E402
from nanobot_lambda.operator.local import stack as local_stack  # noqa: E402
from nanobot_lambda.operator.local.moto_server import start_moto_server  # noqa: E402
from nanobot_lambda.operator.local.runtime import LocalLambdaContext, QueuePoller  # noqa: E402
from nanobot_lambda.operator.local.stack import FUNCTIONS, LocalStack, LocalTelegram  # noqa: E402
from nanobot_lambda.operator.local.webhook_reply import reply_method  # noqa: E402
from tests.soak.worker import WorkerPool  # noqa: E402
from tests.support.telegram_limits import (  # noqa: E402
    TEXT_METHODS,
    Limit,
    RateLimitedBotApi,
    TelegramLimits,
)

TEMPLATE = ROOT / "infra" / "template.yaml"
HANDLER = Path(__file__).resolve().parent / "_load_handler" / "app.py"
OWNER_ID = 100000001  # ALLOW_FROM's first id: the owner, who writes nothing here
FIRST_PERSON_ID = 200_000_000
WORKER_KEY = "load-agent-turn"  # agent_turn's access key: moto's log tells its requests apart
RETRY_DELAY = 10  # a failed turn's message is visible again after RETRY_BACKOFF_SECONDS' first
IDLE_POLL = 0.05  # s between receives of the one idle slot that polls
MESSAGE = "what should I cook tonight?"


@dataclass
class Turn:
    number: int
    chat_id: int
    due: float  # monotonic: when the message arrives (the arrivals' clock)
    posted: float = 0.0  # when the webhook answered
    status: int = 0  # the webhook's HTTP status
    invocations: list[tuple[float, float, bool]] = field(default_factory=list)  # start, end, ok


@dataclass
class Figures:
    people: int
    seconds: float
    concurrency: int
    offered_per_second: float  # the arrival rate the size asked for (after the floor)
    peak_per_second: float  # people x per-person rate, before the floor
    turns: int  # messages posted
    posted_per_second: float
    post_lag_p95: float  # s the webhook posts ran behind the arrivals
    answered: int
    achieved_per_second: float
    answered_in_window: int  # answers within --seconds of the first arrival
    backlog: int  # messages queued and not yet started once the last one was posted
    queue_wait_p95: float | None  # s from the webhook's answer to the turn's invocation
    invocation_p50: float | None  # s an invocation took
    first_text_p50: float | None
    first_text_p95: float | None
    first_text_after_webhook_p95: float | None  # from the webhook's answer instead
    sends: int
    rate_limited: int  # 429s
    rate_limited_by_method: dict[str, int]
    retry_after_seconds: dict[str, float]  # by method: what the 429s asked to wait
    dead_lettered: int
    lost: int
    unfinished: int
    webhook_refused: int
    model_calls_per_turn: float
    asked_more_than_once: int
    invocations: int
    failed_invocations: int
    peak_busy: int
    needed_concurrency: float  # Little's law: offered rate x mean invocation time
    slept_seconds: float | None  # None: the client takes no sleep to count
    sleeps: int
    dynamodb: dict[str, dict[str, float]]  # caller -> figures per turn
    conflicts: dict[str, int]  # "caller operation error" -> count
    s3_per_turn: dict[str, float]
    load_average: float
    drain_seconds: float
    log: str

    @property
    def rate_limited_share(self) -> float:
        return self.rate_limited / self.sends if self.sends else 0.0

    @property
    def kept_up(self) -> bool:
        """Answers came as fast as messages (within 15 %), or no backlog built up."""
        return self.achieved_per_second >= 0.85 * self.offered_per_second or self.backlog <= 1


class Invocations:
    """Lambda's event source mapping for the turn queue with up to `concurrency` agent_turn
    invocations at once, each slot a worker process (a container) with its own poller. One
    idle slot polls at a time (moto's long poll spins while another group holds the queue's
    only visible messages); it hands the polling on as soon as it received a message."""

    def __init__(
        self, stack: LocalStack, concurrency: int, environ: dict[str, str], log: Path, turns: Any
    ) -> None:
        timeout = float(
            stack.template.template["Resources"][FUNCTIONS["agent_turn"]]["Properties"]["Timeout"]
        )
        self._timeout = timeout
        self._queue_url = stack.template.refs["TurnQueue"]
        self._turns = turns
        self.pools = [
            WorkerPool(HANDLER, environ, log, timeout_seconds=timeout) for _ in range(concurrency)
        ]
        self._polling = threading.Lock()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.busy = 0
        self.peak_busy = 0
        self.invocations = 0
        self.failed = 0
        self.durations: list[float] = []

    def warm(self) -> None:
        """Each container's init, before the arrivals: the keep-warm ping."""
        pings = [
            threading.Thread(target=pool.invoke, args=(dict(KEEP_WARM_EVENT),))
            for pool in self.pools
        ]
        for ping in pings:
            ping.start()
        for ping in pings:
            ping.join()

    def forget(self) -> None:
        """Start counting afresh (after the warm-up)."""
        with self._lock:
            self.peak_busy = self.busy
            self.invocations = self.failed = 0
            self.durations = []

    def start(self) -> None:
        for index, pool in enumerate(self.pools):
            thread = threading.Thread(target=self._slot, args=(pool,), name=f"slot-{index}")
            thread.daemon = True
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(self._timeout + 10)
        for pool in self.pools:
            pool.close()

    def _slot(self, pool: WorkerPool) -> None:
        holding = False

        def handler(event: dict[str, Any], context: Any) -> Any:
            nonlocal holding
            self._polling.release()  # received: another idle slot polls from now on
            holding = False
            return self._invoke(pool, event)

        poller = QueuePoller(
            boto3.client("sqs"),
            self._queue_url,
            handler,
            context=lambda: LocalLambdaContext("agent_turn", timeout_seconds=self._timeout),
            retry_delay=RETRY_DELAY,
        )
        while not self._stop.is_set():
            if not self._polling.acquire(timeout=0.5):
                continue
            holding = True
            try:
                while holding and not self._stop.is_set():
                    try:
                        received = poller.poll_once()
                    except Exception as error:  # moto under load; the next poll tries again
                        print(f"  (a poll failed: {type(error).__name__}: {error})", flush=True)
                        received = 0
                    if not received and holding:
                        self._stop.wait(IDLE_POLL)
            finally:
                if holding:
                    holding = False
                    self._polling.release()

    def _invoke(self, pool: WorkerPool, event: dict[str, Any]) -> Any:
        (record,) = event["Records"]
        turn = self._turns(record["body"])
        started = time.monotonic()
        with self._lock:
            self.busy += 1
            self.peak_busy = max(self.peak_busy, self.busy)
            self.invocations += 1
        ok = False
        try:
            response = pool.invoke(event)
            ok = not (response or {}).get("batchItemFailures")
            return response
        finally:
            ended = time.monotonic()
            with self._lock:
                self.busy -= 1
                self.failed += 0 if ok else 1
                self.durations.append(ended - started)
            if turn is not None:
                turn.invocations.append((started, ended, ok))


class _RunsInWorkers:
    """The stack's own agent_turn module, never imported here: the workers run the turns (and
    this process is spared litellm's import while the fork server makes its own)."""

    def handler(self, event: Any, context: Any) -> Any:
        raise RuntimeError("agent_turn runs in the load simulation's workers")


def _start_stack(stack: LocalStack) -> None:
    load = local_stack.load_handler_module

    def all_but_agent_turn(code_dir: Path, name: str) -> Any:
        return _RunsInWorkers() if name.endswith("_agent_turn") else load(code_dir, name)

    local_stack.load_handler_module = all_but_agent_turn  # type: ignore[assignment]
    try:
        stack.start()
    finally:
        local_stack.load_handler_module = load


def _start_fork_server(log: Path) -> threading.Thread:
    """The workers' fork server, started (it imports litellm and the package: seconds) while
    the stack starts: a pool is made for that alone, and never invoked."""
    thread = threading.Thread(target=WorkerPool, args=(HANDLER, {}, log), daemon=True)
    thread.start()
    return thread


def _concurrency(stack: LocalStack, wanted: int) -> int:
    """`--concurrency`, or the queue's event source's maximum concurrency if the template sets
    a lower one (Lambda invokes no more at once)."""
    mapping = stack.template.queue_mapping(FUNCTIONS["agent_turn"])
    maximum = getattr(mapping, "maximum_concurrency", None)
    if maximum and int(maximum) < wanted:
        print(f"  (the template's maximum concurrency, {maximum}, bounds --concurrency {wanted})")
        return int(maximum)
    return wanted


def _warm_webhook(stack: LocalStack) -> None:
    """The webhook's first invocation, before the arrivals: a bot's message, which it ignores."""
    update = stack.text_update("warming up", chat_id=FIRST_PERSON_ID - 1)
    update["message"]["from"]["is_bot"] = True
    stack.post_update(update)


def _warm_turns(stack: LocalStack, sqs: Any, invocations: Invocations) -> None:
    """A turn per container before the arrivals (at the peak, containers have served turns
    before): as many people's first message at once as there are slots, answered."""
    for index in range(len(invocations.pools)):
        chat_id = FIRST_PERSON_ID - 2 - index
        stack.post_update(stack.text_update("warming up", chat_id=chat_id))
    _wait_idle(stack, sqs, invocations, 120)


def _post(stack: LocalStack, bot_api: RateLimitedBotApi, turn: Turn) -> None:
    """The turn's message, when it is due, to the webhook as Telegram posts it; then the sign
    of life its answer asks for, as Telegram performs it."""
    time.sleep(max(0.0, turn.due - time.monotonic()))
    update = stack.text_update(f"t{turn.number:06d} {MESSAGE}", chat_id=turn.chat_id)
    response = stack.post_update(update)
    turn.posted, turn.status = time.monotonic(), int(response.get("statusCode", 0))
    requested = reply_method(response)
    if requested is not None:
        bot_api.perform(*requested)


def _wait_idle(stack: LocalStack, sqs: Any, invocations: Invocations, seconds: float) -> None:
    """Until the turn queue is empty and no invocation runs (at most `seconds`)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if not _queued(sqs, stack.template.refs["TurnQueue"]) and not invocations.busy:
            return


def arrivals(
    people: int, rate: float, seconds: float, rng: random.Random
) -> list[tuple[float, int]]:
    """(seconds after the start, person) of each message: a Poisson process at `rate`."""
    found, at = [], rng.expovariate(rate)
    while at < seconds:
        found.append((at, rng.randrange(people)))
        at += rng.expovariate(rate)
    return found


def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _queued(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(value) for value in attributes.values())


def run_size(people: int, args: argparse.Namespace, log_dir: Path) -> Figures:
    rng = random.Random(f"{args.seed}-{people}")
    peak = people * args.per_person
    offered = max(peak, args.min_turns / args.seconds)
    schedule = arrivals(people, offered, args.seconds, rng)
    limits = telegram_limits(args)
    moto, endpoint = start_moto_server()
    assert moto._server is not None  # moto does not expose its WSGI server
    requests = AwsRequestLog(moto._server.app)
    moto._server.app = requests
    model = LoadModel(args.tokens, args.first_token, args.tokens_per_second).start()
    token = f"100200300:load-{people}"
    bot_api = RateLimitedBotApi(token, limits).start()
    stack = LocalStack(
        TEMPLATE,
        model_env=model.env(),
        endpoint_url=endpoint,
        telegram=LocalTelegram(
            allow_from=f"{OWNER_ID},*", bot_token=token, api_base=bot_api.base_url
        ),
        parameters={
            "EnableSandbox": "false",
            "EnableConsole": "false",
            "LogLevel": "WARNING",
            **dict(parameter.split("=", 1) for parameter in args.parameter),
        },
    )
    log = log_dir / f"load-{people}-agent_turn.log"
    sleeps = log_dir / f"load-{people}-sleeps.txt"
    log.write_text("")
    sleeps.write_text("")
    invocations: Invocations | None = None
    metrics_before = os.environ.get("POWERTOOLS_METRICS_DISABLED")
    try:
        os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # no EMF records in the logs
        fork_server = _start_fork_server(log)
        _start_stack(stack)
        fork_server.join()
        sqs = boto3.client("sqs")
        environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
        environ.update(stack.environment["agent_turn"])
        environ.update(
            AWS_ACCESS_KEY_ID=WORKER_KEY,
            POWERTOOLS_METRICS_DISABLED="true",
            LOAD_BENCH_SLEEPS=str(sleeps),
        )
        turns: dict[int, Turn] = {}

        def turn_of_body(body: str) -> Turn | None:
            update = json.loads(body).get("update") or {}
            tag = str((update.get("message") or {}).get("text", ""))[1:7]
            return turns.get(int(tag)) if tag.isdigit() else None

        concurrency = _concurrency(stack, args.concurrency)
        invocations = Invocations(stack, concurrency, environ, log, turn_of_body)
        invocations.warm()
        invocations.start()
        _warm_webhook(stack)
        if not args.cold:
            _warm_turns(stack, sqs, invocations)
        requests.reset()
        model.asked.clear()
        bot_api.forget_sends()
        invocations.forget()
        sleeps.write_text("")
        started = time.monotonic()
        for number, (offset, person) in enumerate(schedule, 1):
            turns[number] = Turn(number, FIRST_PERSON_ID + person, started + offset)
        for turn in turns.values():
            _post(stack, bot_api, turn)
        time.sleep(max(0.0, started + args.seconds - time.monotonic()))
        load_average = os.getloadavg()[0]
        backlog = sum(1 for turn in turns.values() if not turn.invocations)
        drain_started = time.monotonic()
        _wait_idle(stack, sqs, invocations, args.drain)
        drain_seconds = time.monotonic() - drain_started
        unfinished = _queued(sqs, stack.template.refs["TurnQueue"])
        invocations.stop()
        dead_lettered = _queued(sqs, stack.template.refs["TurnDeadLetterQueue"])
        return _figures(
            people=people,
            args=args,
            peak=peak,
            offered=offered,
            started=started,
            turns=list(turns.values()),
            bot_api=bot_api,
            model=model,
            requests=requests,
            invocations=invocations,
            sleeps=sleeps,
            unfinished=unfinished,
            dead_lettered=dead_lettered,
            load_average=load_average,
            backlog=backlog,
            drain_seconds=drain_seconds,
            log=log,
        )
    finally:
        if invocations is not None:
            invocations.stop()
        stack.stop()
        bot_api.stop()
        model.stop()
        moto.stop()
        if metrics_before is None:
            os.environ.pop("POWERTOOLS_METRICS_DISABLED", None)
        else:
            os.environ["POWERTOOLS_METRICS_DISABLED"] = metrics_before


def _figures(
    *,
    people: int,
    args: argparse.Namespace,
    peak: float,
    offered: float,
    started: float,
    turns: list[Turn],
    bot_api: RateLimitedBotApi,
    model: LoadModel,
    requests: AwsRequestLog,
    invocations: Invocations,
    sleeps: Path,
    unfinished: int,
    dead_lettered: int,
    load_average: float,
    backlog: int,
    drain_seconds: float,
    log: Path,
) -> Figures:
    sends = list(bot_api.sends)
    by_chat: dict[int, list[tuple[float, str]]] = {}
    for send in sends:
        if send.status == 200:
            by_chat.setdefault(send.chat_id, []).append((send.at, send.method))
    first_texts, after_webhook, answered_at = [], [], []
    lost = refused = 0
    for turn in turns:
        if turn.status != 200:
            refused += 1
            continue
        windows = [(start, end) for start, end, _ in turn.invocations]
        shown = [
            (at, method)
            for at, method in by_chat.get(turn.chat_id, [])
            if method in TEXT_METHODS and any(start <= at <= end for start, end in windows)
        ]
        if shown:
            first_texts.append(shown[0][0] - turn.due)
            after_webhook.append(shown[0][0] - turn.posted)
        final = [at for at, method in shown if method == "sendMessage"]
        if final and any(ok for _, _, ok in turn.invocations):
            answered_at.append(final[-1])
        else:
            lost += 1
    lost = max(0, lost - dead_lettered - unfinished)
    answered = len(answered_at)
    # Answers a second from the first to the last: the rate they came at, whatever the delay
    # before the first.
    span = max(answered_at) - min(answered_at) if len(answered_at) > 1 else 0.0
    rate_limited = [send for send in sends if send.status == 429]
    tagged = {number: count for number, count in model.asked.items() if number is not None}
    turn_count = len(turns)
    slept = [float(line) for line in sleeps.read_text().split()]
    counted = "sleep" in _telegram_bot_parameters()
    durations = invocations.durations
    mean_invocation = statistics.mean(durations) if durations else 0.0
    return Figures(
        people=people,
        seconds=args.seconds,
        concurrency=len(invocations.pools),
        offered_per_second=offered,
        peak_per_second=peak,
        turns=turn_count,
        # One webhook that cannot keep up posts the last messages after the window.
        posted_per_second=turn_count
        / max([args.seconds, *(turn.posted - started for turn in turns)]),
        post_lag_p95=percentile([turn.posted - turn.due for turn in turns], 0.95) or 0.0,
        answered=answered,
        achieved_per_second=(answered - 1) / span if span else 0.0,
        answered_in_window=sum(1 for at in answered_at if at <= started + args.seconds),
        backlog=backlog,
        queue_wait_p95=percentile(
            [turn.invocations[0][0] - turn.posted for turn in turns if turn.invocations], 0.95
        ),
        invocation_p50=percentile(durations, 0.5),
        first_text_p50=percentile(first_texts, 0.5),
        first_text_p95=percentile(first_texts, 0.95),
        first_text_after_webhook_p95=percentile(after_webhook, 0.95),
        sends=len(sends),
        rate_limited=len(rate_limited),
        rate_limited_by_method=dict(Counter(send.method for send in rate_limited)),
        retry_after_seconds={
            method: float(sum(s.retry_after or 0 for s in rate_limited if s.method == method))
            for method in {send.method for send in rate_limited}
        },
        dead_lettered=dead_lettered,
        lost=lost,
        unfinished=unfinished,
        webhook_refused=refused,
        model_calls_per_turn=sum(tagged.values()) / turn_count if turn_count else 0.0,
        asked_more_than_once=sum(1 for count in tagged.values() if count > 1),
        invocations=invocations.invocations,
        failed_invocations=invocations.failed,
        peak_busy=invocations.peak_busy,
        needed_concurrency=offered * mean_invocation,
        slept_seconds=sum(slept) if counted else None,
        sleeps=len(slept),
        dynamodb=_dynamodb_per_turn(requests, turn_count),
        conflicts={
            f"{_caller(caller)} {operation} {error}": count
            for (caller, operation, error), count in sorted(requests.conflicts.items())
        },
        s3_per_turn={
            f"{_caller(caller)} {kind}": count / turn_count
            for (caller, kind), count in sorted(requests.s3.items())
            if turn_count
        },
        load_average=load_average,
        drain_seconds=drain_seconds,
        log=str(log),
    )


def _telegram_bot_parameters() -> Any:
    import inspect

    from nanobot_lambda.adapters.telegram.client import TelegramBot

    return inspect.signature(TelegramBot.__init__).parameters


def _caller(key: str) -> str:
    """Whose request it was: the workers' key is agent_turn's; anything else came from this
    process, where the webhook runs (its key is the stack's, or whatever credentials the
    process had when its clients were made: a test suite's earlier test may have made them)."""
    return "agent_turn" if key == WORKER_KEY else "webhook"


def _dynamodb_per_turn(requests: AwsRequestLog, turns: int) -> dict[str, dict[str, float]]:
    from _load_parts import DYNAMODB_READS, DYNAMODB_WRITES

    figures: dict[str, dict[str, float]] = {}
    if not turns:
        return figures
    for name in ("agent_turn", "webhook"):
        mine: Counter[str] = Counter()
        for (caller, op), n in requests.dynamodb.items():
            if _caller(caller) == name:
                mine[op] += n
        read_units = sum(u for k, u in requests.read_units.items() if _caller(k) == name)
        write_units = sum(u for k, u in requests.write_units.items() if _caller(k) == name)
        figures[name] = {
            "reads": sum(n for op, n in mine.items() if op in DYNAMODB_READS) / turns,
            "writes": sum(n for op, n in mine.items() if op in DYNAMODB_WRITES) / turns,
            "read_units": read_units / turns,
            "write_units": write_units / turns,
            **{op: n / turns for op, n in sorted(mine.items())},
        }
    return figures


def _seconds(value: float | None) -> str:
    return "    -" if value is None else f"{value:5.2f}"


def _bottleneck(f: Figures) -> str:
    """Where the rate was lost, as far as the figures tell."""
    if f.posted_per_second < 0.9 * f.offered_per_second:
        return (
            f"the webhook (one container, in this process beside moto and the stand-ins) "
            f"took the messages at {f.posted_per_second:.2f}/s, so they arrived late; "
            f"load average {f.load_average:.1f} on {os.cpu_count()} cores"
        )
    if f.peak_busy >= f.concurrency:
        return (
            f"all {f.concurrency} slots were busy and {f.backlog} messages waited after the "
            f"last post: too few slots for this rate, or too little CPU for them"
        )
    return (
        f"{f.peak_busy} of {f.concurrency} slots busy at most, {f.backlog} messages waiting "
        "after the last post: one chat's messages wait for each other, or the CPU was short"
    )


def report(figures: Figures) -> None:
    f = figures
    floor = (
        ""
        if f.offered_per_second <= f.peak_per_second
        else (
            f" (the peak, {f.peak_per_second:g}/s, would give "
            f"{f.peak_per_second * f.seconds:.2g} messages in {f.seconds:g} s: raised to "
            f"{f.offered_per_second * f.seconds:.0f}, --min-turns)"
        )
    )
    print(f"\n{f.people} people: offered {f.offered_per_second:.3f} turns/s{floor}", flush=True)
    print(
        f"  turns {f.turns}  posted {f.posted_per_second:.3f}/s (webhook lag p95 "
        f"{f.post_lag_p95:.2f} s)  answered {f.answered} ({f.answered_in_window} within "
        f"{f.seconds:g} s)  achieved {f.achieved_per_second:.3f} turns/s sustained"
    )
    print(
        f"  queued after the last post {f.backlog}, queue wait p95 "
        f"{_seconds(f.queue_wait_p95)} s, invocation p50 {_seconds(f.invocation_p50)} s, "
        f"load average {f.load_average:.1f} on {os.cpu_count()} cores"
    )
    if not f.kept_up:
        print(
            f"  THE RATE WAS NOT SUSTAINED: offered {f.offered_per_second:.2f}/s, achieved "
            f"{f.achieved_per_second:.2f}/s: {_bottleneck(f)}"
        )
    print(
        f"  first text p50 {_seconds(f.first_text_p50)} s  p95 {_seconds(f.first_text_p95)} s"
        f" (p95 {_seconds(f.first_text_after_webhook_p95)} s after the webhook's answer)"
        f"   429s {f.rate_limited} of {f.sends} sends ({100 * f.rate_limited_share:.1f} %)"
        f" {json.dumps(f.rate_limited_by_method)}"
    )
    print(
        f"  dead-lettered {f.dead_lettered}  lost {f.lost}  unfinished {f.unfinished}  "
        f"webhook refused {f.webhook_refused}   model calls/turn {f.model_calls_per_turn:.2f} "
        f"(asked more than once: {f.asked_more_than_once})"
    )
    slept = (
        "n/a (the client takes no sleep)"
        if f.slept_seconds is None
        else (
            f"{f.slept_seconds:.1f} s in {f.sleeps} sleeps (its 429s asked "
            f"{f.retry_after_seconds.get('sendMessage', 0):.0f} s)"
        )
    )
    print(
        f"  invocations {f.invocations} ({f.failed_invocations} failed), busy at most "
        f"{f.peak_busy}/{f.concurrency} (Little's law: {f.needed_concurrency:.1f} needed)   "
        f"slept in invocations: {slept}"
    )
    for caller, per_turn in f.dynamodb.items():
        operations = ", ".join(
            f"{op} {n:.1f}"
            for op, n in per_turn.items()
            if op not in ("reads", "writes", "read_units", "write_units")
        )
        print(
            f"  DynamoDB/turn {caller:<10} reads {per_turn['reads']:.1f} writes "
            f"{per_turn['writes']:.1f}  ~RCU {per_turn['read_units']:.1f} ~WCU "
            f"{per_turn['write_units']:.1f}  ({operations})"
        )
    conflicts = ", ".join(f"{what}: {n}" for what, n in f.conflicts.items()) or "none"
    print(f"  conflicts: {conflicts}")
    s3 = ", ".join(f"{what} {n:.1f}" for what, n in f.s3_per_turn.items())
    print(f"  S3/turn: {s3}")


def goals(runs: list[Figures]) -> None:
    """The issue's goals, for the largest size run against the 100-person run."""
    print("\nGoals (issue 41), for the largest size run:")
    if not runs:
        return
    top = max(runs, key=lambda f: f.people)
    base = next((f for f in runs if f.people == 100), None)
    who = f"{top.people} people"
    if top.people < 10_000:
        print(f"  (the 10,000-person peak was not run; the largest here is {who})")
    checks = [
        (
            "no turn lost or dead-lettered",
            top.lost + top.dead_lettered == 0,
            f"lost {top.lost}, dead-lettered {top.dead_lettered}"
            + (f"; {top.unfinished} unfinished when the drain ended" if top.unfinished else ""),
        ),
        (
            "no turn's model asked twice",
            top.asked_more_than_once == 0,
            f"{top.asked_more_than_once} turns asked more than once",
        ),
        (
            "429s under 1 % of sends",
            top.rate_limited_share < 0.01,
            f"{100 * top.rate_limited_share:.1f} %",
        ),
    ]
    if base is not None and top.first_text_p95 is not None and base.first_text_p95 is not None:
        checks.append(
            (
                "first-text p95 within 2 s of the 100-person run",
                top.first_text_p95 <= base.first_text_p95 + 2,
                f"{top.first_text_p95:.2f} s vs {base.first_text_p95:.2f} s",
            )
        )
    else:
        checks.append(("first-text p95 within 2 s of the 100-person run", None, "not measured"))
    for name, met, figure in checks:
        verdict = "not measured" if met is None else ("met" if met else "NOT met")
        print(f"  {who}: {name}: {verdict} ({figure})")
    if not top.kept_up:
        print(
            f"  (this machine did not sustain {top.offered_per_second:.2f} turns/s: the figures "
            "are those of a backed-up queue, not of the deployment at that rate)"
        )


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", default="1,100,1000,10000", help="sizes, comma-separated")
    parser.add_argument("--seconds", type=float, default=60, help="arrivals per size, s")
    parser.add_argument("--per-person", type=float, default=0.001, help="turns/s per person")
    parser.add_argument("--min-turns", type=int, default=5, help="messages per size at least")
    parser.add_argument("--concurrency", type=int, default=16, help="agent_turn at once")
    parser.add_argument("--tokens", type=int, default=200, help="words in each answer")
    parser.add_argument("--first-token", type=float, default=0.5, help="s to the first token")
    parser.add_argument("--tokens-per-second", type=float, default=50.0)
    parser.add_argument("--chat-burst", type=float, default=3, help="sends a chat may burst")
    parser.add_argument("--free-drafts", action="store_true", help="drafts not rate-limited")
    parser.add_argument("--drain", type=float, default=300, help="s to wait for the queue")
    parser.add_argument("--cold", action="store_true", help="no warm-up turn per container")
    parser.add_argument(
        "--parameter",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a template parameter, e.g. SpendLimitDailyUsd=100 (the overall total's items)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="also write the figures to this file")
    return parser.parse_args(argv)


def telegram_limits(args: argparse.Namespace) -> TelegramLimits:
    return TelegramLimits(
        per_chat=Limit(per_second=1, burst=args.chat_burst), count_drafts=not args.free_drafts
    )


def main() -> None:
    args = parse_arguments()
    from _moto import compile_bytecode  # here: the workers import this file again (moto is slow)

    compile_bytecode(ROOT)  # the workers' init reads it, as on Lambda
    limits = telegram_limits(args)
    log_dir = Path(tempfile.mkdtemp(prefix="nanobot-load-"))
    print(
        f"Peak {args.per_person:g} turns/s per person ({args.per_person * 10_000:g}/s for "
        f"10,000 people), Poisson arrivals for {args.seconds:g} s per size; answers of "
        f"{args.tokens} tokens, first after {args.first_token:g} s, "
        f"{args.tokens_per_second:g}/s; up to {args.concurrency} agent_turn at once; Telegram's "
        f"limits: {limits.describe()}; {os.cpu_count()} cores; logs in {log_dir}",
        flush=True,
    )
    runs = []
    for people in [int(size) for size in args.people.split(",")]:
        figures = run_size(people, args, log_dir)
        report(figures)
        runs.append(figures)
        if args.json:  # after each size: a long run stopped later keeps what it measured
            Path(args.json).write_text(json.dumps([asdict(f) for f in runs], indent=2))
    goals(runs)


if __name__ == "__main__":
    main()
