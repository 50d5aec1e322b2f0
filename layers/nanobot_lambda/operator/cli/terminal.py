"""The chat's terminal: the prompt on the last line, everything the bot says above it.

`read_line` shows the prompt and reads a line with `input()` (with readline, when Python has
it), while the bot's replies, reminders and files arrive from other threads through `live`,
`finish` and `lines`. While the prompt is shown, each piece of output erases the prompt line,
is written where the output ends, and the prompt is drawn again with what the person has typed
so far (readline's line buffer): typing goes on undisturbed, and nothing prints over the prompt.

A reply being written (the drafts) ends mid-line. Its end is kept with the terminal's own
cursor memory (DEC save/restore cursor, ESC 7 / ESC 8), after moving down and up one line
(IND, RI) so that the line under it exists: drawing the prompt there then scrolls nothing, and
the saved place stays right. The next part of the reply continues there. Once the person sends
a line, that line sits under the unfinished reply: the reply continues on a new line of its own.

Without a prompt (`chat -m`, a test writing to a buffer) text is written as it comes, so the
output is the same plain text with or without a terminal. After `mute` nothing is written:
a turn still running while the chat quits does not print over the shell's prompt.
"""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Hashable
from typing import TextIO

try:
    import readline
except ImportError:  # Python without readline (some builds): input() still works
    readline = None  # type: ignore[assignment]

SAVE_CURSOR_BELOW = "\x1bD\x1bM\x1b7\r\n"  # make the line below exist, save the place, go there
RESTORE_CURSOR = "\x1b8"
ERASE_BELOW = "\x1b[J"  # from the cursor to the end of the screen


class Terminal:
    def __init__(self, out: TextIO | None = None, prompt: str = "you> ") -> None:
        self._out = out or sys.stdout
        self.prompt = prompt
        self._lock = threading.RLock()
        self._live: tuple[Hashable, str] | None = None  # the unfinished line: key, text shown
        self._prompt_shown = False
        self._end_saved = False  # the unfinished line's end is in the terminal's cursor memory
        self._muted = False

    # -- output, from any thread -------------------------------------------------------------

    def live(self, key: Hashable, text: str) -> None:
        """Show `text` as the unfinished line `key`: where it extends what that line shows,
        only the rest is written; otherwise it starts a line of its own."""
        with self._lock:
            if self._live is not None and self._live[0] == key and text.startswith(self._live[1]):
                self._emit(text[len(self._live[1]) :], unfinished=True)
            else:
                self._emit(self._line_break() + text, unfinished=True)
            self._live = (key, text)

    def finish(self, text: str) -> None:
        """Finish the unfinished line with `text` (and its lines), if `text` continues it;
        otherwise `text` goes on lines of its own. `text` ends with a newline."""
        with self._lock:
            if self._live is not None and text.startswith(self._live[1]):
                self._emit(text[len(self._live[1]) :], unfinished=False)
            else:
                self._emit(self._line_break() + text, unfinished=False)
            self._live = None

    def lines(self, text: str) -> None:
        """Whole lines (`text` ends with a newline), under any unfinished line."""
        with self._lock:
            self._emit(self._line_break() + text, unfinished=False)
            self._live = None

    def mute(self) -> None:
        with self._lock:
            self._muted = True

    @property
    def live_key(self) -> Hashable | None:
        with self._lock:
            return self._live[0] if self._live is not None else None

    # -- input, from the main thread ---------------------------------------------------------

    def read_line(self) -> str:
        """The person's next line (EOFError on Ctrl-D, KeyboardInterrupt on Ctrl-C)."""
        with self._lock:
            if self._live is not None and not self._end_saved and not self._muted:
                self._write(SAVE_CURSOR_BELOW)
                self._end_saved = True
            self._prompt_shown = True
        try:
            return input(self.prompt)
        except (EOFError, KeyboardInterrupt):
            self._write("\n")  # what follows starts on a line of its own, not after the prompt
            raise
        finally:
            with self._lock:
                self._prompt_shown = False
                # The line just typed sits under an unfinished reply: it cannot go on there.
                self._live = None
                self._end_saved = False

    # -- drawing -----------------------------------------------------------------------------

    def _line_break(self) -> str:
        return "\n" if self._live is not None else ""

    def _emit(self, text: str, *, unfinished: bool) -> None:
        if self._muted or not text:
            return
        if not self._prompt_shown:
            self._write(text)
            return
        typed = readline.get_line_buffer() if readline is not None else ""
        if self._end_saved:  # back to the end of the unfinished line; the prompt goes
            self._write(RESTORE_CURSOR + ERASE_BELOW)
        else:  # to the start of the prompt (and of what is typed, over as many rows)
            rows_up = (len(self.prompt) + len(typed)) // max(shutil.get_terminal_size()[0], 1)
            self._write("\r" + (f"\x1b[{rows_up}A" if rows_up else "") + ERASE_BELOW)
        self._write(text + (SAVE_CURSOR_BELOW if unfinished else ""))
        self._end_saved = unfinished
        self._write(self.prompt + typed)

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()
