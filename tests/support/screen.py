"""A terminal's screen, for tests that read what a program shows on a pseudo-terminal.

It plays the part of a terminal emulator for what `chat` and readline send: text (wrapped at
the width), carriage return, line feed, backspace, cursor movement (CSI A B C D G H), erasing
(CSI K, CSI J), the cursor saved and restored (ESC 7, ESC 8), index and reverse index (ESC D,
ESC M). Other sequences (modes, colours) are read and ignored. The screen has no bottom: it
grows instead of scrolling, so what scrolled away is still there to read.
"""

from __future__ import annotations

import re

_SEQUENCE = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z@])|\x1b([78DME=>])|\x1b\][^\x07]*\x07")


class Screen:
    def __init__(self, columns: int = 200) -> None:
        self.columns = columns
        self.rows: list[list[str]] = [[]]
        self.row = 0
        self.column = 0
        self._saved = (0, 0)

    @property
    def lines(self) -> list[str]:
        return ["".join(row).rstrip() for row in self.rows]

    @property
    def text(self) -> str:
        return "\n".join(self.lines).rstrip("\n")

    def feed(self, data: str) -> None:
        position = 0
        while position < len(data):
            match = _SEQUENCE.match(data, position)
            if match is not None:
                self._sequence(match)
                position = match.end()
                continue
            self._character(data[position])
            position += 1

    def _character(self, character: str) -> None:
        if character == "\r":
            self.column = 0
        elif character == "\n":
            self._down()
        elif character == "\b":
            self.column = max(self.column - 1, 0)
        elif character == "\x07" or character == "\x1b" or ord(character) < 32:
            return
        else:
            if self.column >= self.columns:
                self.column = 0
                self._down()
            line = self.rows[self.row]
            line.extend(" " * (self.column + 1 - len(line)))
            line[self.column] = character
            self.column += 1

    def _down(self) -> None:
        self.row += 1
        while len(self.rows) <= self.row:
            self.rows.append([])

    def _sequence(self, match: re.Match[str]) -> None:
        escape = match.group(3)
        if escape == "7":
            self._saved = (self.row, self.column)
        elif escape == "8":
            self.row, self.column = self._saved
        elif escape in ("D", "E"):
            self._down()
            if escape == "E":
                self.column = 0
        elif escape == "M":
            self.row = max(self.row - 1, 0)
        final = match.group(2)
        if final is None:
            return
        arguments = match.group(1) or ""
        if arguments.startswith("?"):
            return  # modes (bracketed paste, cursor keys)
        numbers = [int(item) if item else 0 for item in arguments.split(";")] if arguments else []
        count = max(numbers[0], 1) if numbers else 1
        line = self.rows[self.row]
        if final == "A":
            self.row = max(self.row - count, 0)
        elif final == "B":
            for _ in range(count):
                self._down()
        elif final == "C":
            self.column = min(self.column + count, self.columns - 1)
        elif final == "D":
            self.column = max(self.column - count, 0)
        elif final == "G":
            self.column = count - 1
        elif final == "K":
            mode = numbers[0] if numbers else 0
            if mode == 0:
                del line[self.column :]
            elif mode == 1:
                line[: self.column] = [" "] * min(self.column, len(line))
            else:
                line.clear()
        elif final == "J":
            mode = numbers[0] if numbers else 0
            if mode == 0:
                del line[self.column :]
                del self.rows[self.row + 1 :]
            elif mode == 2:
                self.rows = [[] for _ in self.rows]
        elif final == "P":  # delete characters
            del line[self.column : self.column + count]
        elif final == "@":  # insert blanks
            line[self.column : self.column] = [" "] * count
