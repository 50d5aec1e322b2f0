"""`texts.literal`: any text someone chose shows in the bot's messages as exactly its characters,
whatever the Markdown renderer and Telegram would otherwise make of it. Each place that shows a
name has its own test with the hostile names (pairing, media notices, tool hints); here the
helper itself is tried on every ASCII character and on random mixtures."""

from __future__ import annotations

import random
import string

import pytest

from nanobot_lambda.core.texts import LITERAL_MAX_CHARS, literal
from tests.support.hostile_names import HOSTILE_NAMES, seen

# What Markdown, Telegram's HTML or its entity finder give a meaning to, and a few neighbours.
ALPHABET = string.punctuation + "aZ09 _\u00e9\u0416\u4e2d\U0001f600\u200d\u2060"


def test_every_ascii_punctuation_mark_alone_and_in_pairs_shows_as_itself() -> None:
    for first in string.punctuation:
        for text in [first, *(first + second for second in string.punctuation)]:
            shown = seen(f"Name: {literal(text)}.")
            assert shown.text == f"Name: {text}.", text
            assert shown.entities == [], text


def test_random_mixtures_show_as_themselves_with_no_entity() -> None:
    chance = random.Random(26)
    for _ in range(400):
        text = "".join(chance.choice(ALPHABET) for _ in range(chance.randint(1, 40)))
        flat = " ".join(text.split())
        if not flat:
            continue
        shown = seen(f"Approved: {literal(text)}, id 1.")
        assert shown.text == f"Approved: {flat.replace(chr(0x2060), '')}, id 1.", repr(text)
        assert shown.entities == [], repr(text)


@pytest.mark.parametrize(("name", "shown"), HOSTILE_NAMES)
def test_hostile_names_at_the_start_of_a_line_are_no_block_either(name: str, shown: str) -> None:
    """A heading, a list, a quote or code at a line's start would change the whole line."""
    result = seen(f"{literal(name)}\nnext line")
    assert result.text == f"{shown}\nnext line" and result.entities == []


def test_a_name_is_one_line_of_at_most_the_limit() -> None:
    assert seen(literal("a\nb\r\nc\td\x00e\u2028f")).text == "a b c d e f"
    assert seen(literal("y" * 1000)).text == "y" * (LITERAL_MAX_CHARS - 1) + "…"
    assert seen(literal("word " * 10, limit=12)).text == "word word w…"


def test_half_a_surrogate_pair_becomes_a_replacement_character() -> None:
    """JSON may carry one; Telegram refuses text that is not UTF-8."""
    shown = literal("Bob\ud83d")
    assert shown == "Bob\ufffd"
    shown.encode("utf-8")  # does not raise


def test_directional_overrides_and_isolates_are_dropped() -> None:
    controls = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    assert seen(literal(f"B{controls}ob")).text == "Bob"
    assert seen(literal("\u05e9\u05dc\u05d5\u05dd Bob")).text == "\u05e9\u05dc\u05d5\u05dd Bob"
