"""The code sandbox function, invoked synchronously with boto3 (`lambda:InvokeFunction` on that
one function is all agent_turn may do with Lambda). The payload is JSON with files as base64
(`functions/sandbox.py` is the other side); a run the sandbox refused, or a function error, comes
back as a ToolError for the model.

The system prompt names the programs the sandbox's runs find, so a container's first turn asks
the sandbox for them before its first model request, and after a quiet hour the sandbox
function is cold too. `ask_programs_early` asks during agent_turn's init instead, in a thread
beside the heavy imports; the first `programs()` takes that answer (waiting for it if it is
still coming), and if the early ask failed, asks again itself as it would have.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from nanobot_lambda.adapters.aws.errors import error_code
from nanobot_lambda.core.errors import ToolError
from nanobot_lambda.core.sandbox import SandboxResult, SandboxRun


class LambdaSandbox:
    """The `Sandbox` port on the sandbox function."""

    def __init__(self, function_name: str, client: Any) -> None:  # boto3's Lambda client
        self._function = function_name
        self._client = client
        self._early: threading.Thread | None = None
        self._early_programs: frozenset[str] | None = None

    def ask_programs_early(self) -> LambdaSandbox:
        """Ask for the programs now, in a thread; the first `programs()` takes the answer."""
        self._early = threading.Thread(target=self._ask_early, name="sandbox-programs", daemon=True)
        self._early.start()
        return self

    def _ask_early(self) -> None:
        with contextlib.suppress(ToolError):  # the first turn asks again, and says what failed
            self._early_programs = self._ask_programs()

    def programs(self) -> frozenset[str]:
        early, self._early = self._early, None
        if early is not None:
            early.join()  # bounded by the client's own time-outs, as asking here would be
            if self._early_programs is not None:
                return self._early_programs
        return self._ask_programs()

    def _ask_programs(self) -> frozenset[str]:
        payload = self._invoke({"version": 1, "action": "programs"})
        return frozenset(str(name) for name in payload.get("programs") or ())

    def run(self, run: SandboxRun) -> SandboxResult:
        request = {
            "version": 1,
            "language": run.language,
            "code": run.code,
            "files": {path: base64.b64encode(data).decode() for path, data in run.files.items()},
            "timeout_seconds": run.timeout_seconds,
            "memory_mb": run.memory_mb,
            "output_max_chars": run.output_max_chars,
        }
        payload = self._invoke(request)
        return SandboxResult(
            exit_code=payload.get("exit_code"),
            stdout=str(payload.get("stdout", "")),
            stderr=str(payload.get("stderr", "")),
            timed_out=bool(payload.get("timed_out")),
            out_of_memory=bool(payload.get("out_of_memory")),
            truncated=bool(payload.get("truncated")),
            stdout_bytes=_size(payload.get("stdout_bytes")),
            stderr_bytes=_size(payload.get("stderr_bytes")),
            files={
                str(path): base64.b64decode(data)
                for path, data in (payload.get("files") or {}).items()
            },
            skipped=tuple(str(path) for path in payload.get("skipped") or ()),
            duration_ms=int(payload.get("duration_ms") or 0),
        )

    def _invoke(self, request: dict[str, Any]) -> dict[str, Any]:
        """The function's answer to `request`; ToolError when it failed or refused."""
        try:
            response = self._client.invoke(
                FunctionName=self._function,
                InvocationType="RequestResponse",
                Payload=json.dumps(request).encode(),
            )
            payload: Any = json.loads(response["Payload"].read() or b"null")
        except ClientError as error:
            raise ToolError(f"the sandbox could not be reached ({error_code(error)})") from None
        except (BotoCoreError, ValueError) as error:
            raise ToolError(f"the sandbox could not be reached ({type(error).__name__})") from None
        if response.get("FunctionError"):
            message = payload.get("errorMessage", "") if isinstance(payload, dict) else ""
            raise ToolError(f"the sandbox failed: {str(message)[:300] or 'no reason given'}")
        if not isinstance(payload, dict) or not payload.get("ok"):
            reason = payload.get("error") if isinstance(payload, dict) else None
            raise ToolError(f"the sandbox refused the run: {reason or 'malformed answer'}")
        return payload


def _size(value: Any) -> int | None:
    """A stream's size as the sandbox told it; None from a sandbox that does not tell."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None
