"""A button pressed under one of the bot's messages, heard only when it is one Telegram could
send: in a private chat, pressed by the chat's person (`places.py`); its data that of a button on
the keyboard the message shows. Anything else is refused (`RefusedPress`: the webhook answers its
query and queues nothing; agent_turn ignores it again). The choice reaches the model as the
button's label and the message's text, each a quoted JSON string (`quoted`), which no label or
text can break out of."""

from __future__ import annotations

from nanobot_lambda.adapters.telegram.message_context import QUOTE_MAX_CHARS
from nanobot_lambda.adapters.telegram.models import CallbackQuery, Message
from nanobot_lambda.adapters.telegram.places import Place, RefusedPress
from nanobot_lambda.core import texts
from nanobot_lambda.core.texts import quoted


def press_text(place: Place, query: CallbackQuery) -> str | RefusedPress:
    """The press as the user's choice in words, or why it is refused. Only a choice the
    message's keyboard offers is heard (Telegram sends the message with its
    keyboard as it is now: a keyboard taken off offers nothing)."""
    if not query.data:
        return RefusedPress("button without data", query.id)
    label = button_text(place.message, query.data)
    if label is None:
        return RefusedPress("button not on the keyboard shown", query.id)
    quote = (place.message.text or place.message.caption or "")[:QUOTE_MAX_CHARS]
    return texts.render("button_pressed", choice=quoted(label), quote=quoted(quote))


def button_text(message: Message, data: str | None) -> str | None:
    """The text of the message's inline button that carries `data`, if it still has one."""
    if not data:
        return None
    keyboard = (message.reply_markup or {}).get("inline_keyboard")
    for row in keyboard if isinstance(keyboard, list) else []:
        for button in row if isinstance(row, list) else []:
            if isinstance(button, dict) and button.get("callback_data") == data:
                return str(button.get("text") or "") or None
    return None
