"""The chaos soak of issue 25 through the local stack: many chats, interleaved messages,
duplicate posts, SQS redeliveries of answered jobs, crashes at every journal boundary, model
re-runs that answer differently, model errors and slow streams, Telegram 429/500/drops.

The parts, each real where a user would meet it:
- the local stack (infra/template.yaml on a moto server, the local Bot API); its webhook
  handler takes the posts in-process, as API Gateway would call it;
- agent_turn in a worker process fed by a QueuePoller (worker.py), killed for real;
- two chaos proxies (proxy.py) between the worker and moto / the Bot API, where the plan's
  faults strike (`FaultInjector`);
- the chaos model (chaos_model.py), the worker's LLM_API_BASE;
- the checker (checker.py), reading what the Bot API accepted and what DynamoDB holds.

A run posts the plan's waves (a few rounds of every chat's next message), drains the queue after
each (re-delivering some answered jobs with a new deduplication id), then checks and returns
the figures: `chats msgs dup lost out_of_order dlq window crashes elapsed session stuck`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from nanobot_lambda.adapters.aws.sessions import DynamoSessionStore
from nanobot_lambda.core.jobs import TelegramUpdateJob
from nanobot_lambda.operator.local.moto_server import service_of
from nanobot_lambda.operator.local.runtime import LocalLambdaContext, QueuePoller
from nanobot_lambda.operator.local.stack import (
    FUNCTIONS,
    LocalStack,
    LocalTelegram,
    LocalUser,
)
from tests.soak.chaos_model import ChaosModel
from tests.soak.checker import Figures, Verdict, check, read_seen
from tests.soak.plan import NO_FAULTS, BoundaryKind, RunFaults, SoakPlan, tag_of
from tests.soak.proxy import Call, ChaosProxy, Fault
from tests.soak.worker import WorkerPool

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "infra" / "template.yaml"
SEND_METHODS = frozenset(
    {
        "sendMessage",
        "sendPhoto",
        "sendDocument",
        "sendAudio",
        "sendVoice",
        "editMessageReplyMarkup",
        "answerCallbackQuery",
        "setMessageReaction",
    }
)
DYNAMODB_WRITES = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
)
_JOB_TAG = re.compile(r"\bm c(\d+) k(\d+)\b")
REDELIVERY_PREFIX = "soak-redelivery-"
DRAIN_SECONDS = 600  # a wave that does not drain by then is stuck


@dataclass
class InjectedFault:
    tag: str
    attempt: int
    kind: BoundaryKind
    nth: int
    what: str  # "crash before", "crash after", "429", "500", "drop"
    call: str  # the method or operation


@dataclass
class FaultInjector:
    """Decides, for each call the worker makes, whether a fault of the plan strikes it."""

    plan: SoakPlan
    injected: list[InjectedFault] = field(default_factory=list)
    # (chat_id, message_id) of messages Telegram accepted whose answer the client never got
    windows: set[tuple[int, int]] = field(default_factory=set)
    # (chat_id, message_id) -> the tag of the job the worker ran when it sent that message
    sent_for: dict[tuple[int, int], str] = field(default_factory=dict)
    _job: tuple[str, int] | None = None  # (tag, attempt) of the job running, if faults apply
    # The last message of this run Telegram accepted that no DynamoDB write has followed yet:
    # until its record is written, a death leaves it inside the documented window.
    _unrecorded: tuple[int, int] | None = None
    _tag: str | None = None  # the tag of the job running, for attribution
    _faults: RunFaults = NO_FAULTS
    _counts: dict[BoundaryKind, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start_job(self, tag: str | None, attempt: int, faults_apply: bool) -> None:
        with self._lock:
            self._tag = tag
            self._job = (tag, attempt) if tag is not None and faults_apply else None
            self._faults = self.plan.run_faults(*self._job) if self._job else NO_FAULTS
            self._counts = {}
            self._unrecorded = None

    def _strike(self, kind: BoundaryKind, call: str) -> Fault | None:
        with self._lock:
            if self._job is None:
                return None
            nth = self._counts.get(kind, 0) + 1
            self._counts[kind] = nth
            tag, attempt = self._job
            crash = self._faults.crash
            if crash is not None and (crash.kind, crash.nth) == (kind, nth):
                self._job = None  # the worker dies: nothing more strikes this run
                if self._unrecorded is not None and kind == "dynamodb" and crash.when == "before":
                    # Killed between Telegram's answer for a message and its record: the window.
                    self.windows.add(self._unrecorded)
                self.injected.append(
                    InjectedFault(tag, attempt, kind, nth, f"crash {crash.when}", call)
                )
                return Fault("kill_before" if crash.when == "before" else "kill_after")
            telegram = self._faults.telegram.get((kind, nth))
            if telegram is None:
                return None
            self.injected.append(InjectedFault(tag, attempt, kind, nth, telegram, call))
            if telegram == "drop":
                return Fault("drop_after")
            body: dict[str, Any] = {"ok": False, "error_code": int(telegram)}
            if telegram == "429":
                body.update(
                    description="Too Many Requests: retry after 1", parameters={"retry_after": 1}
                )
            else:
                body["description"] = "Internal Server Error"
            return Fault("answer", int(telegram), json.dumps(body).encode())

    # -- the Bot API's side ----------------------------------------------------------------

    def telegram_call(self, call: Call) -> Fault | None:
        method = call.path.partition("?")[0].rstrip("/").rsplit("/", 1)[-1]
        if call.path.startswith("/file/"):
            return None
        if method in SEND_METHODS:
            return self._strike("send", method)
        if method == "sendMessageDraft":
            return self._strike("draft", method)
        return None

    def telegram_performed(self, call: Call, status: int, body: bytes, answered: bool) -> None:
        """Note which job each message was sent for, and those sent without an answer."""
        try:
            result = json.loads(body).get("result")
        except ValueError:
            return
        if not isinstance(result, dict) or "message_id" not in result:
            return
        key = (int(result["chat"]["id"]), int(result["message_id"]))
        with self._lock:
            if self._tag is not None:
                self.sent_for[key] = self._tag
            if not answered:
                self.windows.add(key)
            else:
                self._unrecorded = key

    # -- AWS's side ------------------------------------------------------------------------

    def aws_call(self, call: Call) -> Fault | None:
        service = service_of({"HTTP_AUTHORIZATION": call.headers.get("authorization", "")})
        if service == "dynamodb":
            operation = call.headers.get("x-amz-target", "").rpartition(".")[2]
            if operation in DYNAMODB_WRITES:
                return self._strike("dynamodb", operation)
        elif service == "s3" and call.method == "PUT" and "?" not in call.path:
            return self._strike("s3", "PutObject")
        return None

    def aws_performed(self, call: Call, status: int, body: bytes, answered: bool) -> None:
        """A DynamoDB write the worker heard back from closes the window of the message before
        it (the outbox records a message with its next write)."""
        target = call.headers.get("x-amz-target", "")
        if answered and target.rpartition(".")[2] in DYNAMODB_WRITES:
            with self._lock:
                self._unrecorded = None


@dataclass
class SoakRun:
    plan: SoakPlan
    verdict: Verdict
    injected: list[InjectedFault]
    cold_starts: list[float]
    server_start: float  # seconds the fork server took to start (0 when it was running)
    model_requests: int
    model_failures: int
    worker_log: Path

    @property
    def figures(self) -> Figures:
        return self.verdict.figures


def _update(plan: SoakPlan, chat: int, number: int, update_id: int) -> dict[str, Any]:
    """A real-shaped Update: the soak user `chat` writes message `number` in their private
    chat."""
    chat_id = plan.chat_id(chat)
    user = LocalUser(id=chat_id, username=f"soak_{chat}", first_name=f"Soak{chat}")
    return {
        "update_id": update_id,
        "message": {
            "message_id": number,
            "from": user.as_telegram(),
            "chat": {
                "id": chat_id,
                "first_name": user.first_name,
                "username": user.username,
                "type": "private",
            },
            "date": int(time.time()),
            "text": plan.message(chat, number).text,
        },
    }


def run_soak(
    plan: SoakPlan, *, log_dir: Path, moto_endpoint: str | None = None, retries_wait: bool = True
) -> SoakRun:
    """Run the plan through a fresh local stack and check it. `retries_wait`: a failed job's
    message is visible again a second later, and the model's and the Bot API client's retries
    pause as deployed; without, all at once (what a retry does is the same, sooner)."""
    started = time.monotonic()
    model = ChaosModel(plan).start()
    allow_from = ",".join(str(plan.chat_id(chat)) for chat in range(plan.chats))
    stack = LocalStack(
        TEMPLATE,
        model_env=model.env(),
        endpoint_url=moto_endpoint,
        telegram=LocalTelegram(user=LocalUser(id=plan.chat_id(0)), allow_from=allow_from),
    )
    worker_log = log_dir / f"soak-seed{plan.seed}-agent_turn.log"
    worker_log.write_text("")
    pool: WorkerPool | None = None
    proxies: list[ChaosProxy] = []
    try:
        stack.start()
        injector = FaultInjector(plan)

        def kill_worker() -> None:  # the proxies' threads kill the worker the poller runs
            if pool is not None:
                pool.kill()

        telegram_proxy = ChaosProxy(
            stack.bot_api.url,
            intercept=injector.telegram_call,
            kill=kill_worker,
            performed=injector.telegram_performed,
        ).start()
        aws_endpoint = boto3.client("sqs").meta.endpoint_url
        aws_proxy = ChaosProxy(
            aws_endpoint,
            intercept=injector.aws_call,
            kill=kill_worker,
            performed=injector.aws_performed,
        ).start()
        proxies += [telegram_proxy, aws_proxy]
        environ = _worker_environ(stack, aws_proxy.url, telegram_proxy.url)
        code_uri = stack.template.template["Resources"][FUNCTIONS["agent_turn"]]["Properties"][
            "CodeUri"
        ]
        handler_file = (TEMPLATE.parent / code_uri).resolve() / "app.py"
        pool = WorkerPool(handler_file, environ, worker_log, retries_wait=retries_wait)
        figures = _drive(plan, stack, injector, pool, retry_delay=1 if retries_wait else 0)
        seen = read_seen(stack.bot_api.messages, injector.sent_for, injector.windows)
        store = DynamoSessionStore(stack.template.refs["SessionsTable"], boto3.client("dynamodb"))
        sessions = {
            plan.chat_id(chat): store.load(f"telegram:{plan.chat_id(chat)}", 500).messages
            for chat in range(plan.chats)
        }
        verdict = check(plan, seen, sessions, _what_struck(plan, injector.injected))
        verdict.figures.dlq, verdict.figures.stuck = figures.dlq, figures.stuck
        verdict.figures.crashes = sum(1 for f in injector.injected if f.what.startswith("crash"))
        if figures.stuck:
            verdict.failures.append(f"seed {plan.seed}: {figures.stuck} queued jobs stuck")
        if figures.dlq:
            verdict.failures.append(
                f"seed {plan.seed}: {figures.dlq} jobs in the dead-letter queue"
            )
        verdict.figures.elapsed = time.monotonic() - started
        return SoakRun(
            plan,
            verdict,
            injector.injected,
            pool.cold_starts,
            pool.server_start,
            sum(model.asked.values()),
            model.failed,
            worker_log,
        )
    finally:
        if pool is not None:
            pool.close()
        for proxy in proxies:
            proxy.stop()
        stack.stop()
        model.stop()


def _what_struck(plan: SoakPlan, injected: list[InjectedFault]) -> dict[str, list[str]]:
    """Per message, what the plan did to it, for the failure reports."""
    struck: dict[str, list[str]] = {}
    for chat in range(plan.chats):
        for number in range(1, plan.messages + 1):
            message, notes = plan.message(chat, number), []
            if plan.model_errors(message.tag) != "none":
                notes.append(f"model errors {plan.model_errors(message.tag)}")
            if message.posted_twice:
                notes.append("posted twice")
            if message.redelivered:
                notes.append("its job redelivered after the answer")
            struck[message.tag] = notes
    for fault in injected:
        struck.setdefault(fault.tag, []).append(
            f"run {fault.attempt}: {fault.what} at {fault.kind} #{fault.nth} ({fault.call})"
        )
    return struck


def _worker_environ(stack: LocalStack, aws_url: str, telegram_url: str) -> dict[str, str]:
    """agent_turn's environment as the stack gives it, its AWS and Bot API through the
    proxies, and an access key of its own (moto takes any)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    environ.update(stack.environment["agent_turn"])
    environ.update(
        AWS_ENDPOINT_URL=aws_url,
        AWS_ACCESS_KEY_ID="soak-agent-turn",
        TELEGRAM_API_BASE=telegram_url,
    )
    return environ


def _drive(
    plan: SoakPlan,
    stack: LocalStack,
    injector: FaultInjector,
    pool: WorkerPool,
    *,
    retry_delay: int,
) -> Figures:
    """Post the waves, drain the queue after each, redeliver answered jobs; the queue's
    figures (dead letters, stuck jobs)."""
    sqs = boto3.client("sqs")
    queue_url = stack.template.refs["TurnQueue"]

    def handler(event: dict[str, Any], context: Any) -> Any:
        (record,) = event["Records"]  # the template's BatchSize is 1
        found = _JOB_TAG.search(record["body"])
        tag = tag_of(int(found.group(1)), int(found.group(2))) if found else None
        attributes = record["attributes"]
        attempt = int(attributes.get("ApproximateReceiveCount", "1"))
        first_delivery = not attributes.get("MessageDeduplicationId", "").startswith(
            REDELIVERY_PREFIX
        )
        kind = json.loads(record["body"]).get("kind")
        injector.start_job(tag, attempt, first_delivery and kind == "telegram_update")
        try:
            return pool.invoke(event)
        finally:
            injector.start_job(None, 0, False)

    poller = QueuePoller(
        sqs,
        queue_url,
        handler,
        context=lambda: LocalLambdaContext("agent_turn"),
        batch_size=stack.template.queue_mapping(FUNCTIONS["agent_turn"]).batch_size,
        retry_delay=retry_delay,
    )
    figures = Figures()
    update_ids = iter(range(plan.seed * 1_000_000 + 1, plan.seed * 1_000_000 + 999_999))
    redeliver: list[tuple[int, dict[str, Any]]] = []
    for wave in plan.waves():
        _redeliver(sqs, queue_url, redeliver)
        redeliver = []
        for message in wave:
            update = _update(plan, message.chat, message.number, next(update_ids))
            for _ in range(2 if message.posted_twice else 1):
                stack.post_update(update)
            if message.redelivered:
                redeliver.append((plan.chat_id(message.chat), update))
        if not _drained(poller):
            break
    else:
        _redeliver(sqs, queue_url, redeliver)
        _drained(poller)
    figures.stuck = _queued(sqs, queue_url)
    figures.dlq = _queued(sqs, stack.template.refs["TurnDeadLetterQueue"])
    return figures


def _redeliver(sqs: Any, queue_url: str, answered: list[tuple[int, dict[str, Any]]]) -> None:
    """SQS delivers these answered jobs again: the same body, a new deduplication id (a lost
    acknowledgement, a replay from the dead-letter queue)."""
    for chat_id, update in answered:
        sqs.send_message(
            QueueUrl=queue_url,
            MessageBody=TelegramUpdateJob(update=update).model_dump_json(),
            MessageGroupId=f"telegram:{chat_id}",
            MessageDeduplicationId=REDELIVERY_PREFIX + str(update["update_id"]),
        )


def _drained(poller: QueuePoller) -> bool:
    try:
        poller.drain(max_seconds=DRAIN_SECONDS)
    except TimeoutError:
        logging.getLogger(__name__).error("the queue did not drain in %d s", DRAIN_SECONDS)
        return False
    return True


def _queued(sqs: Any, queue_url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(value) for value in attributes.values())
