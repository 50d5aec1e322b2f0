"""The init phase turns the garbage collector off for the imports and on again after, freezing
what the init made only in a Lambda container (functions/init_phase.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from nanobot_lambda.functions import init_phase


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    yield
    gc.unfreeze()
    gc.enable()


def test_the_collector_is_off_during_the_init_and_on_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_LAMBDA_RUNTIME_API", raising=False)
    init_phase.begin()
    assert not gc.isenabled()
    init_phase.end()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # tests and the local stack: nothing frozen


def test_in_a_lambda_container_what_the_init_made_is_frozen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")
    init_phase.begin()
    made = [object() for _ in range(3)] + [[n] for n in range(1000)]
    init_phase.end()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made) - 3  # the lists (objects are not tracked)
