"""Files the assistant sends to the chat, and what Telegram takes each as.

Telegram shows an image sent as a photo inline (at most 10 MB), an OGG/Opus file sent as a
voice note with its waveform, MP3/M4A as music with a player; anything else, and an image too
large for a photo, goes as a document. A bot may upload at most 50 MB.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

FileKind = Literal["photo", "document", "audio", "voice"]
Button = str | tuple[str, str]
"""A button under a message: its label, whose press comes back to the model as the person's
choice; or (label, callback data), a press the bot handles itself (an approval's)."""

MAX_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_PHOTO_BYTES = 10 * 1024 * 1024
MAX_CAPTION_CHARS = 1024
_KINDS: dict[str, FileKind] = {
    **dict.fromkeys((".jpg", ".jpeg", ".png", ".webp"), "photo"),
    **dict.fromkeys((".ogg", ".oga", ".opus"), "voice"),
    **dict.fromkeys((".mp3", ".m4a"), "audio"),
}


@dataclass(frozen=True)
class OutgoingFile:
    name: str  # the file name the chat shows
    data: bytes
    kind: FileKind
    caption: str | None = None


def kind_for(name: str, size: int) -> FileKind:
    kind = _KINDS.get(PurePosixPath(name).suffix.lower(), "document")
    return "document" if kind == "photo" and size > MAX_PHOTO_BYTES else kind
