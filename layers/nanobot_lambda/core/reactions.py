"""The emoji a bot may react with (Bot API, ReactionTypeEmoji): Telegram answers
`400 Bad Request: REACTION_INVALID` for any other.

Telegram spells them without the emoji variation selector U+FE0F ("❤", not "❤️"), which
keyboards usually add: `telegram_reaction` accepts either spelling and returns Telegram's.
In the core (no imports) because settings.py, below the adapters, validates ACK_REACTION with
it; the local Bot API refuses the rest.
"""

from __future__ import annotations

VARIATION_SELECTOR = "\ufe0f"
_ZWJ = "\u200d"  # joins the emoji of a sequence such as ❤‍🔥

# In the order of the Bot API's ReactionTypeEmoji documentation.
REACTION_EMOJI: tuple[str, ...] = (
    "👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢", "🎉", "🤩", "🤮",
    "💩", "🙏", "👌", "🕊", "🤡", "🥱", "🥴", "😍", "🐳", f"❤{_ZWJ}🔥", "🌚", "🌭", "💯",
    "🤣", "⚡", "🍌", "🏆", "💔", "🤨", "😐", "🍓", "🍾", "💋", "🖕", "😈", "😴", "😭", "🤓",
    "👻", f"👨{_ZWJ}💻", "👀", "🎃", "🙈", "😇", "😨", "🤝", "✍", "🤗", "🫡", "🎅", "🎄",
    "☃", "💅", "🤪", "🗿", "🆒", "💘", "🙉", "🦄", "😘", "💊", "🙊", "😎", "👾",
    f"🤷{_ZWJ}♂", "🤷", f"🤷{_ZWJ}♀", "😡",
)  # fmt: skip
_ALLOWED = frozenset(REACTION_EMOJI)


def is_reaction_emoji(emoji: str) -> bool:
    """Whether Telegram accepts `emoji`, exactly as written, as a reaction."""
    return emoji in _ALLOWED


def telegram_reaction(emoji: str) -> str:
    """`emoji` as Telegram spells the reaction (surrounding blanks and U+FE0F dropped);
    ValueError if it is not one of the reactions Telegram allows."""
    spelled = emoji.strip().replace(VARIATION_SELECTOR, "")
    if spelled not in _ALLOWED:
        raise ValueError(
            f"{emoji!r} is not an emoji Telegram accepts as a reaction (one of "
            f"{' '.join(REACTION_EMOJI)})"
        )
    return spelled
