"""The chaos soak's plan and checker (tests/soak/): the soak slice in `make test` is expected
to fail until issue 25 is fixed, so what it measures with is tested on its own here."""

from __future__ import annotations

from typing import Any

from nanobot_lambda.operator.local.bot_api import SentMessage
from tests.soak.chaos_model import turn_of
from tests.soak.checker import APOLOGY, check, read_seen
from tests.soak.plan import SoakPlan

PLAN = SoakPlan(seed=7, chats=1, messages=2)
CHAT = PLAN.chat_id(0)


def sent(message_id: int, text: str) -> SentMessage:
    return SentMessage(CHAT, message_id, text, text, None, None)


def exchange(number: int, *texts: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"m c0 k{number}"},
        *({"role": "assistant", "content": text} for text in texts),
    ]


def figures_of(
    messages: list[SentMessage],
    session: list[dict[str, Any]],
    windows: frozenset[int] = frozenset(),
    sent_for: dict[int, str] | None = None,
) -> Any:
    seen = read_seen(
        messages,
        {(CHAT, k): v for k, v in (sent_for or {}).items()},
        {(CHAT, message_id) for message_id in windows},
    )
    return check(PLAN, seen, {CHAT: session})


def test_every_message_answered_once_and_saved_as_shown_passes() -> None:
    verdict = figures_of(
        [sent(1, "c0k1 step p0 v0"), sent(2, "c0k1 answer v0: a"), sent(3, "c0k2 answer v1: b")],
        exchange(1, "c0k1 step p0 v0", "c0k1 answer v0: a") + exchange(2, "c0k2 answer v1: b"),
    )
    assert verdict.figures.passed, verdict.failures
    assert (verdict.figures.dup, verdict.figures.lost, verdict.figures.window) == (0, 0, 0)


def test_a_message_without_an_answer_is_lost_and_a_second_answer_is_a_dup() -> None:
    verdict = figures_of(
        [sent(1, "c0k1 answer v0: a"), sent(2, "c0k1 answer v1: b")],
        exchange(1, "c0k1 answer v1: b"),
    )
    assert (verdict.figures.dup, verdict.figures.lost) == (1, 1)
    assert any("c0k2: lost" in failure for failure in verdict.failures)


def test_a_second_copy_of_a_message_telegram_took_without_answering_is_the_window() -> None:
    verdict = figures_of(
        [sent(1, "c0k1 answer v0: a"), sent(2, "c0k1 answer v1: b"), sent(3, "c0k2 answer v0: c")],
        exchange(1, "c0k1 answer v1: b") + exchange(2, "c0k2 answer v0: c"),
        windows=frozenset({1}),
    )
    assert (verdict.figures.dup, verdict.figures.window) == (0, 1)
    assert verdict.figures.passed, verdict.failures


def test_an_apology_answers_its_message_and_must_leave_the_session_clean() -> None:
    clean = figures_of(
        [sent(1, APOLOGY), sent(2, "c0k2 answer v0: c")],
        exchange(2, "c0k2 answer v0: c"),
        sent_for={1: "c0k1"},
    )
    assert clean.figures.passed, clean.failures
    saved = figures_of(
        [sent(1, APOLOGY), sent(2, "c0k1 answer v1: b"), sent(3, "c0k2 answer v0: c")],
        exchange(1, "c0k1 answer v1: b") + exchange(2, "c0k2 answer v0: c"),
        sent_for={1: "c0k1"},
    )
    assert saved.figures.dup == 1  # the apology and an answer


def test_a_step_worded_again_by_a_re_run_is_no_repeat_but_the_same_text_twice_is() -> None:
    reworded = figures_of(
        [
            sent(1, "c0k1 step p0 v0"),
            sent(2, "c0k1 step p0 v1"),
            sent(3, "c0k1 answer v1: a"),
            sent(4, "c0k2 answer v0: c"),
        ],
        exchange(1, "c0k1 step p0 v0", "c0k1 step p0 v1", "c0k1 answer v1: a")
        + exchange(2, "c0k2 answer v0: c"),
    )
    assert reworded.figures.passed, reworded.failures
    repeated = figures_of(
        [
            sent(1, "c0k1 step p0 v0"),
            sent(2, "c0k1 step p0 v0"),
            sent(3, "c0k1 answer v1: a"),
            sent(4, "c0k2 answer v0: c"),
        ],
        exchange(1, "c0k1 step p0 v0", "c0k1 answer v1: a") + exchange(2, "c0k2 answer v0: c"),
    )
    assert repeated.figures.dup == 1


def test_a_session_holding_a_text_the_user_never_saw_is_reported() -> None:
    verdict = figures_of(
        [sent(1, "c0k1 step p0 v0"), sent(2, "c0k1 answer v0: a"), sent(3, "c0k2 answer v0: c")],
        exchange(1, "c0k1 step p0 v1", "c0k1 answer v0: a") + exchange(2, "c0k2 answer v0: c"),
    )
    assert verdict.figures.session == 1
    assert "never shown" in verdict.failures[0]


def test_answers_in_another_order_than_the_messages_are_out_of_order() -> None:
    verdict = figures_of(
        [sent(1, "c0k2 answer v0: c"), sent(2, "c0k1 answer v0: a")],
        exchange(1, "c0k1 answer v0: a") + exchange(2, "c0k2 answer v0: c"),
    )
    assert verdict.figures.out_of_order == 1


def test_an_exchange_saved_after_a_later_one_is_reported_as_misplaced() -> None:
    verdict = figures_of(
        [sent(1, "c0k1 answer v0: a"), sent(2, "c0k2 answer v0: c")],
        exchange(2, "c0k2 answer v0: c") + exchange(1, "c0k1 answer v0: a"),
    )
    assert verdict.figures.session == 1
    assert "c0k1: saved after exchanges of messages sent after it" in verdict.failures[0]


def test_the_same_seed_gives_the_same_plan_and_another_seed_another() -> None:
    def described(plan: SoakPlan) -> list[object]:
        return [
            plan.waves(),
            [plan.run_faults(f"c{c}k{k}", 1) for c in range(5) for k in range(1, 5)],
            [plan.model_errors(f"c{c}k{k}") for c in range(5) for k in range(1, 5)],
        ]

    assert described(SoakPlan(3, 5, 4)) == described(SoakPlan(3, 5, 4))
    assert described(SoakPlan(3, 5, 4)) != described(SoakPlan(4, 5, 4))
    # Every chat's messages are posted, each once, in the chat's order.
    posts = [message for wave in SoakPlan(3, 5, 4).waves() for message in wave]
    assert sorted((m.chat, m.number) for m in posts) == [
        (c, k) for c in range(5) for k in range(1, 5)
    ]
    for chat in range(5):
        assert [m.number for m in posts if m.chat == chat] == [1, 2, 3, 4]


def test_the_chaos_model_reads_the_turn_and_its_step_from_the_request() -> None:
    request = {
        "messages": [
            {"role": "system", "content": "..."},
            {"role": "user", "content": "m c1 k1"},
            {"role": "assistant", "content": "c1k1 answer v0: a"},
            {"role": "user", "content": [{"type": "text", "text": "m c1 k2"}]},
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "tool", "content": "done"},
        ]
    }
    assert turn_of(request) == ("c1k2", 1)
    assert turn_of({"messages": [{"role": "user", "content": "summarise"}]}) is None
