"""Text out of the documents users send: PDF (pypdf) and DOCX (python-docx), in bounded memory
and time.

A document is hostile input that expands: a 350 KB DOCX can hold 100 MB of XML (python-docx
turned one into 1.5 GB of memory and 90 s of work), a PDF a stream that inflates to gigabytes or
a page tree of 100,000 pages. agent_turn has 1,024 MB. So no document is parsed in agent_turn's
own process: `extract` runs `read` in a child, `python -m nanobot_lambda.adapters.documents
<kind> <seconds>`, the file on its standard input and the result as JSON on its standard output
(with the child's resident memory at start and at most, which `extract` logs).

- The child imports its library, then limits its own address space to what it has plus
  `READ_MEMORY_BYTES` (RLIMIT_AS) and its CPU time; the parent kills it after `READ_SECONDS`.
  Whatever a library does with a file, an allocation past the limit fails in the child (a
  MemoryError, or a crash), never in agent_turn.
- Before parsing, cheap checks refuse what is plainly too big, with a reason the user can act
  on: a DOCX's ZIP directory (how many members, the sizes they declare, how much each expands;
  zipfile never reads a member past its declared size, so the declared sizes bound what
  python-docx gets), a PDF's declared page count. pypdf reads with its own limits lowered
  (`_PDF_LIMITS`: no stream inflates past `MAX_STREAM_BYTES`, no more than `MAX_PDF_PAGES`
  pages, `MAX_PDF_OBJECTS` cross-reference entries), and a page that hits one is skipped with a
  note while the others are read.
- Pages are read until `PAGES_SECONDS` (or half the time the child has) have passed; the
  rest is reported as not read, so the text read so far comes back in time.
- The child's environment holds no credential and its error output goes nowhere: a flaw in a
  parser reaches no secret, and no document text reaches a log.

The cost, paid only for a PDF or DOCX: starting the child and importing the library, about
0.2 s (`bench/documents.py`). A turn without a document never starts one. Images in a PDF are
never decoded (text extraction does not draw them). A file that cannot be read (too big,
encrypted, broken, or a library's failure of any kind) gives a reason to tell the model, never
an exception that would fail the turn; `Unreadable.too_large` marks the reasons the user is told
at once.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import resource
import signal
import subprocess
import sys
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import Any

logger = logging.getLogger(__name__)

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MAX_PAGES = 100  # of a PDF, read at most
MAX_TEXT_CHARS = 200_000  # kept of a document's text (beside the upload, for read_file)
NO_TEXT = "it has no text to read (a scan, or images only)"

MB = 1_000_000
READ_MEMORY_BYTES = 128 * MB  # the child's, beyond what it has once its library is in
READ_SECONDS = 20  # the child is killed after this (and its CPU time is limited to it)
PAGES_SECONDS = 10  # no further PDF page is started after this
MIN_READ_SECONDS = 1  # with less time left, a document is not even started
# A DOCX: what its ZIP directory may declare. A long book is 5 MB of XML, a photo album 20 MB.
MAX_ZIP_MEMBERS = 1_000
MAX_UNPACKED_BYTES = 64 * MB  # all members together (python-docx holds every part it reads)
MAX_XML_BYTES = 24 * MB  # the XML parts together (parsed into trees)
MAX_EXPANSION = 100  # how many times its compressed size a member may expand (above 1 MB)
# A PDF: pypdf's limits, lowered.
MAX_STREAM_BYTES = 16 * MB  # one stream, inflated
MAX_PDF_PAGES = 10_000
MAX_PDF_OBJECTS = 500_000
_PDF_LIMITS: dict[str, Any] = {
    "maximum_declared_stream_length": MAX_STREAM_BYTES,
    "array_based_stream_maximum_output_length": MAX_STREAM_BYTES,
    "zlib_maximum_output_length": MAX_STREAM_BYTES,
    "lzw_maximum_output_length": MAX_STREAM_BYTES,
    "run_length_maximum_output_length": MAX_STREAM_BYTES,
    "brotli_maximum_output_length": MAX_STREAM_BYTES,
    "jbig2_maximum_output_length": MAX_STREAM_BYTES,
    "image_maximum_buffer_size": MAX_STREAM_BYTES,
    "stream_decoding_work_maximum_length": 4 * MAX_STREAM_BYTES,
    "stream_parsing_work_maximum_count": 500_000,  # operands and operators of one page
    "page_tree_maximum_entries": MAX_PDF_PAGES + 1_000,  # the pages and the nodes above them
    "page_tree_maximum_page_entries": 50 * MAX_PDF_PAGES,
    "jbig2dec_binary": None,  # never run an outside program on the file
}


@dataclass(frozen=True)
class DocumentText:
    text: str
    pages: int | None = None  # of a PDF, all of them
    pages_read: int | None = None
    cut: bool = False  # MAX_PAGES, MAX_TEXT_CHARS or PAGES_SECONDS stopped the reading


@dataclass(frozen=True)
class Unreadable:
    reason: str  # for the model (and the user): why its text cannot be had
    too_large: bool = False  # a limit refused it, not a fault of the file: told to the user too
    failure: str = ""  # the library's exception type, for the log only


def kind_of(name: str, mime: str) -> str | None:
    """ "pdf", "docx", or None for a file this module does not read."""
    if mime == PDF:
        return "pdf"
    suffix = PurePosixPath(name).suffix.lower()
    if mime == DOCX or (mime == "application/zip" and suffix == ".docx"):
        return "docx"
    return None


# -- in agent_turn: the child and what it answers ------------------------------------------------


def extract(kind: str, data: bytes, seconds: float | None = None) -> DocumentText | Unreadable:
    """The document's text, read in a child process within READ_MEMORY_BYTES and `seconds`
    (READ_SECONDS at most)."""
    seconds = min(READ_SECONDS, READ_SECONDS if seconds is None else seconds)
    if seconds < MIN_READ_SECONDS:  # the time was used by the files sent with it
        return Unreadable(
            "too slow to read: the files sent with it used up the time for reading", True
        )
    command = [sys.executable, "-S", "-s", "-P", "-B", "-m", __name__, kind, f"{seconds:g}"]
    started = time.monotonic()
    try:
        # The file goes in through a pipe (no copy); what comes out is at most the capped text.
        done = subprocess.run(  # noqa: S603 - our own interpreter and module, no shell
            command,
            input=data,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_child_environment(),
            timeout=seconds,
            check=False,
        )
    except subprocess.TimeoutExpired:  # run() has killed the child
        logger.warning("%s text extraction took more than %s s", kind, seconds)
        return Unreadable(_too_long(seconds), True)
    except OSError as error:  # the child could not start
        logger.warning("%s text extraction could not start: %s", kind, type(error).__name__)
        return _damaged(kind)
    try:
        answer = json.loads(done.stdout)
        result = _decode(answer["result"])
    except (ValueError, TypeError, KeyError):
        # No answer: the child crashed, most likely where a library could not allocate memory
        # and carried on, or it ran out of CPU time.
        logger.warning("%s text extraction ended without a result (exit %s)", kind, done.returncode)
        if done.returncode == -signal.SIGXCPU:
            return Unreadable(_too_long(READ_SECONDS), True)
        return Unreadable(_needs_more_memory(), True) if done.returncode < 0 else _damaged(kind)
    if isinstance(result, Unreadable) and result.failure:
        logger.warning("%s text extraction failed: %s", kind, result.failure)
    logger.info(
        "document read",
        extra={
            "kind": kind,
            "seconds": round(time.monotonic() - started, 3),
            "readable": isinstance(result, DocumentText),
            # The child's resident memory: once its library was in, and at most (VmHWM).
            "base_mb": round(answer["base_bytes"] / MB, 1),
            "peak_mb": round(answer["peak_bytes"] / MB, 1),
        },
    )
    return result


def _child_environment() -> dict[str, str]:
    """Where to find the packages (this package's folder, then this process's path: the layers
    in Lambda), and nothing else: no credentials, no configuration."""
    own = str(Path(__file__).resolve().parents[2])
    return {
        "PYTHONPATH": os.pathsep.join([own, *(path for path in sys.path if path)]),
        "LANG": "C.UTF-8",
    }


def _decode(answer: dict[str, Any]) -> DocumentText | Unreadable:
    if "reason" in answer:
        return Unreadable(
            str(answer["reason"]), bool(answer["too_large"]), str(answer.get("failure", ""))
        )
    return DocumentText(
        str(answer["text"]), answer.get("pages"), answer.get("pages_read"), bool(answer["cut"])
    )


def _damaged(kind: str, failure: str = "") -> Unreadable:
    return Unreadable(
        f"its text could not be read (a damaged or unusual {kind.upper()})", False, failure
    )


def _too_long(seconds: float) -> str:
    return f"too slow to read: reading it takes more than {seconds:g} s"


def _needs_more_memory() -> str:
    return f"too large to read: reading it needs more than {READ_MEMORY_BYTES // MB} MB of memory"


# -- in the child ---------------------------------------------------------------------------------


def read(
    kind: str, data: bytes, *, pages_seconds: float = PAGES_SECONDS
) -> DocumentText | Unreadable:
    """The text of `data`, with the checks and library limits of this module but no bound on
    the process (the child's work; tests call it directly)."""
    try:
        return _pdf(data, pages_seconds) if kind == "pdf" else _docx(data)
    except MemoryError:
        return Unreadable(_needs_more_memory(), True)
    except Exception as error:  # a broken file, or a library failing on a valid one
        if _at_memory_limit():  # lxml reports a failed allocation as a syntax error
            return Unreadable(_needs_more_memory(), True, type(error).__name__)
        return _damaged(kind, type(error).__name__)


def _at_memory_limit() -> bool:
    """Whether this process's address space reached its limit (RLIMIT_AS), as a library that
    fails an allocation leaves it: its peak (VmPeak) within 8 MiB of the limit."""
    limit, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if limit == resource.RLIM_INFINITY:
        return False
    try:
        with open("/proc/self/status") as status:
            peak = next(line for line in status if line.startswith("VmPeak:"))
    except (OSError, StopIteration):
        return False
    return int(peak.split()[1]) * 1024 >= limit - 8 * 1024 * 1024


def _beyond_pdf_limits(error: Exception) -> str:
    """What a pypdf limit (LimitReachedError) means, for the user."""
    message = str(error).lower()
    if "page tree" in message:
        return f"too large to read: it has more than {MAX_PDF_PAGES:,} pages"
    if "tokens" in message:
        return "too large to read: a page holds too many drawing instructions"
    if any(word in message for word in ("decompress", "decoding", "length", "buffer")):
        return f"too large to read: a part of it expands to more than {MAX_STREAM_BYTES // MB} MB"
    return "too large to read: it has more parts than can be read safely"


def _pdf(data: bytes, pages_seconds: float) -> DocumentText | Unreadable:
    from pypdf import apply_configuration
    from pypdf.errors import LimitReachedError

    with apply_configuration(**_PDF_LIMITS):
        try:
            return _pdf_text(data, pages_seconds)
        except LimitReachedError as error:
            return Unreadable(_beyond_pdf_limits(error), True, type(error).__name__)


def _pdf_text(data: bytes, pages_seconds: float) -> DocumentText | Unreadable:
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError

    reader = PdfReader(io.BytesIO(data), xref_stream_maximum_entries=MAX_PDF_OBJECTS)
    if len(reader.xref_objStm) + sum(map(len, reader.xref.values())) > MAX_PDF_OBJECTS:
        return Unreadable(f"too large to read: it has more than {MAX_PDF_OBJECTS:,} objects", True)
    if reader.is_encrypted:  # before anything else is read: the rest may be encrypted
        try:
            opened = bool(reader.decrypt(""))  # some PDFs are encrypted with no password
        except Exception:  # AES needs the cryptography package, which the layer does not ship
            opened = False
        if not opened:
            return Unreadable("it is encrypted (password-protected), so its text cannot be read")
    declared = _declared_pages(reader)
    if declared > MAX_PDF_PAGES:
        return Unreadable(
            f"too large to read: it has {declared:,} pages (the limit is {MAX_PDF_PAGES:,})",
            True,
        )
    total = len(reader.pages)
    texts, size, words, skipped = [], 0, False, ""
    deadline = time.monotonic() + pages_seconds
    for number, page in enumerate(reader.pages[:MAX_PAGES], start=1):
        try:
            text = (page.extract_text() or "").strip()
        except LimitReachedError as error:  # this page is skipped, the others are read
            skipped = skipped or _beyond_pdf_limits(error)
            text = f"[this page is not read, {_beyond_pdf_limits(error)}]"
        else:
            words = words or bool(text)
        texts.append(f"--- page {number} ---\n{text}")
        size += len(texts[-1])
        if size >= MAX_TEXT_CHARS or time.monotonic() > deadline:
            break
    if not words:
        return Unreadable(skipped, True) if skipped else Unreadable(NO_TEXT)
    whole = "\n\n".join(texts)
    pages_read = len(texts)
    cut = pages_read < total or len(whole) > MAX_TEXT_CHARS
    return DocumentText(whole[:MAX_TEXT_CHARS], pages=total, pages_read=pages_read, cut=cut)


def _declared_pages(reader: Any) -> int:
    """The page count the document states (/Root /Pages /Count), before any page is read."""
    try:
        count = reader.trailer["/Root"]["/Pages"]["/Count"]
    except (KeyError, TypeError):
        return 0
    return count if isinstance(count, int) else 0


def zip_refusal(data: bytes) -> str | None:
    """Why a ZIP-based document (DOCX) is refused unopened, from its directory alone; or None.

    Every member has an entry in the central directory that starts with PK\\x01\\x02, so their
    count bounds what zipfile builds before it builds anything. zipfile never returns more of a
    member than its entry declares, so the declared sizes bound what a reader can unpack.
    """
    if data.count(b"PK\x01\x02") > MAX_ZIP_MEMBERS:
        return f"too large to read: it holds more than {MAX_ZIP_MEMBERS:,} files"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        members = archive.infolist()
    if sum(member.file_size for member in members) > MAX_UNPACKED_BYTES:
        return f"too large to read: it expands to more than {MAX_UNPACKED_BYTES // MB} MB"
    xml = (member for member in members if member.filename.endswith((".xml", ".rels")))
    if sum(member.file_size for member in xml) > MAX_XML_BYTES:
        return f"too large to read: its text expands to more than {MAX_XML_BYTES // MB} MB of XML"
    for member in members:
        if member.file_size > MB and member.file_size > MAX_EXPANSION * member.compress_size:
            return (
                f"too large to read: a part of it expands more than {MAX_EXPANSION}-fold "
                "(the mark of a zip bomb)"
            )
    return None


def _docx(data: bytes) -> DocumentText | Unreadable:
    refusal = zip_refusal(data)
    if refusal is not None:
        return Unreadable(refusal, True)
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


def _limit_this_process(seconds: float) -> None:
    """RLIMIT_AS at the address space this process has now plus READ_MEMORY_BYTES (the
    interpreter and the library, already imported, are not what is bounded), and RLIMIT_CPU
    (the parent kills the child at `seconds`: this holds should the parent be gone)."""
    limits = [(resource.RLIMIT_CPU, math.ceil(seconds) + 1), (resource.RLIMIT_CORE, 0)]
    try:
        with open("/proc/self/statm") as statm:  # in pages; the first is the address space
            size = int(statm.read().split()[0]) * resource.getpagesize()
        limits.append((resource.RLIMIT_AS, size + READ_MEMORY_BYTES))
    except OSError:  # not Linux (a developer's Mac): no memory limit; Lambda always has /proc
        pass
    for kind, value in limits:
        _soft, hard = resource.getrlimit(kind)
        limit = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (limit, limit))


def _resident_bytes(field: str) -> int:
    """VmRSS (resident now) or VmHWM (resident at most) of this process. Not ru_maxrss, which
    counts the parent's memory too when the child was forked from it."""
    try:
        with open("/proc/self/status") as status:
            line = next(line for line in status if line.startswith(f"{field}:"))
    except (OSError, StopIteration):  # not Linux
        return 0
    return int(line.split()[1]) * 1024


def _child(kind: str, seconds: float) -> int:
    logging.disable(logging.CRITICAL)  # pypdf's warnings would name what it read
    if kind == "pdf":
        import pypdf  # noqa: F401 - imported before the limit: the library is not the document
    else:
        import docx  # noqa: F401
    _limit_this_process(seconds)
    base = _resident_bytes("VmRSS")
    try:
        # Pages stop in time for the text read so far to come back before the parent's limit.
        result = read(kind, sys.stdin.buffer.read(), pages_seconds=min(PAGES_SECONDS, seconds / 2))
    except MemoryError:  # the file itself did not fit
        result = Unreadable(_needs_more_memory(), True)
    answer = {"result": asdict(result), "base_bytes": base, "peak_bytes": _resident_bytes("VmHWM")}
    sys.stdout.write(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1], float(sys.argv[2])))
