"""What a message says, as plain text: its text or caption after a short note for each
attachment; and whether Telegram could have sent it at all (`too_long`)."""

from __future__ import annotations

from nanobot_lambda.adapters.telegram.models import Message

# What a Telegram user can send (Bot API: text 4096, caption 1024 characters).
TEXT_MAX_CHARS = 4096
CAPTION_MAX_CHARS = 1024


def too_long(message: Message) -> bool:
    """Longer than any text or caption a Telegram user can send: not from Telegram."""
    return len(message.text or "") > TEXT_MAX_CHARS or len(message.caption or "") > (
        CAPTION_MAX_CHARS
    )


def message_text(message: Message) -> str:
    """The message as plain text: its text or caption after a short note for each attachment.

    The webhook's test for "has content", and the quote of a replied-to message. What the model
    sees of the files themselves (images, transcriptions, stored documents) is media.py's.
    """
    parts = [note for note in [*_file_notes(message), *other_attachment_notes(message)] if note]
    body = message.text or message.caption
    if body:
        parts.append(body)
    return "\n".join(parts).strip()


def _file_notes(message: Message) -> list[str]:
    notes = []
    if message.photo:
        notes.append("[photo]")
    if message.voice:
        notes.append(f"[voice message, {message.voice.duration or 0} s]")
    if message.audio:
        notes.append(f"[audio: {message.audio.file_name or 'untitled'}]")
    if message.document:
        document = message.document
        notes.append(
            f"[document: {document.file_name or 'unnamed'} "
            f"({document.mime_type or 'unknown type'}, {document.file_size or 0} bytes)]"
        )
    return notes


def other_attachment_notes(message: Message) -> list[str]:
    """Notes for what the bot does not download: videos, stickers, locations, contacts."""
    notes = []
    if message.video or message.video_note or message.animation:
        notes.append("[video]")
    if message.sticker:
        notes.append(f"[sticker {message.sticker.emoji or ''}]".replace(" ]", "]"))
    if message.location:
        notes.append(f"[location: {message.location.latitude}, {message.location.longitude}]")
    if message.contact:
        contact = message.contact
        name = " ".join(filter(None, [contact.first_name, contact.last_name]))
        notes.append(f"[contact: {name}, {contact.phone_number}]")
    return notes
