"""Text out of PDF and DOCX uploads (adapters/documents.py), on real files made with the same
libraries: pages, caps, and a reason, never an exception, for what cannot be read."""

from __future__ import annotations

import pytest

from nanobot_lambda.adapters import documents
from nanobot_lambda.adapters.documents import DocumentText, Unreadable, extract, kind_of
from tests.support.documents import docx, pdf


def test_a_pdfs_text_comes_page_by_page() -> None:
    read = extract("pdf", pdf("Invoice 42 for Ada", "Total: 100 EUR"))
    assert read == DocumentText(
        "--- page 1 ---\nInvoice 42 for Ada\n\n--- page 2 ---\nTotal: 100 EUR",
        pages=2,
        pages_read=2,
        cut=False,
    )


def test_a_long_pdf_is_read_up_to_the_page_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "MAX_PAGES", 3)
    read = extract("pdf", pdf(*(f"page text {n}" for n in range(1, 6))))
    assert isinstance(read, DocumentText)
    assert (read.pages, read.pages_read, read.cut) == (5, 3, True)
    assert "page text 3" in read.text and "page text 4" not in read.text


def test_a_pdf_text_is_cut_at_the_size_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "MAX_TEXT_CHARS", 50)
    read = extract("pdf", pdf("x" * 80, "y" * 80))
    assert isinstance(read, DocumentText)
    assert len(read.text) == 50 and read.cut and read.pages_read == 1


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (pdf("the secret plan", password="hunter2"), "encrypted"),
        (pdf("", ""), "no text to read"),
        (pdf("half a file")[:150], "could not be read (a damaged or unusual PDF)"),
        (b"%PDF-1.7 not really", "could not be read"),
    ],
    ids=["encrypted", "no text layer", "truncated", "garbage"],
)
def test_what_cannot_be_read_gives_a_reason(data: bytes, reason: str) -> None:
    read = extract("pdf", data)
    assert isinstance(read, Unreadable) and reason in read.reason


def test_a_pdf_encrypted_without_a_password_is_read() -> None:
    read = extract("pdf", pdf("open to all", password=""))
    assert isinstance(read, DocumentText) and "open to all" in read.text


def test_a_docx_gives_its_paragraphs_and_tables() -> None:
    read = extract(
        "docx", docx("Dear Ada,", "The plan is attached.", table=[["Item", "Cost"], ["Seeds", "4"]])
    )
    assert read == DocumentText("Dear Ada,\nThe plan is attached.\nItem | Cost\nSeeds | 4")


def test_a_broken_or_empty_docx_gives_a_reason() -> None:
    assert isinstance(extract("docx", b"PK\x03\x04 not a docx"), Unreadable)
    empty = extract("docx", docx())
    assert isinstance(empty, Unreadable) and "no text" in empty.reason


@pytest.mark.parametrize(
    ("name", "mime", "kind"),
    [
        ("invoice.pdf", "application/pdf", "pdf"),
        ("renamed.txt", "application/pdf", "pdf"),  # the bytes decide the type
        ("letter.docx", documents.DOCX, "docx"),
        ("letter.docx", "application/zip", "docx"),  # a DOCX sent without its type
        ("archive.zip", "application/zip", None),
        ("notes.md", "text/markdown", None),
    ],
)
def test_which_documents_are_read(name: str, mime: str, kind: str | None) -> None:
    assert kind_of(name, mime) == kind
