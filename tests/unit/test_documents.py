"""Text out of PDF and DOCX uploads (adapters/documents.py), on real files made with the same
libraries: pages, caps, and a reason, never an exception, for what cannot be read; and hostile
files (zip bombs, inflating streams, vast page trees) refused or read within the child's bounds,
with the memory the child really used (its VmHWM, which it reports and extract logs)."""

from __future__ import annotations

import io
import logging
import tracemalloc
import zipfile
from typing import cast

import pytest

from nanobot_lambda.adapters import documents
from nanobot_lambda.adapters.documents import DocumentText, Unreadable, extract, kind_of, read
from tests.support.documents import (
    MIB,
    Repeated,
    docx,
    docx_bomb,
    docx_of_empty_paragraphs,
    docx_of_many_files,
    pdf,
    pdf_stream_bomb,
    pdf_with_image_bomb,
    pdf_with_pages,
    zip_archive,
)

# What reading any document may add to the child's memory (it is limited to 128 MB more).
PEAK_BOUND_MB = 150
# What extract may hold in agent_turn's own process beyond the file: the text that comes back.
PARENT_BOUND_BYTES = 2 * 1024 * 1024


def test_a_pdfs_text_comes_page_by_page() -> None:
    read = extract("pdf", pdf("Invoice 42 for Ada", "Total: 100 EUR"))
    assert read == DocumentText(
        "--- page 1 ---\nInvoice 42 for Ada\n\n--- page 2 ---\nTotal: 100 EUR",
        pages=2,
        pages_read=2,
        cut=False,
    )


# The caps are the child's: `read` is what it runs, called here in-process to change them.


def test_a_long_pdf_is_read_up_to_the_page_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "MAX_PAGES", 3)
    text = read("pdf", pdf(*(f"page text {n}" for n in range(1, 6))))
    assert isinstance(text, DocumentText)
    assert (text.pages, text.pages_read, text.cut) == (5, 3, True)
    assert "page text 3" in text.text and "page text 4" not in text.text


def test_a_pdf_text_is_cut_at_the_size_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "MAX_TEXT_CHARS", 50)
    text = read("pdf", pdf("x" * 80, "y" * 80))
    assert isinstance(text, DocumentText)
    assert len(text.text) == 50 and text.cut and text.pages_read == 1


def test_pages_stop_being_read_when_the_time_for_them_is_up() -> None:
    text = read("pdf", pdf("first", "second", "third"), pages_seconds=0)  # up after one page
    assert isinstance(text, DocumentText)
    assert (text.pages, text.pages_read, text.cut) == (3, 1, True) and "first" in text.text


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


# -- hostile files -------------------------------------------------------------------------------


def bounded_extract(
    kind: str, data: bytes, caplog: pytest.LogCaptureFixture
) -> DocumentText | Unreadable:
    """extract(), asserting that the child stayed within PEAK_BOUND_MB of its start and that
    agent_turn's own process held little beyond the file."""
    caplog.set_level(logging.INFO, logger=documents.__name__)
    caplog.clear()
    tracemalloc.start()
    try:
        result = extract(kind, data)
        _now, parent_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert parent_peak < PARENT_BOUND_BYTES
    [record] = [r for r in caplog.records if r.getMessage() == "document read"]
    used = record.__dict__["peak_mb"] - record.__dict__["base_mb"]
    assert 0 < used < PEAK_BOUND_MB, f"the child used {used} MB"
    return result


def refused(result: DocumentText | Unreadable) -> str:
    assert isinstance(result, Unreadable) and result.too_large, result
    return result.reason


def test_a_docx_zip_bomb_is_refused_from_its_directory(caplog: pytest.LogCaptureFixture) -> None:
    bomb = docx_bomb(100 * MIB)  # 100 MiB of paragraphs in about 350 KB
    assert len(bomb) < 400_000
    reason = refused(bounded_extract("docx", bomb, caplog))
    assert reason == "too large to read: it expands to more than 64 MB"


def test_a_docx_part_that_expands_like_a_bomb_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    bomb = docx_bomb(20 * MIB)  # within the sizes, but 20 MiB from about 100 KB
    reason = refused(bounded_extract("docx", bomb, caplog))
    assert reason == (
        "too large to read: a part of it expands more than 100-fold (the mark of a zip bomb)"
    )


def test_a_docx_of_too_much_xml_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    vast = docx_of_empty_paragraphs(25 * MIB)  # compresses only a few times: no bomb
    reason = refused(bounded_extract("docx", vast, caplog))
    assert reason == "too large to read: its text expands to more than 24 MB of XML"


def test_a_docx_of_too_many_files_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    reason = refused(bounded_extract("docx", docx_of_many_files(1_000), caplog))
    assert reason == "too large to read: it holds more than 1,000 files"


def test_a_docx_within_the_checks_that_parses_into_too_much_memory_stops_at_the_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """12 MiB of XML passes every check on the directory, but as a tree of 570,000 elements it
    needs about 350 MB: the child's allocation fails at its limit, agent_turn is untouched."""
    vast = docx_of_empty_paragraphs(12 * MIB)
    reason = refused(bounded_extract("docx", vast, caplog))
    assert reason == "too large to read: reading it needs more than 128 MB of memory"


@pytest.mark.parametrize(
    "xml",
    [
        b"<w:body>" + b"<w:sdt>" * 20_000 + b"</w:sdt>" * 20_000 + b"</w:body>",  # under 1 MB
        b'<!DOCTYPE w:document [<!ENTITY a "aaaaaaaaaa">'
        + b"".join(b'<!ENTITY %c "%s">' % (98 + n, b"&%c;" % (97 + n) * 10) for n in range(9))
        + b"]><w:body><w:p><w:r><w:t>&j;</w:t></w:r></w:p></w:body>",
    ],
    ids=["nested 20,000 deep", "a billion laughs"],
)
def test_hostile_xml_in_a_docx_is_not_read_and_stays_bounded(
    xml: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with zipfile.ZipFile(io.BytesIO(docx("x"))) as archive:
        members: dict[str, bytes | Repeated] = {n: archive.read(n) for n in archive.namelist()}
    head = cast(bytes, members["word/document.xml"]).split(b"<w:body>", 1)[0]
    if xml.startswith(b"<!DOCTYPE"):  # the declaration goes before the root element
        head = head.replace(b"<w:document", xml.split(b"]>", 1)[0] + b"]><w:document", 1)
        xml = xml.split(b"]>", 1)[1]
    members["word/document.xml"] = head + xml + b"</w:document>"
    result = bounded_extract("docx", zip_archive(members), caplog)
    assert isinstance(result, Unreadable) and not result.too_large
    assert result.reason in (documents._damaged("docx").reason, documents.NO_TEXT)


def test_a_pdf_stream_that_inflates_to_200_mb_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    bomb = pdf_stream_bomb(200 * MIB)
    assert len(bomb) < 700_000
    reason = refused(bounded_extract("pdf", bomb, caplog))
    assert reason == "too large to read: a part of it expands to more than 16 MB"


def test_a_pdf_image_that_inflates_to_200_mb_is_never_decoded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    text = bounded_extract("pdf", pdf_with_image_bomb(200 * MIB), caplog)
    assert isinstance(text, DocumentText) and text.text == "--- page 1 ---\na page with a photo"


def test_a_pdf_of_100000_pages_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    reason = refused(bounded_extract("pdf", pdf_with_pages(100_000), caplog))
    assert reason == "too large to read: it has 100,000 pages (the limit is 10,000)"


def test_a_pdf_that_hides_its_pages_is_refused_at_pypdfs_limit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    liar = pdf_with_pages(12_000, declared=1)  # states 1 page, holds 12,000
    reason = refused(bounded_extract("pdf", liar, caplog))
    assert reason == "too large to read: it has more than 10,000 pages"


def test_a_pdf_of_100000_objects_is_read(caplog: pytest.LogCaptureFixture) -> None:
    many = pdf_with_pages(2, filler=100_000)
    text = bounded_extract("pdf", many, caplog)
    assert isinstance(text, DocumentText) and "the first page" in text.text


def test_a_document_that_takes_too_long_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(documents, "MIN_READ_SECONDS", 0)
    assert extract("pdf", pdf("slow"), seconds=0.01) == Unreadable(
        "too slow to read: reading it takes more than 0.01 s", too_large=True
    )


def test_a_document_with_no_time_left_for_it_is_not_started() -> None:
    assert extract("pdf", pdf("late"), seconds=0.5) == Unreadable(
        "too slow to read: the files sent with it used up the time for reading", too_large=True
    )


def test_the_child_gets_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "do-not-leak")
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123:do-not-leak")
    environment = documents._child_environment()
    assert set(environment) == {"PYTHONPATH", "LANG"}
    assert "do-not-leak" not in str(environment)
