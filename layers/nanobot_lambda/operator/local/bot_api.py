"""A local Telegram Bot API over real HTTP, for `nanobot-lambda chat` and the tests.

It accepts what the bot sends and refuses what Telegram refuses: an unknown token (401), HTML
that Telegram cannot parse, and texts over 4096 characters (400, with Telegram's wording).
Accepted messages are recorded, with the entities Telegram would give them (what the markup
forms and the mentions, commands and links it finds by itself, `entities.py`), and handed to
`on_message` (the chat prints them); message drafts (`sendMessageDraft`, private chats only, a
non-zero `draft_id`) likewise to `on_draft`.

Files the bot sends (`sendPhoto`, `sendDocument`, `sendAudio`, `sendVoice`, uploaded as
multipart/form-data) are checked as Telegram checks them (50 MB per upload, 413; a photo of at
most 10 MB that is a JPEG, PNG, WebP or GIF; captions of at most 1024 characters), recorded in
`files_sent` and handed to `on_file`; they can then be downloaded like received files.

Files the bot "received" are registered with `add_file`; `getFile` and the download route
`/file/bot<token>/<file_path>` serve them as Telegram does (400 for an unknown file_id or a file
over the 20 MB bots may download).

Incoming updates are queued with `push_update` and delivered the two ways Telegram offers:
`getUpdates` (long polling; an update is confirmed, and dropped, once a call's offset passes
it) while no webhook is set, 409 Conflict while one is. `setWebhook`, `getWebhookInfo` and
`deleteWebhook` keep the webhook's settings as Telegram does (HTTPS URL only, secret token of
A-Z a-z 0-9 _ -); nothing is POSTed to the webhook URL.

Inline keyboards play as Telegram plays them: `sendMessage` takes a `reply_markup` of
`inline_keyboard` buttons (each with a text and 1-64 bytes of `callback_data`, at most 100),
kept as the message's `keyboard`; `press` makes the Update of a user pressing one of its
buttons (a `callback_query`, whose id is then answered once with `answerCallbackQuery`, recorded
in `answered_callbacks`); `editMessageReplyMarkup` changes or removes a message's keyboard
(recorded in `keyboard_edits`), refusing an unknown message or an unchanged keyboard (400);
`editMessageText` replaces its text (recorded in `text_edits`).

Reactions (`setMessageReaction`) are recorded in `reactions`; an emoji Telegram does not allow
is refused (400 `REACTION_INVALID`). Every call is kept in `calls`, and in `timeline` with the
`time.monotonic()` it arrived at. `perform` takes a call as Telegram's servers do, without HTTP
(the local stack performs the method of a webhook's answer with it, as Telegram would).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import mimetypes
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, cast
from urllib.parse import parse_qsl, unquote

from nanobot_lambda.adapters.telegram.formatting import TELEGRAM_TEXT_LIMIT
from nanobot_lambda.adapters.telegram.html_check import (
    TelegramHtmlError,
    parse_telegram_html,
    scan_telegram_html,
    telegram_length,
)
from nanobot_lambda.adapters.telegram.models import MessageEntity
from nanobot_lambda.core.reactions import is_reaction_emoji
from nanobot_lambda.operator.local.entities import message_entities
from nanobot_lambda.operator.local.http import FormFile, JsonHttpServer, parse_form_data

BOT_USER = {"id": 7000000001, "is_bot": True, "first_name": "Nano", "username": "nano_lambda_bot"}
GET_FILE_MAX_BYTES = 20 * 1024 * 1024  # bots cannot download larger files
GET_UPDATES_MAX_TIMEOUT = 50  # seconds a long poll may wait
WEBHOOK_CONFLICT = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)
_SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")
_BOT_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
MAX_BOT_COMMANDS = 100
UPLOAD_MAX_BYTES = 50 * 1024 * 1024  # bots cannot send larger files
PHOTO_MAX_BYTES = 10 * 1024 * 1024
CAPTION_MAX_CHARS = 1024
# The file part each sending method takes, and the folder Telegram's file paths put it in.
FILE_METHODS = {
    "sendPhoto": ("photo", "photos"),
    "sendDocument": ("document", "documents"),
    "sendAudio": ("audio", "music"),
    "sendVoice": ("voice", "voice"),
}
_IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a")
MAX_INLINE_BUTTONS = 100
CALLBACK_DATA_MAX_BYTES = 64
QUERY_INVALID = "Bad Request: query is too old and response timeout expired or query ID is invalid"
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)
# Rows of (text, callback_data): an inline keyboard as the stand-in keeps it.
Keyboard = tuple[tuple[tuple[str, str], ...], ...]


@dataclass(frozen=True)
class StoredFile:
    file_id: str
    file_unique_id: str
    file_path: str
    data: bytes


@dataclass(frozen=True)
class SentMessage:
    chat_id: int
    message_id: int
    text: str  # as sent (HTML when parse_mode is HTML)
    plain_text: str  # as the user would read it
    parse_mode: str | None
    thread_id: int | None
    keyboard: Keyboard = ()  # its inline keyboard: rows of (text, callback_data)
    # What its markup forms and what Telegram finds in its text by itself (entities.py).
    entities: tuple[MessageEntity, ...] = ()
    web_apps: tuple[tuple[str, str], ...] = ()  # its Mini App buttons: (text, url)


@dataclass(frozen=True)
class SentFile:
    chat_id: int
    thread_id: int | None
    method: str  # sendPhoto, sendDocument, sendAudio or sendVoice
    field: str  # the file's part: photo, document, audio or voice
    filename: str
    caption: str | None  # as sent (HTML when parse_mode is HTML)
    plain_caption: str | None  # as the user would read it
    message_id: int
    file_id: str  # getFile serves it, as Telegram does a file the bot sent
    at: float  # time.monotonic() when it arrived
    # Last, as mypy takes a field() for a default; dataclasses.field, as `field` is one here.
    data: bytes = dataclasses.field(repr=False)


@dataclass(frozen=True)
class SentDraft:
    chat_id: int
    draft_id: int
    text: str  # as sent
    plain_text: str  # as the user would read it
    thread_id: int | None
    at: float  # time.monotonic() when it arrived


@dataclass
class WebhookState:
    url: str = ""
    secret_token: str | None = None
    allowed_updates: list[str] | None = None
    last_error_date: int | None = None
    last_error_message: str | None = None
    set_calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class SetReaction:
    chat_id: int
    message_id: int
    emoji: tuple[str, ...]  # empty: the bot's reaction was removed
    at: float  # time.monotonic() when it arrived


class ApiError(Exception):
    def __init__(self, code: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.retry_after = retry_after


class LocalBotApi(JsonHttpServer):
    def __init__(
        self,
        token: str,
        on_message: Callable[[SentMessage], None] | None = None,
        on_draft: Callable[[SentDraft], None] | None = None,
        on_file: Callable[[SentFile], None] | None = None,
    ) -> None:
        super().__init__()
        self.token = token
        self.on_message = on_message
        self.on_draft = on_draft
        self.on_file = on_file
        self.messages: list[SentMessage] = []
        self.drafts: list[SentDraft] = []
        self.files_sent: list[SentFile] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.timeline: list[tuple[float, str, dict[str, Any]]] = []  # (monotonic, method, params)
        self.reactions: list[SetReaction] = []
        self.commands: list[dict[str, str]] = []  # the command menu (setMyCommands)
        self.menu_button: dict[str, Any] = {"type": "default"}  # setChatMenuButton's, for all
        self.answered_callbacks: list[str] = []  # callback query ids, as answered
        # (chat_id, message_id, new keyboard) of each editMessageReplyMarkup, in order
        self.keyboard_edits: list[tuple[int, int, Keyboard]] = []
        self.text_edits: list[SentMessage] = []  # editMessageText: each message as edited
        self._issued_callbacks: set[str] = set()  # callback query ids `press` made
        self._callback_ids = itertools.count(1)
        self._update_ids = itertools.count(900_000_001)  # apart from the stack's update ids
        self._message_ids = itertools.count(1000)
        self._lock = threading.Lock()
        self.files: dict[str, StoredFile] = {}  # by file_id
        self.downloads: list[str] = []  # file paths served, in order
        self.webhook = WebhookState()
        self.pending: list[dict[str, Any]] = []  # updates not yet confirmed, oldest first
        self._update_arrived = threading.Condition(self._lock)
        self._closed = False

    @property
    def base_url(self) -> str:
        return self.url

    def add_file(
        self,
        file_id: str,
        data: bytes,
        file_path: str | None = None,
        *,
        file_unique_id: str | None = None,
    ) -> StoredFile:
        """Make a file the bot received downloadable (as after a user sent it)."""
        stored = StoredFile(
            file_id=file_id,
            file_unique_id=file_unique_id or hashlib.sha256(file_id.encode()).hexdigest()[:12],
            file_path=file_path or f"documents/file_{len(self.files)}",
            data=data,
        )
        with self._lock:
            self.files[file_id] = stored
        return stored

    def stop(self) -> None:
        with self._lock:
            self._closed = True
            self._update_arrived.notify_all()  # end pending long polls
        super().stop()

    # -- incoming updates ------------------------------------------------------------------

    def push_update(self, update: dict[str, Any]) -> None:
        """An update from a user: kept until confirmed through getUpdates."""
        with self._lock:
            self.pending.append(update)
            self._update_arrived.notify_all()

    def record_webhook_error(self, message: str, at: int | None = None) -> None:
        """What Telegram reports after a failed delivery to the webhook."""
        with self._lock:
            self.webhook.last_error_date = int(time.time()) if at is None else at
            self.webhook.last_error_message = message

    def press(
        self, message: SentMessage, text: str, user: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The Update Telegram sends when `user` (by default the private chat's) presses the
        button labelled `text` of `message`'s inline keyboard as it is now."""
        with self._lock:
            current = next(
                (
                    m
                    for m in self.messages
                    if (m.chat_id, m.message_id) == (message.chat_id, message.message_id)
                ),
                message,
            )
            data = next(
                (data for row in current.keyboard for label, data in row if label == text), None
            )
            if data is None:
                raise ValueError(f"message {message.message_id} has no button {text!r}")
            query_id = str(7_000_000_000_000 + next(self._callback_ids))
            self._issued_callbacks.add(query_id)
            update_id = next(self._update_ids)
        sender = user or {"id": message.chat_id, "is_bot": False, "first_name": "Ada"}
        return {
            "update_id": update_id,
            "callback_query": {
                "id": query_id,
                "from": sender,
                "message": _message_json(current, int(time.time())),
                "chat_instance": str(
                    int(hashlib.sha256(str(message.chat_id).encode()).hexdigest()[:15], 16)
                ),
                "data": data,
            },
        }

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        """Answer one Bot API call; raise ApiError for the errors Telegram would return."""
        if method == "getMe":
            return BOT_USER
        if method == "getFile":
            return self._get_file(params)
        if method == "sendChatAction":
            _require(params, "chat_id", "action")
            return True
        if method == "setMessageReaction":
            return self._set_reaction(params)
        if method == "sendMessage":
            return self._send_message(params)
        if method == "answerCallbackQuery":
            return self._answer_callback(params)
        if method == "editMessageReplyMarkup":
            return self._edit_reply_markup(params)
        if method == "editMessageText":
            return self._edit_text(params)
        if method == "sendMessageDraft":
            return self._send_draft(params)
        if method in FILE_METHODS:
            return self._send_file(method, params)
        if method == "getUpdates":
            return self._get_updates(params)
        if method == "setWebhook":
            return self._set_webhook(params)
        if method == "getWebhookInfo":
            return self._webhook_info()
        if method == "setMyCommands":
            return self._set_commands(params)
        if method == "getMyCommands":
            with self._lock:
                return [dict(command) for command in self.commands]
        if method == "setChatMenuButton":
            return self._set_menu_button(params)
        if method == "getChatMenuButton":
            with self._lock:
                return dict(self.menu_button)
        if method == "deleteMyCommands":
            with self._lock:
                self.commands = []
            return True
        if method == "deleteWebhook":
            with self._lock:
                self.webhook = WebhookState(set_calls=self.webhook.set_calls)
                if _flag(params.get("drop_pending_updates")):
                    self.pending.clear()
                self._update_arrived.notify_all()
            return True
        raise ApiError(404, "Not Found: method not found")

    def _set_reaction(self, params: dict[str, Any]) -> bool:
        """Bots set at most one reaction, of the emoji Telegram allows; none removes theirs."""
        _require(params, "chat_id", "message_id")
        reaction = _json_array(params.get("reaction") or [], "reaction types")
        if len(reaction) > 1:
            raise ApiError(400, "Bad Request: REACTIONS_TOO_MANY")
        for item in reaction:  # custom emoji and paid reactions are not played here
            if not (
                isinstance(item, dict)
                and item.get("type") == "emoji"
                and is_reaction_emoji(str(item.get("emoji")))
            ):
                raise ApiError(400, "Bad Request: REACTION_INVALID")
        emoji = tuple(str(item["emoji"]) for item in reaction)
        with self._lock:
            self.reactions.append(
                SetReaction(
                    int(params["chat_id"]), int(params["message_id"]), emoji, time.monotonic()
                )
            )
        return True

    def _answer_callback(self, params: dict[str, Any]) -> bool:
        """A callback query is answered once, and only one Telegram issued (`press`)."""
        _require(params, "callback_query_id")
        query_id = str(params["callback_query_id"])
        with self._lock:
            if query_id not in self._issued_callbacks or query_id in self.answered_callbacks:
                raise ApiError(400, QUERY_INVALID)
            self.answered_callbacks.append(query_id)
        return True

    def _edit_reply_markup(self, params: dict[str, Any]) -> dict[str, Any]:
        """A sent message's inline keyboard changed, or removed (no markup, or an empty one)."""
        _require(params, "chat_id", "message_id")
        keyboard = _inline_keyboard(params.get("reply_markup"))
        key = (int(params["chat_id"]), int(params["message_id"]))
        with self._lock:
            index = next(
                (i for i, m in enumerate(self.messages) if (m.chat_id, m.message_id) == key),
                None,
            )
            if index is None:
                raise ApiError(400, "Bad Request: message to edit not found")
            if self.messages[index].keyboard == keyboard:
                raise ApiError(400, NOT_MODIFIED)
            edited = dataclasses.replace(self.messages[index], keyboard=keyboard)
            self.messages[index] = edited
            self.keyboard_edits.append((*key, keyboard))
        result = _message_json(edited, int(time.time()))
        result["edit_date"] = result["date"]
        return result

    def _edit_text(self, params: dict[str, Any]) -> dict[str, Any]:
        """A sent message's text replaced (checked as sendMessage's), its keyboard the markup
        given or none; recorded in `text_edits` and handed to `on_message` as it reads now."""
        _require(params, "chat_id", "message_id", "text")
        text, plain, parse_mode = self._checked_text(params)
        tags = scan_telegram_html(text)[1] if parse_mode == "HTML" else []
        keyboard = _inline_keyboard(params.get("reply_markup"))
        key = (int(params["chat_id"]), int(params["message_id"]))
        with self._lock:
            index = next(
                (i for i, m in enumerate(self.messages) if (m.chat_id, m.message_id) == key),
                None,
            )
            if index is None:
                raise ApiError(400, "Bad Request: message to edit not found")
            current = self.messages[index]
            if (current.text, current.keyboard) == (text, keyboard):
                raise ApiError(400, NOT_MODIFIED)
            edited = dataclasses.replace(
                current,
                text=text,
                plain_text=plain,
                parse_mode=parse_mode,
                keyboard=keyboard,
                entities=message_entities(plain, tags),
            )
            self.messages[index] = edited
            self.text_edits.append(edited)
        if self.on_message is not None:
            self.on_message(edited)
        result = _message_json(edited, int(time.time()))
        result["edit_date"] = result["date"]
        return result

    def _set_menu_button(self, params: dict[str, Any]) -> bool:
        """The private chats' menu button (no chat_id: every chat's), checked as Telegram
        checks it: a Mini App's only with an https URL."""
        button = params.get("menu_button") or {"type": "default"}
        if isinstance(button, str):
            button = json.loads(button)
        kind = button.get("type") if isinstance(button, dict) else None
        if kind not in ("default", "commands", "web_app"):
            raise ApiError(400, "Bad Request: can't parse menu button")
        if kind == "web_app":
            _web_app_url(button.get("web_app"), "menu button")
            if not str(button.get("text") or "").strip():
                raise ApiError(400, "Bad Request: menu button text is empty")
        with self._lock:
            self.menu_button = dict(button)
        return True

    def _set_commands(self, params: dict[str, Any]) -> bool:
        """The bot's command menu (default scope and language only), checked as Telegram does."""
        commands = _json_array(params.get("commands"), "commands")
        if len(commands) > MAX_BOT_COMMANDS:
            raise ApiError(400, "Bad Request: BOT_COMMANDS_TOO_MUCH")
        for item in commands:
            if not isinstance(item, dict) or not _BOT_COMMAND.fullmatch(str(item.get("command"))):
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(str(item.get("description") or "").strip()) <= 256:
                raise ApiError(400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID")
        with self._lock:
            self.commands = [
                {"command": str(item["command"]), "description": str(item["description"])}
                for item in commands
            ]
        return True

    def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("offset") or 0)
        limit = min(max(int(params.get("limit") or 100), 1), 100)
        timeout = min(max(float(params.get("timeout") or 0), 0), GET_UPDATES_MAX_TIMEOUT)
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                if self.webhook.url:
                    raise ApiError(409, WEBHOOK_CONFLICT)
                # Calling with an offset confirms every update before it: they are gone.
                self.pending = [u for u in self.pending if int(u["update_id"]) >= offset]
                remaining = deadline - time.monotonic()
                if self.pending or remaining <= 0 or self._closed:
                    return list(self.pending[:limit])
                self._update_arrived.wait(remaining)

    def _set_webhook(self, params: dict[str, Any]) -> bool:
        url = str(params.get("url") or "")
        if url and not url.startswith("https://"):
            raise ApiError(
                400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"
            )
        secret = params.get("secret_token")
        if secret is not None and not _SECRET_TOKEN.fullmatch(str(secret)):
            raise ApiError(400, "Bad Request: secret token contains unallowed characters")
        allowed = params.get("allowed_updates")
        if allowed is not None:
            allowed = _json_array(allowed, "allowed updates")
        with self._lock:
            self.webhook.set_calls.append(dict(params))
            self.webhook.url = url
            self.webhook.secret_token = None if secret is None else str(secret)
            if allowed is not None:
                self.webhook.allowed_updates = [str(kind) for kind in allowed]
            if _flag(params.get("drop_pending_updates")):
                self.pending.clear()
            self._update_arrived.notify_all()  # a waiting getUpdates now gets 409
        return True

    def _webhook_info(self) -> dict[str, Any]:
        with self._lock:
            info: dict[str, Any] = {
                "url": self.webhook.url,
                "has_custom_certificate": False,
                "pending_update_count": len(self.pending),
                "max_connections": 40,
            }
            if self.webhook.last_error_date is not None:
                info["last_error_date"] = self.webhook.last_error_date
                info["last_error_message"] = self.webhook.last_error_message
            if self.webhook.allowed_updates is not None:
                info["allowed_updates"] = list(self.webhook.allowed_updates)
            return info

    def _checked_text(self, params: dict[str, Any]) -> tuple[str, str, str | None]:
        """(text, displayed text, parse_mode), or the 400 Telegram answers for the text."""
        text = str(params["text"])
        parse_mode = params.get("parse_mode")
        plain = _displayed(text, parse_mode)
        if not plain.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if telegram_length(plain) > TELEGRAM_TEXT_LIMIT:
            raise ApiError(400, "Bad Request: message is too long")
        return text, plain, parse_mode

    def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "chat_id", "text")
        text, plain, parse_mode = self._checked_text(params)
        tags = scan_telegram_html(text)[1] if parse_mode == "HTML" else []
        keyboard = _inline_keyboard(params.get("reply_markup"))
        web_apps = _web_app_buttons(params.get("reply_markup"))
        if web_apps and int(params["chat_id"]) < 0:
            raise ApiError(400, "Bad Request: BUTTON_TYPE_INVALID")  # private chats only
        thread = params.get("message_thread_id")
        message = SentMessage(
            chat_id=int(params["chat_id"]),
            message_id=next(self._message_ids),
            text=text,
            plain_text=plain,
            parse_mode=parse_mode,
            thread_id=int(thread) if thread is not None else None,
            keyboard=keyboard,
            entities=message_entities(plain, tags),
            web_apps=web_apps,
        )
        with self._lock:
            self.messages.append(message)
        if self.on_message is not None:
            self.on_message(message)
        return _message_json(message, int(time.time()))

    def _send_draft(self, params: dict[str, Any]) -> bool:
        """`sendMessageDraft` as Telegram answers it: private chats only (user ids are
        positive, groups' negative), a non-zero draft id, the text rules of sendMessage."""
        _require(params, "chat_id", "text")
        chat_id = int(params["chat_id"])
        try:
            draft_id = int(params.get("draft_id") or 0)
        except (TypeError, ValueError):
            raise ApiError(400, "Bad Request: invalid draft_id") from None
        if draft_id == 0:
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        if chat_id < 0:
            raise ApiError(400, "Bad Request: TEXTDRAFT_PEER_INVALID")
        text, plain, _ = self._checked_text(params)
        thread = params.get("message_thread_id")
        draft = SentDraft(
            chat_id=chat_id,
            draft_id=draft_id,
            text=text,
            plain_text=plain,
            thread_id=int(thread) if thread is not None else None,
            at=time.monotonic(),
        )
        with self._lock:
            self.drafts.append(draft)
        if self.on_draft is not None:
            self.on_draft(draft)
        return True

    def _send_file(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A file the bot uploads (multipart/form-data), refused where Telegram refuses it."""
        name, folder = FILE_METHODS[method]
        _require(params, "chat_id")
        upload = params.get(name)
        if not isinstance(upload, FormFile):
            if upload not in (None, ""):  # a file_id or URL: the stand-in takes uploads only
                raise ApiError(400, "Bad Request: wrong file identifier/HTTP URL specified")
            raise ApiError(400, f"Bad Request: there is no {name} in the request")
        if len(upload.data) > UPLOAD_MAX_BYTES:
            raise ApiError(413, "Request Entity Too Large")
        if name == "photo":
            if len(upload.data) > PHOTO_MAX_BYTES:
                # Telegram documents the 10 MB limit; this wording is the stand-in's own.
                raise ApiError(400, "Bad Request: photo is too big (at most 10 MB)")
            if not _is_image(upload.data):
                raise ApiError(400, "Bad Request: IMAGE_PROCESS_FAILED")
        caption, plain_caption = None, None
        if params.get("caption") not in (None, ""):
            caption = str(params["caption"])
            plain_caption = _displayed(caption, params.get("parse_mode"))
            if telegram_length(plain_caption) > CAPTION_MAX_CHARS:
                raise ApiError(400, "Bad Request: message caption is too long")
        thread = params.get("message_thread_id")
        message_id = next(self._message_ids)
        # Telegram keeps photos as JPEGs (it recompresses them); other files as they came.
        guessed = mimetypes.guess_extension(_mime_type(upload) or "")
        extension = ".jpg" if name == "photo" else guessed or ""
        stored = self.add_file(
            f"{name}-{message_id}-{hashlib.sha256(upload.data).hexdigest()[:16]}",
            upload.data,
            f"{folder}/file_{len(self.files)}{extension}",
            file_unique_id=hashlib.sha256(upload.data).hexdigest()[:12],  # same file, same id
        )
        sent = SentFile(
            chat_id=int(params["chat_id"]),
            thread_id=int(thread) if thread not in (None, "") else None,
            method=method,
            field=name,
            filename=upload.filename,
            data=upload.data,
            caption=caption,
            plain_caption=plain_caption,
            message_id=message_id,
            file_id=stored.file_id,
            at=time.monotonic(),
        )
        with self._lock:
            self.files_sent.append(sent)
        if self.on_file is not None:
            self.on_file(sent)
        media: dict[str, Any] = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_size": len(upload.data),
        }
        if name == "photo":
            # Telegram always gives a size's dimensions; the stand-in does not decode images.
            media.update(width=1, height=1)
        else:
            if name != "voice":  # a Voice has no file name
                media["file_name"] = upload.filename
            if name != "document":
                media["duration"] = 0  # required in Audio and Voice; not decoded here
            mime_type = _mime_type(upload)
            if mime_type is not None:
                media["mime_type"] = mime_type
        result: dict[str, Any] = {
            "message_id": message_id,
            "from": BOT_USER,
            "chat": {"id": sent.chat_id, "type": "private"},
            "date": int(time.time()),
            name: [media] if name == "photo" else media,
        }
        if sent.thread_id is not None:
            result["message_thread_id"] = sent.thread_id
        if plain_caption is not None:
            result["caption"] = plain_caption
        return result

    def _get_file(self, params: dict[str, Any]) -> dict[str, Any]:
        _require(params, "file_id")
        stored = self.files.get(str(params["file_id"]))
        if stored is None:
            raise ApiError(400, "Bad Request: invalid file_id")
        if len(stored.data) > GET_FILE_MAX_BYTES:
            raise ApiError(400, "Bad Request: file is too big")
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_size": len(stored.data),
            "file_path": stored.file_path,
        }

    def download(self, path: str) -> tuple[int, bytes | dict[str, Any]]:
        """GET `/file/bot<token>/<file_path>`: the bytes, or Telegram's JSON error."""
        route = unquote(path.partition("?")[0])
        prefix = "/file/bot"
        token, _, file_path = route[len(prefix) :].partition("/")
        if token != self.token:
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        for stored in list(self.files.values()):
            if stored.file_path == file_path and len(stored.data) <= GET_FILE_MAX_BYTES:
                with self._lock:
                    self.downloads.append(file_path)
                return 200, stored.data
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        """The JSON handler, plus the file download route (raw bytes, GET)."""
        api = self
        json_handler: Any = super()._request_handler()

        class Handler(json_handler):  # type: ignore[misc]
            def do_GET(self) -> None:
                if not self.path.startswith("/file/"):
                    super().do_GET()
                    return
                status, payload = api.download(self.path)
                if isinstance(payload, bytes):
                    data, kind = payload, "application/octet-stream"
                else:
                    data, kind = json.dumps(payload).encode(), "application/json"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return cast(type[BaseHTTPRequestHandler], Handler)

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any]:
        """Route `/bot<token>/<method>`; parameters as JSON, form (urlencoded or multipart, a
        file part as a `FormFile`) or query string."""
        route, _, query = path.partition("?")
        parts = route.strip("/").split("/")
        if len(parts) != 2 or not parts[0].startswith("bot"):
            return 404, {"ok": False, "error_code": 404, "description": "Not Found"}
        content_type = headers.get("Content-Type", headers.get("content-type", ""))
        if "json" in content_type:
            loaded = json.loads(body or b"{}")
            params = loaded if isinstance(loaded, dict) else {}
        elif content_type.startswith("multipart/form-data"):  # uploads (sendPhoto...)
            params = dict(parse_form_data(content_type, body))
        else:
            params = dict(parse_qsl(body.decode() or query))
        return self._dispatch(parts[0][3:], parts[1], params)

    def _dispatch(self, token: str, method: str, params: dict[str, Any]) -> tuple[int, Any]:
        if token != self.token:
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        return self.perform(method, params)

    def perform(self, method: str, params: dict[str, Any]) -> tuple[int, Any]:
        """One call of the bot's, as Telegram's servers take it: recorded (`calls`, `timeline`),
        then answered with (HTTP status, JSON body)."""
        with self._lock:
            self.calls.append((method, params))
            self.timeline.append((time.monotonic(), method, params))
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


def _message_json(message: SentMessage, date: int) -> dict[str, Any]:
    """A sent text message as the Bot API shows it (user ids are positive, groups' negative)."""
    result: dict[str, Any] = {
        "message_id": message.message_id,
        "from": BOT_USER,
        "chat": {"id": message.chat_id, "type": "private" if message.chat_id > 0 else "supergroup"},
        "date": date,
        "text": message.plain_text,
    }
    if message.entities:
        result["entities"] = [entity.model_dump(exclude_none=True) for entity in message.entities]
    if message.keyboard:
        result["reply_markup"] = {
            "inline_keyboard": [
                [{"text": label, "callback_data": data} for label, data in row]
                for row in message.keyboard
            ]
        }
    return result


def _inline_keyboard(markup: Any) -> Keyboard:
    """`reply_markup`'s inline keyboard (a dict in a JSON body, JSON in a form), checked as
    Telegram checks it; () when there is none (other kinds of markup are not played here)."""
    if markup in (None, ""):
        return ()
    if isinstance(markup, str):
        try:
            markup = json.loads(markup)
        except ValueError:
            markup = None
    if not isinstance(markup, dict):
        raise ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
    rows = markup.get("inline_keyboard")
    if rows is None:
        return ()
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise ApiError(
            400,
            'Bad Request: can\'t parse inline keyboard button: field "inline_keyboard" '
            "of the InlineKeyboardMarkup must be an Array of Arrays",
        )
    if sum(len(row) for row in rows) > MAX_INLINE_BUTTONS:
        raise ApiError(400, "Bad Request: reply markup is too long")
    keyboard = []
    for row in rows:
        buttons = []
        for button in row:
            text = button.get("text") if isinstance(button, dict) else None
            if not isinstance(text, str) or not text.strip():
                raise ApiError(
                    400, "Bad Request: text buttons are unallowed in the inline keyboard"
                )
            if isinstance(button, dict) and "web_app" in button:
                continue  # a Mini App's: _web_app_buttons
            data = button.get("callback_data")
            if not isinstance(data, str) or not 1 <= len(data.encode()) <= CALLBACK_DATA_MAX_BYTES:
                raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
            buttons.append((text, data))
        if buttons:
            keyboard.append(tuple(buttons))
    return tuple(keyboard)


def _web_app_buttons(markup: Any) -> tuple[tuple[str, str], ...]:
    """The inline keyboard's Mini App buttons, (text, url), each URL checked as Telegram
    checks it (https only)."""
    if isinstance(markup, str) and markup:
        markup = json.loads(markup)
    if not isinstance(markup, dict):
        return ()
    found = []
    for row in markup.get("inline_keyboard") or []:
        for button in row:
            if isinstance(button, dict) and "web_app" in button:
                found.append((str(button.get("text")), _web_app_url(button["web_app"], "button")))
    return tuple(found)


def _web_app_url(web_app: Any, where: str) -> str:
    url = web_app.get("url") if isinstance(web_app, dict) else None
    if not isinstance(url, str) or not url.startswith("https://"):
        raise ApiError(
            400,
            f"Bad Request: {where} Web App URL {url!r} is invalid: Only HTTPS links are allowed",
        )
    return url


def _displayed(text: str, parse_mode: object) -> str:
    """The text as the user reads it, or the 400 Telegram answers for its markup."""
    if parse_mode == "HTML":
        try:
            return parse_telegram_html(text)
        except TelegramHtmlError as error:
            raise ApiError(400, f"Bad Request: {error}") from None
    if parse_mode is not None:
        raise ApiError(400, f"Bad Request: unsupported parse_mode {parse_mode}")
    return text


def _is_image(data: bytes) -> bool:
    """A JPEG, PNG, GIF or WebP, by its magic bytes (what Telegram takes as a photo)."""
    return data.startswith(_IMAGE_MAGIC) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")


def _mime_type(upload: FormFile) -> str | None:
    """The type Telegram reports: guessed from the file name, else as the client declared it."""
    guessed = mimetypes.guess_type(upload.filename)[0]
    if guessed is None and upload.content_type not in (None, "application/octet-stream"):
        return upload.content_type
    return guessed


def _flag(value: object) -> bool:
    return value is True or str(value).lower() == "true"


def _require(params: dict[str, Any], *names: str) -> None:
    for name in names:
        if params.get(name) in (None, ""):
            raise ApiError(400, f"Bad Request: {name} is empty")


def _json_array(value: Any, what: str) -> list[Any]:
    """An array parameter: a list in a JSON body, a JSON-serialized array in a form."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if not isinstance(value, list):
        raise ApiError(400, f"Bad Request: can't parse {what} JSON object")
    return value
