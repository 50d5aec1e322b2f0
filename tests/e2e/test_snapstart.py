"""SnapStart on: the queue still reaches agent_turn (through the alias), a restore gives the
handler new clients that keep answering, and nothing made at init is shared by the copies
restored from one snapshot."""

from __future__ import annotations

import random
import sys

import boto3
import litellm
import pytest

from tests.conftest import StackFactory
from tests.support.runtime_hooks import RuntimeHooks
from tests.support.scripted_model import ScriptedModelServer


def test_a_restored_agent_turn_answers_with_new_clients(
    monkeypatch: pytest.MonkeyPatch, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    hooks = RuntimeHooks()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", hooks)
    stack = stack_factory(EnableSnapStart="true")
    handler = stack.handlers["agent_turn"]
    assert len(hooks.after_restore) == 1  # registered by the handler at init

    model_server.reply("Before the snapshot.").reply("After the restore.")
    assert stack.post_update(stack.text_update("hello"))["statusCode"] == 200
    stack.process_queue()
    before = handler.records

    hooks.restore()
    assert handler.records is not before
    assert handler.records._queue._sqs is not before._queue._sqs
    channel, old_channel = (
        records._turns.deps.ports.services.channel for records in (handler.records, before)
    )
    assert channel._session is not old_channel._session

    assert stack.post_update(stack.text_update("still there?"))["statusCode"] == 200
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == [
        "Before the snapshot.",
        "After the restore.",
    ]


def test_the_runtime_hooks_leave_nothing_of_init_shared_by_restored_copies(
    monkeypatch: pytest.MonkeyPatch, stack_factory: StackFactory, model_server: ScriptedModelServer
) -> None:
    """Init, the before-snapshot hooks, then each restore, as Lambda runs them with SnapStart."""
    hooks = RuntimeHooks()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", hooks)
    stack = stack_factory(EnableSnapStart="true")  # an init as Lambda runs it for a snapshot
    handler = stack.handlers["agent_turn"]
    assert handler.prefetch is None  # no workspace files into the snapshot
    assert len(hooks.before_snapshot) == 1
    litellm.module_level_client.client.get  # noqa: B018 - as if init had made litellm's client
    at_init = handler.records, handler.s3, boto3.DEFAULT_SESSION

    hooks.snapshot()
    assert hooks.before_snapshot == []  # each ran once, popped as the runtime does
    assert "module_level_client" not in vars(litellm)  # no pool of open sockets in the snapshot

    # Two copies restored from the one snapshot: the same state of `random` at the start.
    snapshotted = random.getstate()
    draws = []
    for _ in range(2):
        random.setstate(snapshotted)
        litellm.module_level_client.client.get  # noqa: B018 - made before the restore
        hooks.restore()
        draws.append(random.random())
        assert "module_level_client" not in vars(litellm)
        assert handler.records is not at_init[0]
        assert handler.s3 is not at_init[1]
        assert boto3.DEFAULT_SESSION is not at_init[2]
    assert draws[0] != draws[1]

    model_server.reply("Restored and well.")
    assert stack.post_update(stack.text_update("hello"))["statusCode"] == 200
    stack.process_queue()
    assert [m.plain_text for m in stack.bot_api.messages] == ["Restored and well."]
