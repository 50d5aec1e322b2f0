"""A small Telegram Bot API client over requests.

A call that fails is tried again (`max_attempts` in all) after a 429 (as long as Telegram asks),
a 5xx, or a network failure. Of network failures, those before the request left (no connection
could be made) are safe to repeat; a connection that drops *after* the request was sent (a reset,
no answer within the read timeout) may have been performed by Telegram. The Bot API has no
idempotency key, so such a send is repeated anyway, rather than lose the message: it may then
show twice (the second at-most-twice window of README's "Delivery guarantees"); each is logged.

The bot token is part of every Bot API URL, file download URLs included, so URLs are never
logged and no exception that could carry one leaves this module: `TelegramError` holds only the
method, the status and Telegram's description (with the token masked, should Telegram ever echo
it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import requests
import urllib3
from pydantic import SecretStr

from nanobot_lambda.adapters.telegram.drafts import render_draft
from nanobot_lambda.adapters.telegram.formatting import html_to_plain_text, render_messages
from nanobot_lambda.adapters.telegram.models import User
from nanobot_lambda.core.errors import ChannelError, ChannelFailure
from nanobot_lambda.core.outgoing import Button, OutgoingFile

logger = logging.getLogger(__name__)
# urllib3 logs request paths (which contain the token) at DEBUG.
logging.getLogger("urllib3").setLevel(logging.WARNING)

TYPING_REFRESH_SECONDS = 4.5  # Telegram shows "typing…" for 5 s per sendChatAction
MAX_RETRY_AFTER_SECONDS = 30
DRAFT_TIMEOUT = (2.0, 3.0)  # connect, read: a draft late by more is not worth waiting for
UPLOAD_TIMEOUT = (3.05, 120.0)  # Telegram answers an upload once it has taken in up to 50 MB
DOWNLOAD_CHUNK_BYTES = 64 * 1024


def request_may_have_arrived(error: requests.RequestException) -> bool:
    """Whether a failed request may have reached Telegram: anything but a connection that
    could not be made at all (refused, a name that does not resolve, a connect time-out)."""
    if isinstance(error, requests.ConnectTimeout):
        return False
    reason = getattr(error.args[0], "reason", None) if error.args else None
    return not isinstance(reason, urllib3.exceptions.NewConnectionError)


BLOCKED_STATUS = 403  # "Forbidden: bot was blocked by the user" and its kin
RATE_LIMITED_STATUS = 429


def failure_kind(status: int | None) -> ChannelFailure:
    """What a Bot API status means for the caller (core/errors.py): the one place the functions'
    code's questions (rate-limited? blocked? refused?) are answered from a status number."""
    if status == RATE_LIMITED_STATUS:
        return "rate_limited"
    if status == BLOCKED_STATUS:
        return "blocked"
    if status is not None and 400 <= status < 500:
        return "refused"
    return "unavailable"


class TelegramError(ChannelError):
    """A Bot API call failed: the method, Telegram's status and description (never a URL), and
    what that means (`kind`, from the status)."""

    def __init__(
        self,
        method: str,
        status: int | None,
        description: str,
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(
            method, status, description, kind=failure_kind(status), retry_after=retry_after
        )

    @property
    def is_parse_error(self) -> bool:
        return self.status == 400 and "can't parse entities" in self.description.lower()


class FileTooLarge(TelegramError):
    """A file is larger than the caller accepts (or than Telegram lets bots download)."""


class TelegramBot:
    def __init__(
        self,
        token: SecretStr,
        api_base: str = "https://api.telegram.org",
        *,
        session: requests.Session | None = None,
        timeout: tuple[float, float] = (3.05, 30.0),
        max_attempts: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._token = token.get_secret_value()
        self._base = f"{api_base.rstrip('/')}/bot{self._token}"
        # Downloads: https://api.telegram.org/file/bot<token>/<file_path>, as secret as the token.
        self._file_base = f"{api_base.rstrip('/')}/file/bot{self._token}"
        self._me: User | None = None
        self._me_lock = threading.Lock()
        self._session = session or requests.Session()
        self._timeout = timeout
        self._max_attempts = max_attempts
        self._sleep = sleep

    def _mask(self, text: str) -> str:
        return text.replace(self._token, "<bot-token>") if self._token else text

    def call(
        self,
        method: str,
        *,
        attempts: int | None = None,
        http_timeout: tuple[float, float] | None = None,
        files: dict[str, tuple[str, bytes]] | None = None,
        **params: Any,
    ) -> Any:
        """Call a Bot API method; retries 429 (honouring retry_after), 5xx and network errors.
        `http_timeout` (connect, read) replaces the client's for this call. With `files`
        (field -> (file name, bytes)), the call is an upload (multipart/form-data)."""
        payload = {key: value for key, value in params.items() if value is not None}
        sent: dict[str, Any] = {"json": payload}
        if files is not None:
            sent = {"data": {key: str(value) for key, value in payload.items()}, "files": files}
        attempts = attempts or self._max_attempts
        for attempt in range(1, attempts + 1):
            last = attempt == attempts
            failure = None
            try:
                response = self._session.post(
                    f"{self._base}/{method}", timeout=http_timeout or self._timeout, **sent
                )
            except requests.RequestException as error:
                # The exception text includes the URL, hence the token: keep only its type, and
                # raise outside the handler so that it is not even kept as __context__.
                failure = TelegramError(method, None, type(error).__name__)
                if request_may_have_arrived(error):
                    logger.warning(
                        "%s: the connection dropped after the request was sent (%s); "
                        "Telegram may have performed it%s",
                        method,
                        type(error).__name__,
                        "" if last else ": sending it again",
                    )
            if failure is not None:
                if last:
                    raise failure
                self._sleep(0.5 * 2 ** (attempt - 1))
                continue
            try:
                body = response.json()
            except ValueError:
                body = {"ok": False, "description": f"HTTP {response.status_code}"}
            if body.get("ok"):
                return body.get("result")
            status = int(body.get("error_code") or response.status_code)
            description = self._mask(str(body.get("description", "")))
            retry_after = None
            if status == 429:
                retry_after = float((body.get("parameters") or {}).get("retry_after", 1))
                if not last:
                    self._sleep(min(retry_after, MAX_RETRY_AFTER_SECONDS))
                    continue
            if status >= 500 and not last:
                self._sleep(0.5 * 2 ** (attempt - 1))
                continue
            raise TelegramError(method, status, description, retry_after=retry_after)
        raise AssertionError("unreachable")

    def get_me(self) -> User:
        """The bot's own user (id, username), asked once per container and then cached."""
        with self._me_lock:
            if self._me is None:
                self._me = User.model_validate(self.call("getMe"))
            return self._me

    def get_file(self, file_id: str) -> tuple[str, int | None]:
        """(file_path, file_size) for a file the bot received; 400 for files over 20 MB."""
        try:
            result = self.call("getFile", file_id=file_id)
        except TelegramError as error:
            if error.status == 400 and "too big" in error.description.lower():
                raise FileTooLarge("getFile", error.status, error.description) from None
            raise
        file_path = (result or {}).get("file_path")
        if not file_path:
            raise TelegramError("getFile", None, "no file_path in the answer")
        size = result.get("file_size")
        return str(file_path), int(size) if size is not None else None

    def download(self, file_path: str, max_bytes: int) -> bytes:
        """The file's bytes, streamed; raises FileTooLarge as soon as it passes `max_bytes`.

        The download URL holds the token: no error raised here carries it (nor the path).
        Network errors and 5xx are retried like API calls.
        """
        url = f"{self._file_base}/{quote(file_path.lstrip('/'), safe='/')}"
        for attempt in range(1, self._max_attempts + 1):
            try:
                return self._download_once(url, max_bytes)
            except requests.RequestException as error:
                # Raised below, outside the handler: the URL must not survive as __context__.
                failure = TelegramError("download", None, type(error).__name__)
            except TelegramError as error:
                failure = error
            retryable = failure.status is None or failure.status >= 500
            if attempt == self._max_attempts or isinstance(failure, FileTooLarge) or not retryable:
                raise failure
            self._sleep(0.5 * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    def _download_once(self, url: str, max_bytes: int) -> bytes:
        with self._session.get(url, stream=True, timeout=self._timeout) as response:
            if response.status_code != 200:
                try:
                    description = str(response.json().get("description", ""))
                except ValueError:
                    description = ""
                description = self._mask(description or f"HTTP {response.status_code}")
                raise TelegramError("download", response.status_code, description)
            declared = response.headers.get("Content-Length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise FileTooLarge("download", None, f"file is larger than {max_bytes} bytes")
            received = bytearray()
            for chunk in response.iter_content(DOWNLOAD_CHUNK_BYTES):
                received += chunk
                if len(received) > max_bytes:
                    raise FileTooLarge("download", None, f"file is larger than {max_bytes} bytes")
            return bytes(received)

    def send_text(self, chat_id: int, markdown: str, *, thread_id: int | None = None) -> list[int]:
        """Send a Markdown answer as one or more HTML messages; returns their message ids.

        A chunk Telegram refuses to parse as HTML is re-sent as plain text, so the user always
        gets the words even when the formatting fails.
        """
        return [
            self.send_part(chat_id, chunk, thread_id=thread_id)
            for chunk in self.message_parts(markdown)
        ]

    def send_web_app(self, chat_id: int, text: str, label: str, url: str) -> int:
        """One message with a button that opens the Mini App at `url` (the console)."""
        (html,) = self.message_parts(text)
        markup = {"inline_keyboard": [[{"text": label, "web_app": {"url": url}}]]}
        result = self._send_html("sendMessage", html, chat_id=chat_id, reply_markup=markup)
        return int(result["message_id"])

    def message_parts(self, text: str) -> list[str]:
        """The Telegram HTML messages the Markdown `text` goes out as (see formatting.py)."""
        return render_messages(text)

    def send_part(
        self,
        chat_id: int,
        html: str,
        *,
        thread_id: int | None = None,
        buttons: Sequence[Button] = (),
    ) -> int:
        """Send one message of Telegram HTML within the length limit; returns its message id.
        If Telegram refuses to parse the HTML, the same text goes out as plain text. Each
        button goes on its own row; a label's callback data is its index (`b0`, `b1`…), the
        press names the button by its text (inbound.button_text); a (label, data) pair's is
        its data."""
        markup = None
        if buttons:
            rows = [[_inline_button(n, button)] for n, button in enumerate(buttons)]
            markup = {"inline_keyboard": rows}
        result = self._send_html(
            "sendMessage", html, chat_id=chat_id, message_thread_id=thread_id, reply_markup=markup
        )
        return int(result["message_id"])

    def remove_buttons(self, chat_id: int, message_id: int) -> bool:
        try:
            self.call("editMessageReplyMarkup", chat_id=chat_id, message_id=message_id)
        except TelegramError as error:
            if error.status == 400 and (
                "not modified" in error.description or "not found" in error.description
            ):
                return False
            raise
        return True

    def edit_text(self, chat_id: int, message_id: int, text: str) -> bool:
        """editMessageText with the Markdown `text` rendered (one message), no keyboard."""
        try:
            self._send_html(
                "editMessageText", render_messages(text)[0], chat_id=chat_id, message_id=message_id
            )
        except TelegramError as error:
            if error.status == 400 and (
                "not modified" in error.description or "not found" in error.description
            ):
                return False
            raise
        return True

    def send_file(self, chat_id: int, file: OutgoingFile, *, thread_id: int | None = None) -> int:
        """Upload `file` with the method of its kind (sendPhoto, sendDocument, sendAudio,
        sendVoice), its caption as plain text."""
        method = f"send{file.kind.capitalize()}"
        result = self.call(
            method,
            files={file.kind: (file.name, file.data)},
            http_timeout=UPLOAD_TIMEOUT,
            chat_id=chat_id,
            message_thread_id=thread_id,
            caption=file.caption or None,
        )
        return int(result["message_id"])

    def _send_html(self, method: str, html: str, **params: Any) -> Any:
        """`method` with `html` as its text; if Telegram cannot parse the HTML, the same text
        goes out as plain text, so the user always gets the words."""
        try:
            return self.call(method, text=html, parse_mode="HTML", **params)
        except TelegramError as error:
            if not error.is_parse_error:
                raise
            logger.warning("Telegram refused the HTML of a %s; resending as plain text", method)
            return self.call(method, text=html_to_plain_text(html), **params)

    def draft_parts(self, text: str) -> list[str]:
        """The Telegram HTML drafts Markdown still being written shows as (see ./drafts.py)."""
        return render_draft(text)

    def send_draft(
        self, chat_id: int, draft_id: int, part: str, *, thread_id: int | None = None
    ) -> None:
        """`sendMessageDraft`: one attempt with a short timeout, so a slow or rate-limited
        draft never holds up the answer; HTML Telegram cannot parse goes out as plain text."""
        self._send_html(
            "sendMessageDraft",
            part,
            attempts=1,
            http_timeout=DRAFT_TIMEOUT,
            chat_id=chat_id,
            draft_id=draft_id,
            message_thread_id=thread_id,
        )

    def send_chat_action(
        self, chat_id: int, action: str = "typing", *, thread_id: int | None = None
    ) -> None:
        # One attempt: a lost typing indicator is not worth a retry that delays the answer.
        self.call(
            "sendChatAction",
            attempts=1,
            chat_id=chat_id,
            action=action,
            message_thread_id=thread_id,
        )

    @contextmanager
    def typing(self, chat_id: int, *, thread_id: int | None = None) -> Iterator[None]:
        """Show "typing…" in the chat until the block ends (refreshed in a background thread)."""
        stop = threading.Event()

        def keep_typing() -> None:
            while not stop.is_set():
                try:
                    self.send_chat_action(chat_id, thread_id=thread_id)
                except TelegramError as error:
                    logger.debug("typing indicator failed: %s", error.status)
                    return
                stop.wait(TYPING_REFRESH_SECONDS)

        worker = threading.Thread(target=keep_typing, name="typing", daemon=True)
        worker.start()
        try:
            yield
        finally:
            stop.set()
            worker.join(timeout=1)


def _inline_button(number: int, button: Button) -> dict[str, str]:
    if isinstance(button, str):
        return {"text": button, "callback_data": f"b{number}"}
    label, data = button
    return {"text": label, "callback_data": data}
