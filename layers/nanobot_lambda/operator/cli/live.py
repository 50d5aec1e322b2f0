"""The bot's replies on the terminal for `chat`: a reply being written grows on its line (the
drafts the local Bot API receives), and the message it becomes finishes that line."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from nanobot_lambda.operator.local.bot_api import SentDraft, SentMessage

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
            self._draft_id, self._shown = None, ""

    def _end_line(self) -> None:
        if self._draft_id is not None:
            self._write("\n")

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()
