"""A local Telegram Bot API over real HTTP, for `nanobot-lambda chat` and the tests.

It accepts what the bot sends and refuses what Telegram refuses: an unknown token (401), HTML
that Telegram cannot parse, and texts over 4096 characters (400, with Telegram's wording).
Accepted messages are recorded and handed to `on_message` (the chat prints them).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from nanobot_lambda.local.http import JsonHttpServer
from nanobot_lambda.telegram.formatting import TELEGRAM_TEXT_LIMIT
from nanobot_lambda.telegram.html_check import (
    TelegramHtmlError,
    parse_telegram_html,
    telegram_length,
)

BOT_USER = {"id": 7000000001, "is_bot": True, "first_name": "Nano", "username": "nano_lambda_bot"}


@dataclass(frozen=True)
class SentMessage:
    chat_id: int
    message_id: int
    text: str  # as sent (HTML when parse_mode is HTML)
    plain_text: str  # as the user would read it
    parse_mode: str | None
    thread_id: int | None


class ApiError(Exception):
    def __init__(self, code: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.retry_after = retry_after


class LocalBotApi(JsonHttpServer):
    def __init__(self, token: str, on_message: Callable[[SentMessage], None] | None = None) -> None:
        super().__init__()
        self.token = token
        self.on_message = on_message
        self.messages: list[SentMessage] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._message_ids = itertools.count(1000)
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return self.url

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        """Answer one Bot API call; raise ApiError for the errors Telegram would return."""
        if method == "getMe":
            return BOT_USER
        if method == "sendChatAction":
            _require(params, "chat_id", "action")
            return True
        if method == "sendMessage":
            return self._send_message(params)
        if method in ("setWebhook", "deleteWebhook"):
            return True
        raise ApiError(404, "Not Found: method not found")

    def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "chat_id", "text")
        text = str(params["text"])
        parse_mode = params.get("parse_mode")
        plain = text
        if parse_mode == "HTML":
            try:
                plain = parse_telegram_html(text)
            except TelegramHtmlError as error:
                raise ApiError(400, f"Bad Request: {error}") from None
        elif parse_mode is not None:
            raise ApiError(400, f"Bad Request: unsupported parse_mode {parse_mode}")
        if not plain.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if telegram_length(plain) > TELEGRAM_TEXT_LIMIT:
            raise ApiError(400, "Bad Request: message is too long")
        thread = params.get("message_thread_id")
        message = SentMessage(
            chat_id=int(params["chat_id"]),
            message_id=next(self._message_ids),
            text=text,
            plain_text=plain,
            parse_mode=parse_mode,
            thread_id=int(thread) if thread is not None else None,
        )
        with self._lock:
            self.messages.append(message)
        if self.on_message is not None:
            self.on_message(message)
        return {
            "message_id": message.message_id,
            "from": BOT_USER,
            "chat": {"id": message.chat_id, "type": "private"},
            "date": int(time.time()),
            "text": plain,
        }

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        """Route `/bot<token>/<method>`; parameters as JSON, form or query string."""
        route, _, query = path.partition("?")
        parts = route.strip("/").split("/")
        if len(parts) != 2 or not parts[0].startswith("bot"):
            return 404, {"ok": False, "error_code": 404, "description": "Not Found"}
        if "json" in headers.get("Content-Type", headers.get("content-type", "")):
            loaded = json.loads(body or b"{}")
            params = loaded if isinstance(loaded, dict) else {}
        else:
            params = dict(parse_qsl(body.decode() or query))
        return self._dispatch(parts[0][3:], parts[1], params)

    def _dispatch(self, token: str, method: str, params: dict[str, Any]) -> tuple[int, Any]:
        if token != self.token:
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        with self._lock:
            self.calls.append((method, params))
        try:
            return 200, {"ok": True, "result": self.handle(method, params)}
        except ApiError as error:
            body: dict[str, Any] = {
                "ok": False,
                "error_code": error.code,
                "description": error.description,
            }
            if error.retry_after is not None:
                body["parameters"] = {"retry_after": error.retry_after}
            return error.code, body


def _require(params: dict[str, Any], *names: str) -> None:
    for name in names:
        if params.get(name) in (None, ""):
            raise ApiError(400, f"Bad Request: {name} is empty")
