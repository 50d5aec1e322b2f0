"""ALLOW_FROM: default deny, exact matches only."""

from __future__ import annotations

import pytest

from nanobot_lambda.core.allowlist import AllowList


def test_exact_id() -> None:
    allow = AllowList.parse("111111111")
    assert allow.allows(111111111)
    assert not allow.allows(11111111)  # a prefix of the id
    assert not allow.allows(1111111111)  # the id as a prefix


def test_exact_username_with_or_without_at() -> None:
    for entry in ("ada_l", "@ada_l", "Ada_L"):
        allow = AllowList.parse(entry)
        assert allow.allows(5, "ada_l")
        assert allow.allows(5, "ADA_L")  # Telegram usernames are case-insensitive


def test_no_prefix_or_substring_username_match() -> None:
    allow = AllowList.parse("ada_l")
    assert not allow.allows(5, "ada")
    assert not allow.allows(5, "ada_lovelace")
    assert not allow.allows(5, "xada_l")
    assert not allow.allows(5, None)


def test_username_entry_does_not_match_a_numeric_id() -> None:
    """nanobot once matched "123|name" strings; an id and a username are separate keys here."""
    allow = AllowList.parse("ada_l")
    assert not allow.allows(111111111, "someone_else")


def test_star_allows_everyone() -> None:
    allow = AllowList.parse("*")
    assert allow.allows(1) and allow.allows(2, "anyone")


def test_empty_allows_nobody() -> None:
    for text in ("", " ", ",", " , "):
        allow = AllowList.parse(text)
        assert allow.allows_nobody
        assert not allow.allows(111111111, "ada_l")


def test_mixed_list() -> None:
    allow = AllowList.parse(" 111111111 , @bob_smith,-1001234567890 ")
    assert allow.allows(111111111)
    assert allow.allows(42, "bob_smith")
    assert allow.allows(-1001234567890)
    assert not allow.allows(42, "carol")


@pytest.mark.parametrize("entry", ["12a", "a", "@", "user name", "ada*", "1.5"])
def test_invalid_entries_are_refused(entry: str) -> None:
    with pytest.raises(ValueError, match="neither a numeric Telegram id"):
        AllowList.parse(entry)


def test_usernames_match_in_ascii_only() -> None:
    """Telegram usernames are ASCII; Unicode case folding would let look-alikes in."""
    allow = AllowList.parse("carol_k,@kss_user")
    assert not allow.allows(5, "caro\u212a_k")  # KELVIN SIGN lower-cases to k
    assert not allow.allows(5, "\u017fss_user")  # LATIN SMALL LETTER LONG S folds to s
    assert allow.allows(5, "CAROL_K")


def test_a_listed_group_admits_every_member() -> None:
    allow = AllowList.parse("111111111,-1002000000000")
    assert allow.allows(333333333, group_id=-1002000000000)
    assert not allow.allows(333333333, group_id=-1001234567890)
    assert allow.allows(111111111, group_id=-1001234567890)  # the sender is listed
    assert not allow.allows(333333333)  # the group counts only where the message was posted


def test_a_group_entry_is_exact_too() -> None:
    allow = AllowList.parse("-100123")
    assert allow.allows(1, group_id=-100123)
    assert not allow.allows(1, group_id=-1001234)
    assert not allow.allows(1, group_id=100123)
