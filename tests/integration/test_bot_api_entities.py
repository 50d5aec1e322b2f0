"""The local Bot API answers sendMessage with the message's entities over HTTP, as Telegram does:
what the bot's HTML marks up and what Telegram finds in the text by itself."""

from __future__ import annotations

from pydantic import SecretStr

from nanobot_lambda.adapters.telegram.client import TelegramBot
from nanobot_lambda.core.texts import literal
from nanobot_lambda.operator.local.bot_api import LocalBotApi

TOKEN = "8383:entities-token"


def test_sent_messages_carry_the_entities_telegram_would_give_them() -> None:
    api = LocalBotApi(TOKEN).start()
    try:
        bot = TelegramBot(SecretStr(TOKEN), api.base_url, max_attempts=1)
        sent = bot.call(
            "sendMessage", chat_id=1, text="<b>Hi</b> @ada, see x.org", parse_mode="HTML"
        )
        assert sent["entities"] == [
            {"type": "bold", "offset": 0, "length": 2},
            {"type": "mention", "offset": 3, "length": 4},
            {"type": "url", "offset": 13, "length": 5},
        ]
        (message_id,) = bot.send_text(1, f"Approved: {literal('@ada, see x.org')}")
        assert api.messages[-1].message_id == message_id and api.messages[-1].entities == ()
    finally:
        api.stop()
