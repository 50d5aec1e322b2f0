"""The chat's terminal: the prompt on the last line, everything the bot says above it.

`read_line` shows the prompt and reads a line with `input()` (with readline, when Python has
it), while the bot's replies, reminders and files arrive from other threads through `live`,
`finish` and `lines`. While the prompt is shown, each piece of output erases the prompt line,
is written where the output ends, and the prompt is drawn again with what the person has typed
so far (readline's line buffer): typing goes on undisturbed, and nothing prints over the prompt.

A reply being written (its drafts) is shown as Telegram shows a draft: it belongs to its chat,
stays the last thing above the prompt, and the next message in that chat replaces it, whatever
either says (the draft is rendered from unfinished Markdown, the message from the finished
text: the two need not read the same). So the draft is always erased before anything else is
written: the terminal knows how many rows it takes (its text, wrapped at the terminal's width)
and moves up over them. Its end is kept with the terminal's own cursor memory (DEC save/restore
cursor, ESC 7 / ESC 8) while the prompt is under it, after moving down and up one line (IND,
RI) so that the line under it exists: drawing the prompt there then scrolls nothing, and the
saved place stays right. A draft taller than the screen is shown cut to fit (ending in "…"),
as rows that scrolled out of the screen could not be erased. Whatever comes while a draft is
shown (a file, a message in another chat, the line the person just sent) goes above it, and
the draft is drawn again under it.

Everything is drawn under one lock, each drawing in one write. readline writes on the prompt
line too, from the main thread and outside the lock: the prompt as `input()` begins, each key
typed, the line break of Enter. A drawing from another thread could fall between two of its
writes (between a key's insertion and its echo, the key then shown twice; between Enter's line
break and its giving the terminal back, the line sent taken for the prompt and erased). So
while readline shows the prompt, other threads never draw: they keep the drawing and signal the
main thread (`WAKE_SIGNAL`). readline waits for keys in `select()`, which the signal
interrupts; Python runs the signal's handler right there, in the main thread, between two keys,
and the handler draws what was kept: readline is then between writes by construction. Should
the handler run anywhere else (readline has taken the line sent, the terminal is in line mode
again), it draws nothing, and `read_line` draws what was kept, under the line sent.
`read_line` takes the lock before `input()` and readline's pre-input hook lets it go once the
prompt is drawn (only then is it shown): output that comes meanwhile waits, instead of drawing
a prompt that readline's would follow.

Without a screen (`chat -m`, output to a file or a pipe, a test writing to a buffer) nothing
can be erased: drafts are not written, and the messages are written as they come, as plain
text. After `mute` nothing is written: a turn still running while the chat quits does not
print over the shell's prompt.
"""

from __future__ import annotations

import ctypes
import shutil
import signal
import sys
import threading
import unicodedata
from collections.abc import Callable, Hashable
from typing import TextIO

try:
    import readline
except ImportError:  # Python without readline (some builds): input() still works
    readline = None  # type: ignore[assignment]
try:
    import termios
except ImportError:  # not a Unix: no readline either
    termios = None  # type: ignore[assignment]

SAVE_CURSOR_BELOW = "\x1bD\x1bM\x1b7\r\n"  # make the line below exist, save the place, go there
RESTORE_CURSOR = "\x1b8"
ERASE_BELOW = "\x1b[J"  # from the cursor to the end of the screen
CUT = "…"  # the end of a draft shown cut to the screen's height
TAB_STOP = 8
# The main thread's wake-up for drawing between readline's writes (no other use in the chat).
WAKE_SIGNAL: int | None = getattr(signal, "SIGUSR1", None)


class Terminal:
    def __init__(
        self,
        out: TextIO | None = None,
        prompt: str = "you> ",
        *,
        screen: bool | None = None,
        size: Callable[[], tuple[int, int]] | None = None,
    ) -> None:
        """`screen`: the output is a terminal the person types at (default: stdout and stdin
        are both terminals), so what is shown can be erased and drafts are shown. `size`:
        the terminal's (columns, lines)."""
        self._out = out or sys.stdout
        self.prompt = prompt
        if screen is None:
            screen = self._out.isatty() and sys.stdin.isatty()
        self._screen = screen
        self._size = size or _terminal_size
        self._lock = threading.RLock()
        self._live: tuple[Hashable, str] | None = None  # the draft: its key, the text shown
        self._prompt_shown = False
        self._end_saved = False  # the draft's end is in the terminal's cursor memory
        self._muted = False
        self._readline_prompt = False  # readline draws the prompt, and says when (its hook)
        self._held_for_prompt = False  # read_line holds the lock until the prompt is drawn
        self._kept: list[Callable[[], bool]] = []  # what waits for a moment to be drawn
        self._wakes = False  # the main thread draws on WAKE_SIGNAL (its handler installed)
        self._in_handler = False  # drawing in WAKE_SIGNAL's handler, between readline's keys

    # -- output, from any thread -------------------------------------------------------------

    def live(self, key: Hashable, text: str) -> None:
        """Show `text` as the draft of `key` (its chat): where it extends the draft shown,
        only the rest is written; otherwise it replaces the draft shown."""
        if not self._screen:
            return  # it could not be replaced by its message

        def draw() -> bool:
            fitted = self._fitted(text)
            if self._live is not None and self._live[1] == fitted:
                self._live = (key, fitted)
                return True
            if not self._show("", fitted):
                return False
            self._live = (key, fitted)
            return True

        self._draw(draw)

    def finish(self, key: Hashable, text: str) -> None:
        """A message of `key` (its chat): it replaces that chat's draft, if one is shown;
        otherwise it goes above the draft, like `lines`. `text` ends with a newline."""

        def draw() -> bool:
            if self._live is None or self._live[0] != key:
                return self._above(text)
            if not self._show(text, None):
                return False
            self._live = None
            return True

        self._draw(draw)

    def lines(self, text: str) -> None:
        """Whole lines (`text` ends with a newline), above the draft shown, if any."""
        self._draw(lambda: self._above(text))

    def mute(self) -> None:
        with self._lock:
            if self._live is not None and not self._prompt_shown and not self._muted:
                self._write("\n")  # the shell's prompt goes under a draft left unfinished
            self._muted = True

    @property
    def live_key(self) -> Hashable | None:
        with self._lock:
            return self._live[0] if self._live is not None else None

    # -- input, from the main thread ---------------------------------------------------------

    def read_line(self) -> str:
        """The person's next line (EOFError on Ctrl-D, KeyboardInterrupt on Ctrl-C)."""
        hooked = self._screen and readline is not None and hasattr(readline, "set_pre_input_hook")
        if hooked and not self._wakes:
            self._wakes = self._install_wake()
        self._lock.acquire()  # held until the prompt is drawn (`_prompt_drawn`)
        self._held_for_prompt = True
        try:
            self._readline_prompt = hooked
            if self._live is not None and not self._end_saved and not self._muted:
                self._write(SAVE_CURSOR_BELOW)
                self._end_saved = True
            if hooked:
                readline.set_pre_input_hook(self._prompt_drawn)
            else:  # input() draws it as soon as it begins
                self._prompt_drawn()
            line = input(self.prompt)
        except (EOFError, KeyboardInterrupt):
            with self._lock:
                if self._end_saved and not self._muted:
                    # The prompt goes; the draft stays the last thing shown.
                    self._write(RESTORE_CURSOR + ERASE_BELOW)
                else:  # what follows starts on a line of its own, not after the prompt
                    self._write("\n")
                self._prompt_shown = False
                self._end_saved = False
                self._draw_kept()
            raise
        finally:
            if hooked:
                readline.set_pre_input_hook()
            if self._held_for_prompt:  # no hook call (input() ended first)
                self._held_for_prompt = False
                self._lock.release()
        with self._lock:
            self._prompt_shown = False
            self._end_saved = False
            if self._live is not None and not self._muted:
                # The line sent sits under the draft: it goes above, the draft under it again.
                # The cursor is at the start of the row under it (the terminal echoed Enter).
                rows = self._rows(self.prompt + line) + self._rows(self._live[1])
                self._write(f"\r\x1b[{rows}A{ERASE_BELOW}{self.prompt}{line}\n{self._live[1]}")
            self._draw_kept()
        return line

    def _install_wake(self) -> bool:
        """Draw on WAKE_SIGNAL in the main thread (possible only from there, where input() runs)."""
        if WAKE_SIGNAL is None or threading.current_thread() is not threading.main_thread():
            return False
        signal.signal(WAKE_SIGNAL, self._woken)
        return True

    def _woken(self, _signal: int, _frame: object) -> None:
        """WAKE_SIGNAL's handler, in the main thread: while readline waits for a key, draw what
        was kept. Anywhere else (the prompt is being drawn, or the line was taken),
        leave it to `read_line`. (Each thread that keeps a drawing signals once it has let the
        lock go: the lock is never held by another thread for long.)"""
        with self._lock:
            if self._held_for_prompt or not self._prompt_shown or not readline_has_the_keys():
                return
            self._in_handler = True
            try:
                self._draw_kept()
            finally:
                self._in_handler = False

    def _prompt_drawn(self) -> None:
        """readline's pre-input hook (in input(), once it has drawn the prompt): the prompt is
        shown, and what waited for it can be drawn."""
        if self._held_for_prompt:
            self._prompt_shown = True
            self._held_for_prompt = False
            self._lock.release()

    # -- drawing -----------------------------------------------------------------------------

    def _draw(self, draw: Callable[[], bool]) -> None:
        """Draw now; or, while readline shows the prompt, keep it and wake the main thread to
        draw it between two of readline's writes; or, if readline has taken the line sent
        already, keep it for `read_line` to draw (under that line), once it has the line."""
        with self._lock:
            wake = self._wait_for_main_thread()
            if self._kept or wake or not draw():
                self._kept.append(draw)
        if wake and WAKE_SIGNAL is not None:  # once the lock is free, for the handler to take it
            signal.pthread_kill(threading.main_thread().ident or 0, WAKE_SIGNAL)

    def _wait_for_main_thread(self) -> bool:
        return (
            self._wakes
            and self._prompt_shown
            and self._readline_prompt
            and threading.current_thread() is not threading.main_thread()
        )

    def _draw_kept(self) -> None:
        """Draw what was kept, in order; what cannot be drawn yet (and all after it) stays."""
        while self._kept:
            if not self._kept[0]():
                return
            self._kept.pop(0)

    def _above(self, text: str) -> bool:
        return self._show(text, self._live[1] if self._live is not None else None)

    def _show(self, lines: str, draft: str | None) -> bool:
        """Write `lines` (whole lines) and then `draft` (unfinished) where the output ends:
        the draft shown is erased first, unless `draft` only extends it. In one write, unless
        readline has taken the line sent (the prompt line is that line now, the cursor under
        it): then nothing is written, and it is False."""
        if self._muted:
            return True
        if not self._screen:
            self._write(lines)
            return True
        shown = self._live[1] if self._live is not None else None
        drawn: list[str] = []
        if self._prompt_shown and shown is not None:
            drawn.append(RESTORE_CURSOR + ERASE_BELOW)  # to the draft's end; the prompt goes
        elif self._prompt_shown:  # to the start of the prompt (and of what is typed)
            rows_up = self._rows(self.prompt + self._typed()) - 1
            drawn.append("\r" + (f"\x1b[{rows_up}A" if rows_up else "") + ERASE_BELOW)
        if not lines and draft is not None and shown is not None and draft.startswith(shown):
            drawn.append(draft[len(shown) :])  # it goes on where it ends
        else:
            if shown is not None:  # to the draft's start, and it goes
                rows_up = self._rows(shown) - 1
                drawn.append("\r" + (f"\x1b[{rows_up}A" if rows_up else "") + ERASE_BELOW)
            drawn.append(lines + (draft or ""))
        end_saved = False
        redraw = self._readline_redraws()
        if self._prompt_shown:
            if draft is not None:
                drawn.append(SAVE_CURSOR_BELOW)
                end_saved = True
            if not redraw:
                drawn.append(self.prompt + self._typed())
        if self._prompt_shown and self._readline_prompt and not readline_has_the_keys():
            return False  # checked last: readline may take it any time until then
        self._write("".join(drawn))
        self._end_saved = end_saved
        if self._prompt_shown and redraw and _FORCED_REDISPLAY is not None:
            # readline draws its line again itself, on the fresh line the cursor is on: what it
            # believes is shown is then what is (typed keys it had not echoed yet included).
            _FORCED_REDISPLAY()
        return True

    def _readline_redraws(self) -> bool:
        """Whether readline is to redraw the prompt and what is typed: from the main thread,
        between two keys (WAKE_SIGNAL's handler), where its own redisplay can be called."""
        return (
            _FORCED_REDISPLAY is not None
            and self._in_handler
            and self._readline_prompt
            and getattr(readline, "__file__", None) == _READLINE_FILE  # the one it belongs to
        )

    def _typed(self) -> str:
        return readline.get_line_buffer() if readline is not None else ""

    def _rows(self, text: str) -> int:
        """The rows `text` takes from the start of a row, wrapped at the terminal's width."""
        return rows_taken(text, max(self._size()[0], 1))

    def _fitted(self, text: str) -> str:
        """`text`, or as much of it as fits the screen over the prompt, ending in CUT."""
        columns, height = self._size()
        most = max(height - 2, 1)  # a row for the prompt, and one spare
        if rows_taken(text, max(columns, 1)) <= most:
            return text
        low, high = 0, len(text)  # the longest prefix that fits with CUT after it
        while low < high:
            middle = (low + high + 1) // 2
            if rows_taken(text[:middle] + CUT, max(columns, 1)) <= most:
                low = middle
            else:
                high = middle - 1
        return text[:low] + CUT

    def _write(self, text: str) -> None:
        if not text:
            return
        self._out.write(text)
        self._out.flush()


def _forced_redisplay() -> Callable[[], object] | None:
    """readline's `rl_forced_update_display` (the line drawn again from the start of the cursor's
    line, whatever readline thought was shown), where Python's readline module is linked to it."""
    if readline is None:
        return None
    try:
        redisplay: Callable[[], object] = ctypes.CDLL(readline.__file__).rl_forced_update_display
        return redisplay
    except (OSError, AttributeError):  # a readline built in, or libedit without it
        return None


_FORCED_REDISPLAY = _forced_redisplay()
_READLINE_FILE = getattr(readline, "__file__", None)


def readline_has_the_keys() -> bool:
    """Whether readline is reading the terminal key by key, as it does until it returns the
    line (it turns the terminal's line mode off, and back on as it gives it back). Unknown:
    taken as yes."""
    if termios is None:
        return True
    try:
        return not termios.tcgetattr(sys.stdin.fileno())[3] & termios.ICANON
    except (termios.error, OSError, ValueError):  # not a terminal (or stdin replaced)
        return True


def _terminal_size() -> tuple[int, int]:
    columns, lines = shutil.get_terminal_size()
    return columns, lines


def rows_taken(text: str, columns: int) -> int:
    """How many rows `text` takes on a terminal `columns` wide, from the start of a row: each
    line wrapped at the width, a wide character (CJK, most emoji) counted two columns and
    moved to the next row when it does not fit, combining marks none. A row filled to the
    last column does not wrap until the next character comes (as terminals do)."""
    rows, column = 1, 0
    for character in text:
        if character == "\n":
            rows, column = rows + 1, 0
        elif character == "\t":
            column = min((column // TAB_STOP + 1) * TAB_STOP, max(column, columns - 1))
        else:
            width = _width(character)
            if column + width > columns:
                rows, column = rows + 1, 0
            column += width
    return rows


def _width(character: str) -> int:
    if unicodedata.category(character) in ("Mn", "Me", "Cf", "Cc"):
        return 0
    return 2 if unicodedata.east_asian_width(character) in ("W", "F") else 1
