"""SnapStart on: the queue still reaches agent_turn (through the alias), and a restore gives the
handler new clients that keep answering."""

from __future__ import annotations

import sys

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
