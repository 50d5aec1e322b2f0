"""agent_turn in a worker process, a Lambda "container" the soak can kill for real (SIGKILL).

A crash must be a process death: an exception could be caught by the product and a `finally`
would run, neither of which happens when Lambda's sandbox dies. So the handler runs in a
worker process, fed by the harness's QueuePoller (Lambda's SQS event source mapping, as the
local stack has it): the poller hands it an event, the worker answers with the handler's
result. A worker that dies fails the whole batch; the poller then makes the message visible
again a second later (standing in for the visibility timeout, as the local stack does for
retries) and the next invocation gets a fresh worker, which imports the handler file again:
Lambda's init phase in a new container.

Workers are forked from multiprocessing's fork server, which has imported litellm, boto3 and
the package once, so a new container costs the handler's own init (its clients, its settings),
not the seconds of importing litellm (`WorkerPool.cold_starts` keeps each one's time).
Each worker's output (the functions' logs) goes to one file per soak run.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from multiprocessing import forkserver
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

# Imported by the fork server once, so that each worker starts with them loaded. The model
# adapter first: it makes litellm read its bundled cost map, not fetch one, when it imports it.
PRELOAD = [
    "nanobot_lambda.adapters.llm.litellm_model",
    "boto3",
    "botocore.session",
    "requests",
    "aws_lambda_powertools",
    "aws_lambda_powertools.utilities.batch",
    "nanobot_lambda.functions.agent_turn.dispatch",
    "nanobot_lambda.adapters.telegram.client",
    "nanobot_lambda.adapters.aws.sessions",
    "nanobot_lambda.adapters.aws.journal",
    # What agent_turn's init imports on its own: the OpenAI SDK's resources that it imports for
    # an `openai/` model (litellm_model/connections.py), the X-Ray SDK of Powertools' Tracer.
    "openai.resources",
    "httpcore",
    "aws_xray_sdk.core",
    "nanobot_lambda.functions.agent_turn.toolbox",
]


def _nothing() -> None:
    """A first fork, to wait until the fork server has imported PRELOAD."""


class WorkerDied(Exception):
    """The worker process died during the invocation (killed, or it crashed)."""


def _serve(
    connection: Connection,
    environ: dict[str, str],
    handler_file: str,
    log_path: str,
    retries_wait: bool = True,
) -> None:
    """The worker: Lambda's init (import the handler file), then one invocation per event."""
    if not retries_wait:
        _retry_at_once()
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    kept = {"TIKTOKEN_CACHE_DIR": os.environ.get("TIKTOKEN_CACHE_DIR", "")}  # set by litellm
    os.environ.clear()
    os.environ.update({k: v for k, v in kept.items() if v})
    os.environ.update(environ)
    from nanobot_lambda.operator.local.runtime import LocalLambdaContext, load_handler_module

    module = load_handler_module(Path(handler_file).parent, "soak_agent_turn")
    connection.send(("ready", os.getpid()))
    while True:
        try:
            event, function_name, timeout = connection.recv()
        except EOFError:
            os._exit(0)
        context = LocalLambdaContext(function_name, timeout_seconds=timeout)
        try:
            connection.send(("ok", module.handler(event, context)))
        except Exception as error:  # the runtime reports it; the poller fails the batch
            connection.send(("error", f"{type(error).__name__}: {error}"))


def _retry_at_once() -> None:
    """The handler's clients retry without their pauses: a model call at once, a Bot API call
    at once (whatever retry_after Telegram gave). In the worker only, before its init."""
    from nanobot_lambda.adapters.llm.litellm_model import retries
    from nanobot_lambda.adapters.telegram.client import TelegramBot

    retries.RETRY_FIRST_PAUSE = 0.0
    assert TelegramBot.__init__.__kwdefaults__ is not None
    TelegramBot.__init__.__kwdefaults__["sleep"] = lambda seconds: None


class WorkerPool:
    """One warm worker at a time, replaced after it dies; `invoke` is the poller's handler."""

    def __init__(
        self,
        handler_file: Path,
        environ: dict[str, str],
        log_path: Path,
        *,
        function_name: str = "agent_turn",
        timeout_seconds: float = 300,
        retries_wait: bool = True,
    ) -> None:
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(PRELOAD)
        started = time.monotonic()
        forkserver.ensure_running()  # once per process; its first fork waits for PRELOAD
        warm_up = self._context.Process(target=_nothing, daemon=True)
        warm_up.start()
        warm_up.join(120)
        self.server_start = time.monotonic() - started
        self._handler_file = str(handler_file)
        self._environ = dict(environ)
        self._log_path = str(log_path)
        self._function_name = function_name
        self._timeout = timeout_seconds
        self._retries_wait = retries_wait
        self._process: BaseProcess | None = None
        self._connection: Connection | None = None
        self.cold_starts: list[float] = []  # seconds from fork to a loaded handler
        self.deaths = 0
        self.killed = 0  # of which by kill()

    def _start(self) -> Connection:
        started = time.monotonic()
        ours, theirs = self._context.Pipe()
        process = self._context.Process(
            target=_serve,
            args=(theirs, self._environ, self._handler_file, self._log_path, self._retries_wait),
            daemon=True,
        )
        process.start()
        theirs.close()
        if not ours.poll(120):
            process.kill()
            raise RuntimeError("the agent_turn worker did not start within 120 s")
        try:
            ours.recv()  # ("ready", pid)
        except EOFError:
            message = f"the agent_turn worker failed at init; see {self._log_path}"
            raise RuntimeError(message) from None
        self.cold_starts.append(time.monotonic() - started)
        self._process, self._connection = process, ours
        return ours

    def invoke(self, event: dict[str, Any], context: Any = None) -> Any:
        """Run the handler on `event` in the worker (a fresh one if the last one died)."""
        connection = self._connection or self._start()
        connection.send((event, self._function_name, self._timeout))
        try:
            if not connection.poll(self._timeout):
                self.kill()  # Lambda ends an invocation at its timeout
                raise WorkerDied("timed out")
            kind, value = connection.recv()
        except (EOFError, OSError):
            self._forget()
            raise WorkerDied("the worker died during the invocation") from None
        if kind == "error":
            raise RuntimeError(value)  # an unhandled error: the batch fails, as on Lambda
        return value

    def kill(self) -> None:
        """SIGKILL the worker and wait until it is gone (its calls in flight go unanswered)."""
        process = self._process
        if process is None:
            return
        process.kill()
        process.join(10)
        self.killed += 1

    def _forget(self) -> None:
        if self._process is not None:
            self._process.join(10)
            self.deaths += 1
        if self._connection is not None:
            self._connection.close()
        self._process, self._connection = None, None

    def close(self) -> None:
        if self._process is not None and self._process.is_alive():
            self._process.kill()
            self._process.join(10)
        if self._connection is not None:
            self._connection.close()
        self._process, self._connection = None, None
