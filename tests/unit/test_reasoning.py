"""Inline reasoning is removed only where a model emits it; mentions of the tag are answer text."""

from __future__ import annotations

import pytest

from nanobot_lambda.core.reasoning import strip_thinking

EXPLAINER = (
    "Models like DeepSeek-R1 wrap their reasoning in <think> tags before they answer.\n\n"
    "The app hides that part, so you only see the final answer."
)


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(EXPLAINER, id="prose-mention-without-a-closing-tag"),
        pytest.param("Open with `<think>`, close with `</think>`, then answer.", id="inline-code"),
        pytest.param("The `` `<think>` `` tag opens reasoning; this stays.", id="double-backticks"),
        pytest.param("Open with `<think>`, then close with </think>. Done.", id="open-in-code"),
        pytest.param(
            "Example:\n\n```xml\n<think>plan</think>\nanswer\n```\n\nThat is the format.",
            id="backtick-fence",
        ),
        pytest.param("Example:\n~~~\n<think>\n~~~\nStill here.", id="tilde-fence"),
        pytest.param("Example:\n````\n```\n<think>x</think>\n````\nEnd.", id="longer-fence"),
        pytest.param("```\n<think>x</think>\nthe fence is never closed", id="unclosed-fence"),
        pytest.param("Example:\n\n    <think>draft\n    </think>\n\nEnd.", id="indented-code"),
        pytest.param("Reasoning here.</think>The answer.", id="orphan-close-mid-text"),
    ],
)
def test_mentions_of_the_tag_are_kept_verbatim(answer: str) -> None:
    assert strip_thinking(answer) == answer


def test_a_closed_block_is_removed() -> None:
    assert strip_thinking("<think>The user wants X.</think>Here is X.") == "Here is X."


def test_a_closed_block_with_code_in_its_reasoning_is_removed() -> None:
    answer = "<think>Draft:\n```py\nx = 1\n```\nlooks right</think>\n\nUse `x = 1`."
    assert strip_thinking(answer) == "Use `x = 1`."


def test_text_after_a_closed_block_is_kept_even_when_it_mentions_the_tag() -> None:
    answer = "<think>Explain the tag.</think>Reasoning models emit <think> first. The rest stays."
    assert strip_thinking(answer) == "Reasoning models emit <think> first. The rest stays."


def test_multiple_blocks_are_removed() -> None:
    answer = "<think>one</think>First. <think>two\nlines</think>Second. <think>three</think>"
    assert strip_thinking(answer) == "First. Second."


def test_tags_are_matched_case_insensitively() -> None:
    assert strip_thinking("<THINK>plan</Think>Answer.") == "Answer."
    assert strip_thinking("<Think>cut off") == ""


def test_an_unclosed_block_at_the_start_removes_everything() -> None:
    assert strip_thinking("  \n<think>The user wants X, so I will") == ""


def test_an_unclosed_tag_later_in_prose_is_kept() -> None:
    answer = "Step one.\n<think> is how the model starts; step two follows."
    assert strip_thinking(answer) == answer


def test_a_stray_backtick_does_not_hide_a_block() -> None:
    assert strip_thinking("A lone ` tick, <think>plan</think>then the answer.") == (
        "A lone ` tick, then the answer."
    )


def test_a_code_span_does_not_reach_across_a_blank_line() -> None:
    answer = "One ` here.\n\n<think>plan</think>Two ` there."
    assert strip_thinking(answer) == "One ` here.\n\nTwo ` there."


def test_a_leading_orphan_closing_tag_is_dropped_and_the_answer_kept() -> None:
    assert strip_thinking("\n</think>\n\nHere is X.") == "Here is X."


def test_plain_text_is_only_trimmed() -> None:
    assert strip_thinking("  Hello!\n") == "Hello!"
    assert strip_thinking("") == ""
