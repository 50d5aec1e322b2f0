"""agent_turn as the load simulation's workers load it (bench/load.py): the deployed handler
(functions/agent_turn/app.py), unchanged, with the Telegram client's retry sleeps counted.

The Bot API client (adapters/telegram/client.py) sleeps inside the invocation before it tries a
429 again (retry_after) or a 5xx; those are seconds a Lambda bills. Each `TelegramBot` made here
gets its sleep wrapped: every sleep appends its seconds to the file named by
`LOAD_BENCH_SLEEPS` (one line each; every worker appends to the same file), then sleeps. A
client that no longer takes a `sleep` is left as it is, and nothing is counted.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nanobot_lambda.adapters.telegram.client import TelegramBot

AGENT_TURN = Path(__file__).resolve().parents[2] / "functions" / "agent_turn" / "app.py"


def _counted(sleep: Callable[[float], None], path: str) -> Callable[[float], None]:
    def counted(seconds: float) -> None:
        with open(path, "a") as record:
            record.write(f"{seconds:.3f}\n")
        sleep(seconds)

    return counted


def _count_sleeps(path: str) -> None:
    parameters = inspect.signature(TelegramBot.__init__).parameters
    if "sleep" not in parameters or getattr(TelegramBot.__init__, "counted", False):
        return
    default = parameters["sleep"].default
    made = TelegramBot.__init__

    @functools.wraps(made)
    def init(self: TelegramBot, *args: Any, **kwargs: Any) -> None:
        kwargs["sleep"] = _counted(kwargs.get("sleep", default) or time.sleep, path)
        made(self, *args, **kwargs)

    init.counted = True  # type: ignore[attr-defined]
    TelegramBot.__init__ = init  # type: ignore[method-assign]


if os.environ.get("LOAD_BENCH_SLEEPS"):
    _count_sleeps(os.environ["LOAD_BENCH_SLEEPS"])

_spec = importlib.util.spec_from_file_location("load_agent_turn", AGENT_TURN)
assert _spec is not None and _spec.loader is not None
_agent_turn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_agent_turn)
handler = _agent_turn.handler
