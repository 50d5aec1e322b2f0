"""A Telegram message's input, resolved into what the model sees and what the session keeps.

Files the user sends are fetched from Telegram (`getFile`, then the download URL, which holds
the bot token and so stays inside the client) and stored in the workspace under
`uploads/<chat id>/<YYYY-MM>/<file_unique_id>.<ext>` (outside the per-turn listing, see
`workspace.LISTED_UNTIL`). Then:

- photos (and documents that are images) go to the model as an image content part, a base64
  data URL, when they are small enough (`IMAGE_MAX_BYTES`);
- voice notes and audio are transcribed when `TRANSCRIPTION_MODEL` is set; otherwise, or when
  transcription fails, the model is told it cannot hear them;
- documents are announced with name, type, size and workspace path (text ones are readable with
  `read_file`); a PDF's or DOCX's text is read (see `documents`: in a child process, within a
  memory and time limit), and when a limit refuses it the user is told at once why;
- files over `MEDIA_MAX_BYTES` (Telegram lets bots download at most 20 MB) are not downloaded,
  and the user is told so at once (`UserContent.notices`), naming the file as its sender
  named it, as plain text (`texts.literal`).

A file's type is what its bytes show (`mime_type`): the type the sender declares is a claim.

Context lines (what the message replies to, where it was forwarded from) come first, then a note
per attachment, then the text or caption without the bot's @mention. The session keeps that
text only: placeholders such as `[image]` with the workspace path, never the bytes. Nothing here
logs file contents, names or the text.
"""

from __future__ import annotations

import base64
import codecs
import logging
import mimetypes
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from nanobot_lambda.adapters import documents
from nanobot_lambda.adapters.telegram.addressing import (
    has_mention,
    replied_message,
    strip_bot_mention,
)
from nanobot_lambda.adapters.telegram.client import FileTooLarge, TelegramError
from nanobot_lambda.adapters.telegram.contents import other_attachment_notes
from nanobot_lambda.adapters.telegram.message_context import context_lines
from nanobot_lambda.adapters.telegram.models import FileRef, Message, PhotoSize
from nanobot_lambda.core import texts
from nanobot_lambda.core.errors import ModelError
from nanobot_lambda.core.ports import MediaSource, Transcriber, Workspace
from nanobot_lambda.settings import InputSettings

logger = logging.getLogger(__name__)

UPLOADS_DIR = "uploads"
TEXT_SNIFF_BYTES = 8192
TEXT_CHECK_BYTES = 1 << 20  # decoded at a time when checking that a file is UTF-8
DOCUMENTS_READ_SECONDS = 60  # for the texts of all the documents of one message (an album)
DOCUMENT_CONTEXT_CHARS = 12_000  # of a PDF's or DOCX's text, put in the message itself
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")
_SAFE_EXTENSION = re.compile(r"[A-Za-z0-9]{1,10}")
_EXTENSIONS = {
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/gif": "gif",
    "image/webp": "webp",
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp4": "m4a",
    "audio/x-m4a": "m4a",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/webm": "webm",
    "audio/flac": "flac",
    "application/pdf": "pdf",
    "application/zip": "zip",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/epub+zip": "epub",
    "video/mp4": "mp4",
    "video/webm": "webm",
    "text/plain": "txt",
    "text/markdown": "md",
}

Content = str | list[dict[str, Any]]


def sniff_image(data: bytes) -> str | None:
    """The image MIME type from the file's magic number (JPEG, PNG, GIF, WebP), else None."""
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


# Formats that are ZIP archives inside, told apart by the files they hold.
_ZIP_MEMBERS = (
    (b"word/", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    (b"xl/", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    (b"ppt/", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
)
# A claim consistent with what the bytes are (same container), kept as the more precise name.
_SAME_CONTAINER = {
    "application/zip": frozenset(
        {
            "application/x-zip-compressed",
            "application/java-archive",
            "application/vnd.android.package-archive",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            "application/epub+zip",
        }
    ),
    "application/x-ole-storage": frozenset(
        {"application/msword", "application/vnd.ms-excel", "application/vnd.ms-powerpoint"}
    ),
    "video/mp4": frozenset({"audio/mp4", "audio/x-m4a", "audio/aac", "video/quicktime"}),
    "video/webm": frozenset({"audio/webm", "video/x-matroska"}),
    "audio/ogg": frozenset({"audio/opus", "audio/x-opus+ogg", "audio/vorbis", "application/ogg"}),
    "audio/mpeg": frozenset({"audio/mp3", "audio/x-mpeg"}),
    "audio/wav": frozenset({"audio/x-wav", "audio/wave", "audio/vnd.wave"}),
}
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/x-yaml")


def sniff(data: bytes) -> str | None:
    """The file's type from its magic number, for the kinds worth telling apart cheaply
    (images, PDF, ZIP and Office files, Ogg/MP3/MP4/WAV/FLAC/WebM media), else None."""
    image = sniff_image(data)
    if image is not None:
        return image
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    if data[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        # ODF and EPUB start with an uncompressed `mimetype` member naming their type.
        if data[30:38] == b"mimetype":
            declared = data[38:120].split(b"PK", 1)[0].decode("ascii", errors="ignore")
            if re.fullmatch(r"application/[a-z0-9.+-]+", declared):
                return declared
        if b"[Content_Types].xml" in data:
            for member, mime in _ZIP_MEMBERS:
                if member in data:
                    return mime
        return "application/zip"
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return "application/x-ole-storage"  # legacy .doc/.xls/.ppt
    if data.startswith(b"OggS"):
        return "audio/ogg"
    if data.startswith(b"ID3") or (
        # an MPEG audio frame: 11 sync bits, then a layer other than "reserved"
        len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0 and data[1] & 0x06
    ):
        return "audio/mpeg"
    if data[4:8] == b"ftyp":
        return "audio/mp4" if data[8:11] in (b"M4A", b"M4B") else "video/mp4"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data.startswith(b"fLaC"):
        return "audio/flac"
    if data.startswith(b"\x1aE\xdf\xa3"):
        return "video/webm"
    return None


def _claims_a_sniffable_type(declared: str) -> bool:
    known = {*_EXTENSIONS, *_SAME_CONTAINER}
    for names in _SAME_CONTAINER.values():
        known |= names
    return declared in known or declared.startswith("image/")


def mime_type(data: bytes, declared: str | None) -> str:
    """The file's type: what its bytes show, never merely what the sender claims.

    A recognised magic number wins (the claim is kept only when it names the same container
    more precisely, e.g. audio/mp4 for an MP4 file); text is text (the claim kept if it is a
    text type); an unrecognised binary keeps a claim we have no magic number to check, and
    becomes application/octet-stream when the claim is one we could have recognised.
    """
    claim = (declared or "").split(";")[0].strip().lower()
    sniffed = sniff(data)
    if sniffed is not None:
        return claim if claim in _SAME_CONTAINER.get(sniffed, ()) else sniffed
    if looks_like_text(data):
        return claim if claim.startswith(_TEXT_TYPES) else "text/plain"
    if claim and not claim.startswith(_TEXT_TYPES) and not _claims_a_sniffable_type(claim):
        return claim
    return "application/octet-stream"


def looks_like_text(data: bytes) -> bool:
    """UTF-8 without NUL bytes: what `read_file` can show. Checked a megabyte at a time, so a
    20 MB file never becomes an 80 MB string here."""
    if b"\x00" in data[:TEXT_SNIFF_BYTES]:
        return False
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for start in range(0, len(view), TEXT_CHECK_BYTES):
            decoder.decode(view[start : start + TEXT_CHECK_BYTES])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def human_size(size: int) -> str:
    if size < 1000:
        return f"{size} bytes"
    if size < 1_000_000:
        return f"{size / 1000:.1f} KB"
    return f"{size / 1_000_000:.1f} MB"


def image_part(data: bytes, mime: str) -> dict[str, Any]:
    """An OpenAI-format image content part with the bytes inline (litellm converts it)."""
    encoded = base64.b64encode(data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{encoded}"}}


def choose_photo(sizes: list[PhotoSize], max_bytes: int) -> PhotoSize | None:
    """The largest size known to fit `max_bytes`; else the largest of unknown size; else None."""
    fitting = [size for size in sizes if size.file_size is not None and size.file_size <= max_bytes]
    if fitting:
        return max(fitting, key=lambda size: (size.file_size or 0, size.width * size.height))
    unknown = [size for size in sizes if size.file_size is None]
    return max(unknown, key=lambda size: size.width * size.height) if unknown else None


def _extension(file_name: str | None, mime: str) -> str:
    """The stored file's extension: the name's own, unless it implies another type than the
    bytes show (a PDF called photo.jpg is stored as .pdf); else the type's."""
    guessed = (mimetypes.guess_extension(mime) or "").lstrip(".")
    by_type = _EXTENSIONS.get(mime) or (guessed if _SAFE_EXTENSION.fullmatch(guessed) else "bin")
    suffix = file_name.rsplit(".", 1)[1].lower() if file_name and "." in file_name else ""
    if _SAFE_EXTENSION.fullmatch(suffix):
        implied = mimetypes.guess_type(f"file.{suffix}")[0]
        if (
            implied is None
            or implied == mime
            or suffix == by_type
            or mime == "application/octet-stream"
            or (implied.startswith("text/") and mime.startswith("text/"))
        ):
            return suffix
    return by_type


# -- resolving a message ----------------------------------------------------------------------


@dataclass(frozen=True)
class UserContent:
    """The user's message: `model_content` for this turn's request (text, or content parts
    with images), `saved_text` for the session and recall (placeholders, never bytes)."""

    model_content: Content
    saved_text: str
    stored: tuple[str, ...] = ()  # workspace paths of the files stored for this message
    # Told to the user straight away, whatever the model makes of the message: files refused.
    notices: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Attachment:
    """How notes and notices name a file: its kind, and the name its sender gave it (if any)."""

    kind: str  # photo, voice message, document, audio
    name: str | None = None

    def for_model(self) -> str:
        return f'{self.kind} "{self.name}"' if self.name is not None else self.kind

    def for_user(self) -> str:
        """In a message to the user: the sender's file name shown as text (texts.literal)."""
        return f'{self.kind} "{texts.literal(self.name)}"' if self.name is not None else self.kind


@dataclass
class _Resolved:
    notes: list[str]
    images: list[dict[str, Any]]
    stored: list[str]
    notices: list[str] = field(default_factory=list)
    # Until when the message's documents may be read (a monotonic time; see DOCUMENTS_READ_SECONDS).
    reading_until: float = 0.0


class MediaResolver:
    def __init__(
        self,
        bot: MediaSource,
        workspace: Workspace,
        settings: InputSettings,
        transcriber: Transcriber | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_document: Callable[[str, str], None] | None = None,
    ) -> None:
        self._bot = bot
        self._workspace = workspace
        self._settings = settings
        self._transcriber = transcriber
        self._clock = clock
        # Told (path, text) of each document whose text was stored: recall indexes it later.
        self._on_document = on_document

    def resolve(self, message: Message, chat_id: int) -> UserContent:
        return self.resolve_album([message], chat_id)

    def resolve_album(self, messages: Sequence[Message], chat_id: int) -> UserContent:
        """One user message from several Telegram messages (the parts of an album, in order):
        every part's files, then the reply and forward context once, the notes on the files,
        and the parts' texts (an album's caption usually sits on one part)."""
        resolved = _Resolved(
            notes=[], images=[], stored=[], reading_until=self._clock() + DOCUMENTS_READ_SECONDS
        )
        lines: list[str] = []
        bodies: list[str] = []
        for message in messages:
            self._attachments(message, chat_id, resolved)
            for line in context_lines(message, bot_id=self._bot_id_for_reply(message)):
                if line not in lines:
                    lines.append(line)
            username = self._bot.get_me().username if has_mention(message) else None
            bodies.append(strip_bot_mention(message, username).strip())
        text = "\n".join(part for part in [*lines, *resolved.notes, *bodies] if part)
        content: Content = (
            [*resolved.images, {"type": "text", "text": text}] if resolved.images else text
        )
        return UserContent(content, text, tuple(resolved.stored), tuple(resolved.notices))

    def _attachments(self, message: Message, chat_id: int, resolved: _Resolved) -> None:
        folder = f"{UPLOADS_DIR}/{chat_id}/{datetime.fromtimestamp(message.date, UTC):%Y-%m}"
        if message.photo:
            self._photo(message.photo, folder, resolved)
        if message.document is not None:
            self._document(message.document, folder, resolved)
        if message.voice is not None:
            self._audio(message.voice, folder, resolved, voice=True)
        if message.audio is not None:
            self._audio(message.audio, folder, resolved, voice=False)
        resolved.notes += other_attachment_notes(message)

    def _bot_id_for_reply(self, message: Message) -> int | None:
        """The bot's id, asked for only when the message replies to a bot (maybe this one)."""
        reply = replied_message(message)
        if reply is not None and reply.sender is not None and reply.sender.is_bot:
            return self._bot.get_me().id
        return None

    # -- kinds ---------------------------------------------------------------------------------

    def _photo(self, sizes: list[PhotoSize], folder: str, resolved: _Resolved) -> None:
        limit = self._settings.media_max_bytes
        choice = choose_photo(sizes, min(self._settings.image_max_bytes, limit)) or choose_photo(
            sizes, limit
        )
        if choice is None:
            self._too_large(_Attachment("photo"), resolved)
            return
        data = self._fetch(choice.file_id, choice.file_size, _Attachment("photo"), resolved)
        if data is None:
            return
        sniffed = sniff_image(data)
        extension = _extension(None, sniffed or "image/jpeg")  # Telegram's photos are JPEG
        path = self._store(folder, choice.file_unique_id, extension, data)
        resolved.stored.append(path)
        if sniffed is None:
            resolved.notes.append(texts.render("media_image_unreadable", path=path))
        elif len(data) > self._settings.image_max_bytes:
            resolved.notes.append(self._not_shown(path, len(data)))
        else:
            resolved.images.append(image_part(data, sniffed))
            resolved.notes.append(texts.render("media_image", path=path))

    def _document(self, document: FileRef, folder: str, resolved: _Resolved) -> None:
        name = document.file_name or "unnamed"
        attachment = _Attachment("document", name)
        data = self._fetch(document.file_id, document.file_size, attachment, resolved)
        if data is None:
            return
        mime = mime_type(data, document.mime_type)
        path = self._store(folder, document.file_unique_id, _extension(name, mime), data)
        resolved.stored.append(path)
        facts = {"filename": name, "type": mime, "size": human_size(len(data)), "path": path}
        readable = documents.kind_of(name, mime)
        if readable is not None:
            resolved.notes.append(self._document_text(readable, data, facts, resolved))
        elif sniff_image(data) and len(data) <= self._settings.image_max_bytes:
            resolved.images.append(image_part(data, mime))
            resolved.notes.append(texts.render("media_document_image", **facts))
        elif looks_like_text(data):
            if self._on_document is not None:
                self._on_document(path, data.decode("utf-8"))
            resolved.notes.append(texts.render("media_document_text", **facts))
        else:
            resolved.notes.append(texts.render("media_document_binary", **facts))

    def _document_text(
        self, kind: str, data: bytes, facts: dict[str, str], resolved: _Resolved
    ) -> str:
        """The note for a PDF or DOCX: its text, the first DOCUMENT_CONTEXT_CHARS of it in the
        message and all of it (within the extractor's caps) beside the upload, for read_file;
        or why it cannot be read (a limit's reason is told to the user at once as well)."""
        extracted = documents.extract(kind, data, resolved.reading_until - self._clock())
        if isinstance(extracted, documents.Unreadable):
            if extracted.too_large:
                resolved.notices.append(
                    texts.render(
                        "media_document_too_large_notice",
                        filename=texts.literal(facts["filename"]),
                        reason=extracted.reason,
                    )
                )
                return texts.render("media_document_too_large", **facts, reason=extracted.reason)
            return texts.render("media_document_unreadable", **facts, reason=extracted.reason)
        beside = f"{facts['path']}.txt"
        self._workspace.write(beside, extracted.text.encode())
        if self._on_document is not None:
            self._on_document(beside, extracted.text)
        shown = extracted.text[:DOCUMENT_CONTEXT_CHARS]
        more = ""
        if len(shown) < len(extracted.text) or extracted.cut:
            more = f" (the start of it; the text read is in {beside}, read it with read_file)"
        pages = ""
        if extracted.pages is not None:
            pages = f", {extracted.pages} page{'s' if extracted.pages != 1 else ''}"
            if extracted.pages_read != extracted.pages:
                pages += f", the first {extracted.pages_read} read"
        return texts.render("media_document_extracted", **facts, pages=pages, more=more, text=shown)

    def _audio(self, audio: FileRef, folder: str, resolved: _Resolved, *, voice: bool) -> None:
        name = audio.file_name or "untitled"
        attachment = _Attachment("voice message") if voice else _Attachment("audio", name)
        data = self._fetch(audio.file_id, audio.file_size, attachment, resolved)
        if data is None:
            return
        declared = audio.mime_type or ("audio/ogg" if voice else None)
        mime = mime_type(data, declared)
        extension = _extension(None if voice else audio.file_name, mime)
        path = self._store(folder, audio.file_unique_id, extension, data)
        resolved.stored.append(path)
        kind = "voice" if voice else "audio"
        # Only what may be sound goes to the transcription provider (not a PDF called a.mp3).
        audible = mime.startswith(("audio/", "video/")) or mime == "application/octet-stream"
        transcript = self._transcribe(f"{kind}.{extension}", data) if audible else ""
        if transcript:
            resolved.notes.append(
                texts.render(f"media_{kind}_transcribed", text=transcript, filename=name)
            )
        else:
            resolved.notes.append(
                texts.render(
                    f"media_{kind}_unheard", duration=audio.duration or 0, path=path, filename=name
                )
            )

    # -- steps ---------------------------------------------------------------------------------

    def _fetch(
        self, file_id: str, declared: int | None, attachment: _Attachment, resolved: _Resolved
    ) -> bytes | None:
        """The file's bytes; None (with a note for the model) when too large or unavailable."""
        limit = self._settings.media_max_bytes
        if declared is not None and declared > limit:
            self._too_large(attachment, resolved)
            return None
        try:
            file_path, size = self._bot.get_file(file_id)
            if size is not None and size > limit:
                self._too_large(attachment, resolved)
                return None
            return self._bot.download(file_path, limit)
        except FileTooLarge:
            self._too_large(attachment, resolved)
        except TelegramError as error:
            # method and status only: never the file path (nor, a fortiori, the URL)
            logger.warning(
                "could not fetch a file from Telegram (%s, %s)", error.method, error.status
            )
            resolved.notes.append(texts.render("media_unavailable", what=attachment.for_model()))
        return None

    def _store(self, folder: str, unique_id: str, extension: str, data: bytes) -> str:
        """Write the file to the workspace (idempotent: a retried turn writes the same key)."""
        path = f"{folder}/{_SAFE_NAME.sub('_', unique_id) or 'file'}.{extension}"
        self._workspace.write(path, data)
        logger.info("attachment stored", extra={"bytes": len(data), "extension": extension})
        return path

    def _transcribe(self, filename: str, data: bytes) -> str:
        if self._transcriber is None:
            return ""
        try:
            return self._transcriber.transcribe(filename, data).text
        except ModelError as error:
            logger.warning("%s", error)  # the kind and status only (see the transcriber)
            return ""

    def _too_large(self, attachment: _Attachment, resolved: _Resolved) -> None:
        """Refuse a file over MEDIA_MAX_BYTES (or Telegram's 20 MB): a note for the model, and
        a notice for the user, who learns at once rather than from whatever the model says."""
        limit = human_size(self._settings.media_max_bytes)
        what = attachment.for_model()
        resolved.notes.append(texts.render("media_too_large", what=what, limit=limit))
        shown = attachment.for_user()
        resolved.notices.append(texts.render("media_too_large_notice", what=shown, limit=limit))

    def _not_shown(self, path: str, size: int) -> str:
        limit = human_size(self._settings.image_max_bytes)
        return texts.render("media_image_not_shown", size=human_size(size), limit=limit, path=path)
