"""Lambda's Invoke API on 127.0.0.1, for the functions the local stack invokes with boto3.

moto stores Lambda functions but cannot run them here (it needs Docker), so this stand-in runs
them itself: `POST /2015-03-31/functions/{FunctionName}/invocations`, as botocore sends it
(the name, a qualified name or an ARN, URL-encoded; a `Qualifier` is accepted and ignored).

Each invocation runs the registered handler file in a fresh worker process (`sys.executable`),
as Lambda runs a function in its own sandbox: with the environment it was registered with (the
template's, plus PATH and LANG as Lambda sets them; nothing of the caller's, not even HOME, no
AWS credentials), in its own process group, killed at the function's timeout. The answers are
Lambda's: 200 with the JSON result; 200 with `X-Amz-Function-Error: Unhandled` and
`{"errorMessage", "errorType"}` for an exception, a timeout ("Task timed out after N seconds"),
a result that is not JSON or a worker that died; 404 `ResourceNotFoundException` for an unknown
function. `InvocationType: Event` answers 202 and runs the function in the background; `DryRun`
answers 204.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from nanobot_lambda.operator.local.http import BackgroundHttpServer

logger = logging.getLogger(__name__)

REGION = "us-east-1"
ACCOUNT = "123456789012"
DEFAULT_TIMEOUT_SECONDS = 60.0
_INVOKE_PATH = ("2015-03-31", "functions")
_FUNCTION_ERROR = "Unhandled"
WORKER_PATH = "/usr/local/bin:/usr/bin:/bin"

# Runs in the worker: argv[1] is the handler file; the event is on stdin. The result goes to a
# copy of stdout, and fd 1 then points at stderr, so whatever the handler (or a process it
# starts) prints is a log line, as on Lambda, never part of the result.
_RUNNER = r"""
import importlib.util, json, os, sys, traceback
result_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr
def answer(outcome):
    result_out.write(json.dumps(outcome))
    result_out.close()
    sys.stderr.flush()
    os._exit(0)
def failure(error, message=None, error_type=None):
    return {"ok": False, "error": {
        "errorMessage": str(error) if message is None else message,
        "errorType": error_type or type(error).__name__,
        "stackTrace": traceback.format_tb(error.__traceback__),
    }}
try:
    path = sys.argv[1]
    sys.path.insert(0, os.path.dirname(path))
    event = json.loads(sys.stdin.read() or "{}")
    spec = importlib.util.spec_from_file_location("lambda_function", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.handler(event, None)
except BaseException as error:
    answer(failure(error))
try:
    answer({"ok": True, "result": json.dumps(result)})
except BaseException as error:
    answer(failure(error, f"Unable to marshal response: {error}", "Runtime.MarshalError"))
"""


@dataclass(frozen=True)
class LocalFunction:
    name: str
    handler_file: Path
    environ: dict[str, str]
    timeout_seconds: float


@dataclass(frozen=True)
class InvokeResult:
    """What one invocation answers: its JSON payload, and Lambda's function error if any."""

    payload: bytes
    function_error: str | None = None


def function_name(identifier: str) -> str:
    """The function a FunctionName names: a name, `name:qualifier`, `account:function:name`
    or a full ARN (`arn:aws:lambda:region:account:function:name[:qualifier]`)."""
    parts = identifier.split(":")
    if "function" in parts[:-1]:
        return parts[parts.index("function") + 1]
    return parts[0]


def _error(message: str, error_type: str) -> bytes:
    return json.dumps({"errorMessage": message, "errorType": error_type}).encode()


class LocalLambdas(BackgroundHttpServer):
    """Registered functions, invoked over Lambda's Invoke API, each call in a fresh worker."""

    def __init__(self) -> None:
        super().__init__(self._request_handler())
        self.functions: dict[str, LocalFunction] = {}
        self.invocations: list[str] = []  # the function of each invocation, in order
        self._lock = threading.Lock()

    def register(
        self,
        name: str,
        handler_file: Path,
        environ: dict[str, str],
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self.functions[name] = LocalFunction(name, handler_file, dict(environ), timeout_seconds)

    # -- running a function ----------------------------------------------------------------

    def invoke(self, function: LocalFunction, payload: bytes) -> InvokeResult:
        """Run the function's handler on `payload` in a fresh worker process."""
        with self._lock:
            self.invocations.append(function.name)
        request_id = str(uuid.uuid4())
        environ = {
            # As Lambda's: the runtime's own folder first (/var/lang/bin there), no HOME, none
            # of the caller's variables (it may hold real keys).
            "PATH": f"{os.path.dirname(sys.executable)}:{WORKER_PATH}",
            "LANG": "C.UTF-8",  # as Lambda sets LANG (and Python then leaves the locale alone)
            **function.environ,
        }
        with tempfile.TemporaryFile() as log:
            worker = subprocess.Popen(  # noqa: S603 - our own interpreter and runner
                [sys.executable, "-c", _RUNNER, str(function.handler_file)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=environ,
                cwd=function.handler_file.parent,
                start_new_session=True,  # its own process group: killed whole at the end
            )
            try:
                output, _ = worker.communicate(payload, timeout=function.timeout_seconds)
            except subprocess.TimeoutExpired:
                self._kill(worker)
                worker.communicate()
                logger.warning("%s timed out after %s s", function.name, function.timeout_seconds)
                message = (
                    f"RequestId: {request_id} Error: Task timed out after "
                    f"{function.timeout_seconds:.2f} seconds"
                )
                return InvokeResult(_error(message, "Sandbox.Timedout"), _FUNCTION_ERROR)
            finally:
                self._kill(worker)  # what the handler left running goes with the sandbox
                log.seek(0)
                logs = log.read().decode("utf-8", "replace")
                if logs:
                    logger.debug("%s logs:\n%s", function.name, logs)
        try:
            outcome = json.loads(output)
        except ValueError:
            message = (
                f"RequestId: {request_id} Error: Runtime exited with error: "
                f"exit status {worker.returncode}"
            )
            return InvokeResult(_error(message, "Runtime.ExitError"), _FUNCTION_ERROR)
        if not outcome["ok"]:
            return InvokeResult(json.dumps(outcome["error"]).encode(), _FUNCTION_ERROR)
        return InvokeResult(str(outcome["result"]).encode())

    @staticmethod
    def _kill(worker: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(worker.pid, signal.SIGKILL)

    # -- HTTP ------------------------------------------------------------------------------

    def answer(
        self, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) for one POST, as Lambda's Invoke API answers it."""
        parts = [unquote(part) for part in urlsplit(path).path.strip("/").split("/")]
        if len(parts) != 4 or tuple(parts[:2]) != _INVOKE_PATH or parts[3] != "invocations":
            return self._client_error(404, "UnknownOperationException", "Unknown operation")
        function = self.functions.get(function_name(parts[2]))
        if function is None:
            arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function_name(parts[2])}"
            message = f"Function not found: {arn}"
            return self._client_error(404, "ResourceNotFoundException", message)
        try:
            json.loads(body or b"{}")
        except ValueError:
            message = "Could not parse request body into json"
            return self._client_error(400, "InvalidRequestContentException", message)
        invocation_type = {k.lower(): v for k, v in headers.items()}.get(
            "x-amz-invocation-type", "RequestResponse"
        )
        if invocation_type == "DryRun":
            return 204, {}, b""
        if invocation_type == "Event":
            threading.Thread(target=self.invoke, args=(function, body), daemon=True).start()
            return 202, {}, b""
        result = self.invoke(function, body)
        response_headers = {"X-Amz-Executed-Version": "$LATEST"}
        if result.function_error is not None:
            response_headers["X-Amz-Function-Error"] = result.function_error
        return 200, response_headers, result.payload

    @staticmethod
    def _client_error(
        status: int, error_type: str, message: str
    ) -> tuple[int, dict[str, str], bytes]:
        body = json.dumps({"Type": "User", "message": message}).encode()
        return status, {"x-amzn-ErrorType": error_type}, body

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # botocore keeps its connections open

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    status, headers, payload = server.answer(self.path, dict(self.headers), body)
                except Exception:
                    logger.exception("local Lambda invocation failed")
                    status, headers, payload = server._client_error(
                        500, "ServiceException", "The local Lambda failed"
                    )
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
