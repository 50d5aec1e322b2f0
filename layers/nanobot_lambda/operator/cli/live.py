"""The bot's replies on the terminal for `chat`, as Telegram shows them.

A reply being written grows on its line (the drafts the local Bot API receives), and the
next message in its chat replaces it, as in Telegram, whether or not it reads the same (a
draft is rendered from unfinished Markdown: an unclosed `*` or `[` shows otherwise than in the
finished message). A link shows its address: `the docs (https://…)`. The
buttons of a message's inline keyboard show under it, numbered, a row a line, with how to press
one: `   [1 Yes] [2 No, thanks]`. A file the bot sends (photo, document, audio, voice note) is
saved in the chat's files folder, and its line says where:
`nanobot> 📎 photo plot.png (12.3 KB) → chat-files/plot.png — caption`.
Everything goes through the `Terminal`, which keeps it above the prompt.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from nanobot_lambda.operator.cli.terminal import Terminal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nanobot_lambda.adapters.telegram.models import MessageEntity
    from nanobot_lambda.operator.local.bot_api import SentDraft, SentFile, SentMessage

PREFIX = "nanobot> "
PRESS_HINT = "   (to press one: /press 1, or /press and its label)"
_UNSAFE_IN_NAMES = re.compile(r"[\x00-\x1f\x7f/\\]")


class LiveReplies:
    def __init__(self, out: Terminal | TextIO | None = None, files_dir: Path | None = None) -> None:
        self.terminal = out if isinstance(out, Terminal) else Terminal(out)
        self.files_dir = files_dir  # None: files are announced, not saved
        self._lock = threading.Lock()
        self.last_keyboard: SentMessage | None = None  # the latest message with buttons

    def draft(self, draft: SentDraft) -> None:
        self.terminal.live(_chat(draft.chat_id, draft.thread_id), PREFIX + draft.plain_text)

    def message(self, message: SentMessage) -> None:
        text = PREFIX + with_link_urls(message.plain_text, message.entities) + "\n"
        buttons = [label for row in message.keyboard for label, _ in row]
        number = 0
        for row in message.keyboard:  # its inline keyboard's buttons, a row a line
            cells = []
            for label, _ in row:
                number += 1
                cells.append(f"[{number} {label}]")
            text += " " * 3 + " ".join(cells) + "\n"
        if buttons:
            text += PRESS_HINT + "\n"
            with self._lock:
                self.last_keyboard = message
        self.terminal.finish(_chat(message.chat_id, message.thread_id), text)

    def file(self, sent: SentFile) -> None:
        line = f"{PREFIX}📎 {sent.field} {sent.filename} ({_size(len(sent.data))})"
        if self.files_dir is not None:
            line += f" → {shown_path(self.save(sent))}"
        if sent.plain_caption:
            line += f" — {sent.plain_caption}"
        self.terminal.lines(line + "\n")

    def save(self, sent: SentFile) -> Path:
        """Write a sent file into the files folder under its own name (made safe, and made
        unique with -1, -2… rather than overwriting an earlier file)."""
        assert self.files_dir is not None
        self.files_dir.mkdir(parents=True, exist_ok=True)
        name = _UNSAFE_IN_NAMES.sub("_", Path(sent.filename).name).strip()
        if not name or name.startswith("."):
            name = f"{sent.field}-{sent.message_id}{Path(sent.filename).suffix}"
        stem, suffix = Path(name).stem, Path(name).suffix
        with self._lock:
            path, counter = self.files_dir / name, 0
            while path.exists():
                counter += 1
                path = self.files_dir / f"{stem}-{counter}{suffix}"
            path.write_bytes(sent.data)
        return path


def _chat(chat_id: int, thread_id: int | None) -> tuple[int, int | None]:
    """What a draft belongs to, and the message that replaces it is sent to: its chat (and
    topic). Not its draft id: the message has none."""
    return chat_id, thread_id


def button_label(message: SentMessage, choice: str) -> str | None:
    """The label of the button `choice` names: its number as shown (1 for the first), or its
    label (case aside); None when no button matches."""
    labels = [label for row in message.keyboard for label, _ in row]
    choice = choice.strip()
    if choice.isdigit() and 1 <= int(choice) <= len(labels):
        return labels[int(choice) - 1]
    for label in labels:
        if label.casefold() == choice.casefold():
            return label
    return None


def with_link_urls(text: str, entities: Sequence[MessageEntity]) -> str:
    """The text with each text link's address after it, `the docs (https://…)`, as a
    terminal cannot hide an address under a word. Offsets are UTF-16 code units."""
    links = sorted(
        (entity for entity in entities if entity.type == "text_link" and entity.url),
        key=lambda entity: entity.offset + entity.length,
        reverse=True,
    )
    encoded = text.encode("utf-16-le")
    for entity in links:
        end = (entity.offset + entity.length) * 2
        shown = encoded[entity.offset * 2 : end].decode("utf-16-le", errors="replace")
        if shown.strip() == entity.url:
            continue
        encoded = encoded[:end] + f" ({entity.url})".encode("utf-16-le") + encoded[end:]
    return encoded.decode("utf-16-le", errors="replace")


def shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"
