"""The bot's replies on the terminal for `chat`: a reply being written grows on its line (the
drafts the local Bot API receives), and the message it becomes finishes that line. A file the
bot sends shows on a line of its own: `nanobot> 📎 photo plot.png (12.3 KB) — caption`; the
buttons of a message's inline keyboard under it, a row a line: `   [Yes] [No, thanks]`."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from nanobot_lambda.operator.local.bot_api import SentDraft, SentFile, SentMessage

PREFIX = "nanobot> "


class LiveReplies:
    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout
        self._lock = threading.Lock()
        self._draft_id: int | None = None  # the draft whose text ends the last line
        self._shown = ""  # that draft's text, as printed

    def draft(self, draft: SentDraft) -> None:
        with self._lock:
            text = draft.plain_text
            if draft.draft_id == self._draft_id and text.startswith(self._shown):
                self._write(text[len(self._shown) :])
            else:  # another message, or a part past the length limit, or a restarted stream
                self._end_line()
                self._write(PREFIX + text)
            self._draft_id, self._shown = draft.draft_id, text

    def message(self, message: SentMessage) -> None:
        with self._lock:
            text = message.plain_text
            if self._draft_id is not None and text.startswith(self._shown):
                self._write(text[len(self._shown) :] + "\n")
            else:
                self._end_line()
                self._write(PREFIX + text + "\n")
            for row in message.keyboard:  # its inline keyboard's buttons, a row a line
                self._write(" " * 3 + " ".join(f"[{label}]" for label, _ in row) + "\n")
            self._draft_id, self._shown = None, ""

    def file(self, sent: SentFile) -> None:
        line = f"{PREFIX}📎 {sent.field} {sent.filename} ({_size(len(sent.data))})"
        if sent.plain_caption:
            line += f" — {sent.plain_caption}"
        with self._lock:
            self._end_line()
            self._write(line + "\n")
            self._draft_id, self._shown = None, ""

    def _end_line(self) -> None:
        if self._draft_id is not None:
            self._write("\n")

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"
