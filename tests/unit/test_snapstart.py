"""SnapStart hooks: a restored copy reseeds `random`, drops cached credentials, new clients."""

from __future__ import annotations

import gc
import random
import sys

import boto3
import pytest
from pydantic import SecretStr

from nanobot_lambda.adapters.aws import snapstart
from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.functions import init_phase
from tests.support.runtime_hooks import RuntimeHooks


class Clients:
    """The handler's side: clients made at init, and made again by `rebuild`."""

    def __init__(self) -> None:
        self.rebuild()

    def rebuild(self) -> None:
        self.sqs = boto3.client("sqs", region_name="us-east-1")
        self.bot = TelegramBot(SecretStr("1:token"), "http://127.0.0.1:9")


def test_nothing_is_registered_outside_lambda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "snapshot_restore_py", raising=False)
    assert snapstart.register(lambda: None) is False


def test_restore_reseeds_random_drops_credentials_and_rebuilds_clients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hooks = RuntimeHooks()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", hooks)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "init-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "init-secret")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # the init's own session
    clients = Clients()
    assert snapstart.register(clients.rebuild) is True
    at_init = (clients.sqs, clients.bot, boto3.DEFAULT_SESSION)
    assert clients.sqs._request_signer._credentials.access_key == "init-key"

    # Every copy restored from one snapshot starts from the same generator state.
    random.seed(1234)
    snapshot_draw = random.Random(1234).random()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "restored-key")
    hooks.restore()

    assert random.random() != snapshot_draw
    assert clients.sqs is not at_init[0]
    assert clients.bot is not at_init[1]
    assert boto3.DEFAULT_SESSION is not at_init[2]
    assert clients.sqs._request_signer._credentials.access_key == "restored-key"


def test_before_the_snapshot_the_handler_drops_its_connections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hooks = RuntimeHooks()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", hooks)
    order: list[str] = []
    snapstart.register(lambda: order.append("rebuild"), close=lambda: order.append("close"))
    hooks.register_before_snapshot(order.append, "registered later, run first")

    hooks.snapshot()
    hooks.restore()

    assert order == ["registered later, run first", "close", "rebuild"]


def test_garbage_the_init_froze_is_collected_before_the_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The init froze what it made (functions/init_phase.py), a dropped client's cycles with it:
    the snapshot must not keep them (their sockets would be every restored copy's)."""
    hooks = RuntimeHooks()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", hooks)
    monkeypatch.setenv("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")
    collected: list[str] = []

    class Dropped:  # a client with a reference cycle, dropped during init
        def __init__(self) -> None:
            self.myself = self

        def __del__(self) -> None:
            collected.append("dropped")

    init_phase.begin()
    Dropped()
    init_phase.end()
    try:
        gc.collect()
        assert collected == []  # frozen with the init
        snapstart.register(lambda: None)
        hooks.snapshot()
        assert collected == ["dropped"]
        assert gc.get_freeze_count() > 0  # the rest frozen again
    finally:
        gc.unfreeze()
