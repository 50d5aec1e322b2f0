"""The console's hook deliveries (functions/console/hooks.py): a hook's last deliveries as the
webhook recorded them, each queued one with what its turn did, read from its chat's session;
the owner's alone (the isolation table has the route's row)."""

from __future__ import annotations

from datetime import timedelta

from nanobot_lambda.core.heartbeat import HEARTBEAT_OK
from nanobot_lambda.core.inbound_events import EVENT_TURN_FIELD, Delivery
from nanobot_lambda.core.journal import TurnProgress
from nanobot_lambda.core.sessions import SessionHistory, session_key_for
from tests.support.fakes import MemorySessionStore
from tests.unit.test_console_isolation import NOW, OWNER, PERSON, ask, make_world

AT = (NOW + timedelta(minutes=1)).isoformat(timespec="seconds")  # after the hook was made


def queued(delivery_id: str) -> Delivery:
    return Delivery(
        at=AT,
        outcome="queued",
        status=202,
        reason=None,
        size=42,
        digest="ab" * 32,
        delivery_id=delivery_id,
        event="deploy",
        turn_id=f"hook-deploys-{delivery_id}",
        chat_id=OWNER.chat,
    )


def saved_turn(sessions: MemorySessionStore, turn_id: str, *answers: str) -> None:
    key = session_key_for(OWNER.chat)
    history = SessionHistory(key, next_seq=len(sessions.messages.get(key, [])))
    history.recent_turns = sessions.recent.get(key, ())
    prompt = {"role": "user", "content": "An event arrived…", EVENT_TURN_FIELD: turn_id}
    replies = [{"role": "assistant", "content": answer} for answer in answers]
    sessions.append(history, [{**prompt, "ts": AT}, *replies], turn_id=turn_id)


def test_each_delivery_shows_what_its_turn_did_and_never_its_payload() -> None:
    world, api = make_world()
    journaled = world.sessions
    saved_turn(journaled, "hook-deploys-d-1", "", "Deploy 42 failed: the tests.\nDetails…")
    saved_turn(journaled, "hook-deploys-d-2", HEARTBEAT_OK)
    assert journaled.journal is not None
    journaled.journal.checkpoint(
        session_key_for(OWNER.chat), TurnProgress("hook-deploys-d-3", iterations=1)
    )
    forged = Delivery(AT, "refused", 401, "wrong signature", 12, "cd" * 32)
    for delivery in (queued("d-1"), queued("d-2"), queued("d-3"), queued("d-4"), forged):
        world.hooks.record("deploys", delivery)

    status, answer = ask(api, "hooks/deliveries", {"name": "deploys"}, OWNER)

    assert status == 200, answer
    shown = answer["deliveries"]  # newest first
    assert [(each["outcome"], each["status"]) for each in shown] == [
        ("refused", 401),
        ("queued", 202),
        ("queued", 202),
        ("queued", 202),
        ("queued", 202),
    ]
    assert shown[0]["reason"] == "wrong signature" and shown[0]["caused"] is None
    assert [each["caused"] for each in shown[1:]] == [
        {"state": "unseen", "answer": None},  # not run yet
        {"state": "running", "answer": None},
        {"state": "quiet", "answer": None},  # nothing to report: not sent
        {"state": "answered", "answer": "Deploy 42 failed: the tests."},
    ]
    assert shown[-1]["turn_id"] == "hook-deploys-d-1" and shown[-1]["size"] == 42
    assert set(shown[-1]) == {  # of the payload, its size and digest only
        "at", "outcome", "status", "reason", "size", "digest", "delivery_id", "event",
        "turn_id", "caused",
    }  # fmt: skip


def test_a_person_never_sees_a_hook_s_deliveries_and_an_unknown_hook_has_none() -> None:
    world, api = make_world()
    world.hooks.record("deploys", queued("d-1"))
    assert ask(api, "hooks/deliveries", {"name": "deploys"}, PERSON)[0] == 403
    assert ask(api, "hooks/deliveries", {"name": "nope"}, OWNER)[0] == 404
    assert ask(api, "hooks/deliveries", {"name": "../x"}, OWNER)[0] == 404
