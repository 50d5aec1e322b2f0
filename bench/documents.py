"""What reading a document costs agent_turn: time and memory, for ordinary and hostile files.

Each file is read with `documents.extract` (the child process with its memory and time limit)
several times; printed are the median and p95 of the wall time, the child's peak resident
memory beyond its start (its VmHWM less its VmRSS once the library was in, which extract logs),
and what the parent's own resident memory grew by. The goal: every file, hostile or not, costs
agent_turn nothing beyond the file itself, and the child at most READ_MEMORY_BYTES (128 MB);
an ordinary small document costs about 0.2 s.

`--before` also reads the 350 KB DOCX zip bomb as the code did before the child existed:
python-docx in this process's own child, with no check and no limit but a 4 GB safety cap.
That took 1.5 GB and 87 s on a loaded 2-core machine: it is not run by default.

    make bench        or        .venv/bin/python bench/documents.py [--before] [runs]
"""

from __future__ import annotations

import logging
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support: the hostile files
from nanobot_lambda.adapters import documents  # noqa: E402
from tests.support.documents import (  # noqa: E402
    MIB,
    docx,
    docx_bomb,
    docx_of_empty_paragraphs,
    pdf,
    pdf_stream_bomb,
    pdf_with_pages,
)

CASES: dict[str, tuple[str, Callable[[], bytes]]] = {
    "small PDF (2 pages)": ("pdf", lambda: pdf("Invoice 42", "Total: 18 EUR")),
    "small DOCX": ("docx", lambda: docx("Dear Ada,", "The seeds arrive on Monday.")),
    "PDF of 100 pages": ("pdf", lambda: pdf(*(f"page {n} " * 200 for n in range(100)))),
    "DOCX zip bomb (100 MiB of XML)": ("docx", lambda: docx_bomb(100 * MIB)),
    "DOCX of 12 MiB empty paragraphs": ("docx", lambda: docx_of_empty_paragraphs(12 * MIB)),
    "PDF stream inflating to 200 MiB": ("pdf", lambda: pdf_stream_bomb(200 * MIB)),
    "PDF of 100,000 pages": ("pdf", lambda: pdf_with_pages(100_000)),
}

BEFORE = r"""
import io, resource, sys, time
sys.path.insert(0, sys.argv[1])
from tests.support.documents import MIB, docx_bomb
from docx import Document
data = docx_bomb(100 * MIB)
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
def resident(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field))
base, started = resident("VmRSS:"), time.perf_counter()
try:
    document = Document(io.BytesIO(data))
    text = "\n".join(paragraph.text for paragraph in document.paragraphs)
    outcome = f"{len(text):,} characters"
except MemoryError:
    outcome = "MemoryError at the 4 GB cap"
print(f"{len(data):,} bytes: {time.perf_counter() - started:.1f} s, "
      f"+{(resident('VmHWM:') - base) / 1e6:.0f} MB, {outcome}")
"""


class Peaks(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.used: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "document read":  # the child's own figures (see extract)
            self.used.append(record.__dict__["peak_mb"] - record.__dict__["base_mb"])


def resident_mb() -> float:
    """This process's peak resident memory (agent_turn's side of extract)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str]) -> None:
    runs = int(next((arg for arg in argv if arg.isdigit()), "5"))
    peaks = Peaks()
    logger = logging.getLogger(documents.__name__)
    logger.addHandler(peaks)
    logger.setLevel(logging.INFO)
    limit = documents.READ_MEMORY_BYTES // documents.MB
    print(f"documents.extract, {runs} runs each (the child's limit: {limit} MB)")
    print(f"{'file':34} {'bytes':>10} {'median':>8} {'p95':>8} {'child':>9} {'parent':>8}  result")
    for name, (kind, make) in CASES.items():
        data = make()
        before = resident_mb()
        times, peaks.used = [], []
        for _ in range(runs):
            started = time.perf_counter()
            result = documents.extract(kind, data)
            times.append(time.perf_counter() - started)
        p95 = statistics.quantiles(times, n=20)[-1] if runs > 1 else times[0]
        child = f"+{max(peaks.used):.0f} MB" if peaks.used else "(crash)"
        shown = result.reason if isinstance(result, documents.Unreadable) else "text read"
        print(
            f"{name:34} {len(data):>10,} {statistics.median(times):>7.2f}s {p95:>7.2f}s "
            f"{child:>9} {resident_mb() - before:>+6.0f} MB  {shown}"
        )
    if "--before" in argv:
        print("\nBefore (python-docx in-process, no checks, no limit), the 100 MiB DOCX bomb:")
        done = subprocess.run(  # noqa: S603 - this interpreter, the script above
            [sys.executable, "-c", BEFORE, str(ROOT)], capture_output=True, text=True, check=True
        )
        print(done.stdout.strip())


if __name__ == "__main__":
    main(sys.argv[1:])
