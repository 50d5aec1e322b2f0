"""The load simulation (bench/load.py, issue 41) at a tiny size, so that it keeps measuring:
a few people's messages through the whole local stack, agent_turn in two worker processes,
against a Bot API that keeps Telegram's limits. Its figures at size are `make load`'s.

Each chat may send one message at a time (a burst of 1), so a turn's drafts and its answer
meet 429s: the simulation must count them, and count the seconds the Telegram client then
slept inside the invocation as exactly the `retry_after`s it was told for the sends it retried.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

LOAD = Path(__file__).resolve().parents[2] / "bench" / "load.py"


def _load_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_load", LOAD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_load"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Any:
    load = _load_module()
    arguments = "--seconds 3 --min-turns 4 --concurrency 2 --tokens 40 --chat-burst 1 --cold"
    return load.run_size(
        20, load.parse_arguments(arguments.split()), tmp_path_factory.mktemp("load")
    )


def test_every_message_is_answered_once_with_its_first_text_timed(figures: Any) -> None:
    assert figures.turns >= 4
    assert figures.answered == figures.turns
    assert (figures.lost, figures.dead_lettered, figures.unfinished) == (0, 0, 0)
    assert figures.model_calls_per_turn == 1.0 and figures.asked_more_than_once == 0
    assert figures.first_text_p50 is not None and 0.5 < figures.first_text_p50 < 30
    assert figures.invocations >= figures.turns and figures.peak_busy >= 1


def test_429s_and_the_seconds_slept_for_them_are_counted(figures: Any) -> None:
    assert figures.sends > figures.rate_limited > 0
    assert sum(figures.rate_limited_by_method.values()) == figures.rate_limited
    # The client sleeps retry_after before it sends a message again (a draft is tried once).
    asked = figures.retry_after_seconds.get("sendMessage", 0)
    assert figures.slept_seconds == pytest.approx(asked)


def test_dynamodb_requests_per_turn_are_counted_by_function(figures: Any) -> None:
    agent_turn, webhook = figures.dynamodb["agent_turn"], figures.dynamodb["webhook"]
    assert agent_turn["TransactWriteItems"] == 1.0  # each turn saved in one transaction
    assert agent_turn["reads"] > 0 and agent_turn["write_units"] >= 2
    assert webhook["writes"] > 0  # the update's idempotency record
