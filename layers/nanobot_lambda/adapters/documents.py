"""Text out of the documents users send: PDF (pypdf) and DOCX (python-docx), within caps.

Imported by agent_turn's media handling only; the libraries (in LlmLayer) are imported on the
first document, so neither the webhook nor a turn without a document pays for them. A file
that cannot be read (encrypted, broken, or a library's failure of any kind) gives a reason to
tell the model, never an exception that would fail the turn.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from pathlib import PurePosixPath

logger = logging.getLogger(__name__)

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MAX_PAGES = 100  # of a PDF, read at most
MAX_TEXT_CHARS = 200_000  # kept of a document's text (beside the upload, for read_file)
NO_TEXT = "it has no text to read (a scan, or images only)"


@dataclass(frozen=True)
class DocumentText:
    text: str
    pages: int | None = None  # of a PDF, all of them
    pages_read: int | None = None
    cut: bool = False  # MAX_PAGES or MAX_TEXT_CHARS stopped the reading


@dataclass(frozen=True)
class Unreadable:
    reason: str  # for the model: why its text cannot be had


def kind_of(name: str, mime: str) -> str | None:
    """ "pdf", "docx", or None for a file this module does not read."""
    if mime == PDF:
        return "pdf"
    suffix = PurePosixPath(name).suffix.lower()
    if mime == DOCX or (mime == "application/zip" and suffix == ".docx"):
        return "docx"
    return None


def extract(kind: str, data: bytes) -> DocumentText | Unreadable:
    try:
        return _pdf(data) if kind == "pdf" else _docx(data)
    except Exception as error:  # a broken file, or a library failing on a valid one
        logger.warning("%s text extraction failed: %s", kind, type(error).__name__)
        return Unreadable(f"its text could not be read (a damaged or unusual {kind.upper()})")


def _pdf(data: bytes) -> DocumentText | Unreadable:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            opened = bool(reader.decrypt(""))  # some PDFs are encrypted with no password
        except Exception:  # AES needs the cryptography package, which the layer does not ship
            opened = False
        if not opened:
            return Unreadable("it is encrypted (password-protected), so its text cannot be read")
    total = len(reader.pages)
    texts, size, words = [], 0, False
    for number, page in enumerate(reader.pages[:MAX_PAGES], start=1):
        text = (page.extract_text() or "").strip()
        words = words or bool(text)
        texts.append(f"--- page {number} ---\n{text}")
        size += len(texts[-1])
        if size >= MAX_TEXT_CHARS:
            break
    if not words:
        return Unreadable(NO_TEXT)
    whole = "\n\n".join(texts)
    read = len(texts)
    cut = read < total or len(whole) > MAX_TEXT_CHARS
    return DocumentText(whole[:MAX_TEXT_CHARS], pages=total, pages_read=read, cut=cut)


def _docx(data: bytes) -> DocumentText | Unreadable:
    from docx import Document

    document = Document(io.BytesIO(data))
    lines = [paragraph.text for paragraph in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            lines.append(" | ".join(cell.text.strip() for cell in row.cells))
    whole = "\n".join(line for line in lines if line.strip())
    if not whole:
        return Unreadable(NO_TEXT)
    return DocumentText(whole[:MAX_TEXT_CHARS], cut=len(whole) > MAX_TEXT_CHARS)
