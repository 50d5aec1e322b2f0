"""Real PDF and DOCX files for the tests, made with the libraries the product reads them with."""

from __future__ import annotations

import io
import random
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import cast

from docx import Document
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject


def pdf(*pages: str, password: str | None = None) -> bytes:
    """A PDF with one page per text (Helvetica; an empty text makes a page without any text);
    encrypted with `password` when given ("" encrypts with an empty user password)."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(width=612, height=792)
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = DecodedStreamObject()
        stream.set_data(f"BT /F1 14 Tf 72 700 Td ({escaped}) Tj ET".encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
    if password is not None:
        writer.encrypt(user_password=password, owner_password="owner-secret")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def docx(*paragraphs: str, table: list[list[str]] | None = None) -> bytes:
    document = Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for row, values in zip(grid.rows, table, strict=True):
            for cell, value in zip(row.cells, values, strict=True):
                cell.text = value
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


# -- hostile files -------------------------------------------------------------------------------
# Built quickly however much they expand: a chunk is deflated once (ending in a full flush, so its
# output stands alone) and that output is repeated, which is a valid deflate stream of the chunk
# repeated. The sizes they declare are true: whatever reads them really gets that much.

MIB = 1024 * 1024


@dataclass(frozen=True)
class Repeated:
    """`head`, then `chunk` `times` over, then `tail`: a file member that expands hugely."""

    head: bytes
    chunk: bytes
    times: int
    tail: bytes = b""

    @property
    def size(self) -> int:
        return len(self.head) + len(self.chunk) * self.times + len(self.tail)


def _deflated(content: bytes | Repeated) -> tuple[bytes, int, int]:
    """(raw deflate, CRC-32, size) of `content`, a repeated one without ever holding it whole."""
    parts = content if isinstance(content, Repeated) else Repeated(content, b"", 0)
    pieces: list[bytes] = []
    crc = 0
    for piece, times in ((parts.head, 1), (parts.chunk, parts.times), (parts.tail, 1)):
        if not piece or not times:
            continue
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        pieces.append((compressor.compress(piece) + compressor.flush(zlib.Z_FULL_FLUSH)) * times)
        for _ in range(times):
            crc = zlib.crc32(piece, crc)
    pieces.append(zlib.compressobj(9, zlib.DEFLATED, -15).flush())  # the final, empty block
    return b"".join(pieces), crc, parts.size


def zlib_stream(content: Repeated) -> bytes:
    """`content` as a zlib stream (what a PDF's /FlateDecode holds)."""
    deflated, _crc, _size = _deflated(content)
    adler = 1
    for piece, times in ((content.head, 1), (content.chunk, content.times), (content.tail, 1)):
        for _ in range(times):
            adler = zlib.adler32(piece, adler)
    return b"\x78\xda" + deflated + struct.pack(">I", adler)


def zip_archive(members: dict[str, bytes | Repeated]) -> bytes:
    """A ZIP archive of deflated members (sizes as they really are, below 4 GiB each)."""
    local, central = bytearray(), bytearray()
    for name, content in members.items():
        deflated, crc, size = _deflated(content)
        encoded = name.encode()
        fields = (20, 0, 8, 0, 0x21, crc, len(deflated), size, len(encoded), 0)
        central += struct.pack("<4s2H", b"PK\x01\x02", 20, 20) + struct.pack("<4H3I2H", *fields[1:])
        central += struct.pack("<3H2I", 0, 0, 0, 0, len(local)) + encoded
        local += struct.pack("<4sH", b"PK\x03\x04", 20) + struct.pack("<4H3I2H", *fields[1:])
        local += encoded + deflated
    end = struct.pack(
        "<4s4H2IH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(local), 0
    )
    return bytes(local + central + end)


def docx_bomb(expanded: int, *, paragraph: bytes | None = None) -> bytes:
    """A real DOCX whose word/document.xml expands to about `expanded` bytes of paragraphs."""
    with zipfile.ZipFile(io.BytesIO(docx("the first paragraph"))) as archive:
        members: dict[str, bytes | Repeated] = {n: archive.read(n) for n in archive.namelist()}
    document = cast(bytes, members["word/document.xml"])
    head, tail = document.split(b"<w:body>", 1)
    paragraph = paragraph or b"<w:p><w:r><w:t>all work and no play</w:t></w:r></w:p>"
    chunk = paragraph * max(1, MIB // len(paragraph))
    members["word/document.xml"] = Repeated(head + b"<w:body>", chunk, expanded // len(chunk), tail)
    return zip_archive(members)


def docx_of_empty_paragraphs(expanded: int) -> bytes:
    """A DOCX of about `expanded` bytes of empty paragraphs, each with its own id: XML that
    compresses only a few times (no zip bomb) but is a vast tree once parsed."""
    ids = random.Random(expanded)
    chunk = b"".join(b'<w:p w:rsidR="%08X"/>' % ids.getrandbits(32) for _ in range(MIB // 22))
    return docx_bomb(expanded, paragraph=chunk)


def docx_of_many_files(count: int) -> bytes:
    """A real DOCX with `count` more (empty) files in it."""
    with zipfile.ZipFile(io.BytesIO(docx("the first paragraph"))) as archive:
        members: dict[str, bytes | Repeated] = {n: archive.read(n) for n in archive.namelist()}
    members.update({f"word/media/empty{number}.bin": b"" for number in range(count)})
    return zip_archive(members)


def xlsx_bomb(expanded: int) -> bytes:
    """A minimal XLSX whose one sheet expands to about `expanded` bytes of cells."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    relationships = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    row = b'<row><c t="inlineStr"><is><t>all work and no play</t></is></c></row>'
    chunk = row * (MIB // len(row))
    return zip_archive(
        {
            "[Content_Types].xml": (
                b'<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
                b'content-types"><Default Extension="xml" ContentType="application/xml"/></Types>'
            ),
            "xl/workbook.xml": (
                f'<workbook xmlns="{main}" xmlns:r="{relationships}"><sheets>'
                '<sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
            ).encode(),
            "xl/worksheets/sheet1.xml": Repeated(
                f'<worksheet xmlns="{main}"><sheetData>'.encode(),
                chunk,
                expanded // len(chunk),
                b"</sheetData></worksheet>",
            ),
        }
    )


def _pdf_file(objects: list[bytes], root: int = 1) -> bytes:
    """A PDF of `objects` (object n is objects[n - 1]) with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        root,
        xref,
    )
    return bytes(out)


_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def pdf_stream_bomb(expanded: int) -> bytes:
    """A one-page PDF whose content stream (/FlateDecode) expands to about `expanded` bytes."""
    line = b"BT /F1 12 Tf 72 700 Td (all work and no play) Tj ET\n"
    chunk = line * (MIB // len(line))
    stream = zlib_stream(Repeated(b"", chunk, expanded // len(chunk)))
    return _pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(stream), stream),
            _FONT,
        ]
    )


def pdf_with_image_bomb(expanded: int) -> bytes:
    """A one-page PDF with a line of text and an image (/FlateDecode, 8-bit grey, square) whose
    pixels inflate to about `expanded` bytes, drawn on the page."""
    side = int(expanded**0.5)
    pixels = zlib_stream(Repeated(b"", bytes(side), side))
    content = (
        b"BT /F1 12 Tf 72 700 Td (a page with a photo) Tj ET q 100 0 0 100 72 500 cm /Im1 Do Q"
    )
    return _pdf_file(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
            _FONT,
            b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray"
            b" /BitsPerComponent 8 /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream"
            % (side, side, len(pixels), pixels),
        ]
    )


def pdf_with_pages(
    count: int, *, per_node: int = 1000, declared: int | None = None, filler: int = 0
) -> bytes:
    """A PDF of `count` pages (each its own object, a line of text on the first), in a page
    tree of nodes holding `per_node` pages each: `count` + `count / per_node` + 4 objects, and
    `filler` more that nothing refers to. The root states `declared` pages (true by default)."""
    nodes = -(-count // per_node)
    first_node, first_page = 5, 5 + nodes  # 1 catalog, 2 root, 3 font, 4 the first page's text
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 3 0 R >> >> >>"  # inherited by every page
        % (b" ".join(b"%d 0 R" % (first_node + n) for n in range(nodes)), declared or count),
        _FONT,
        b"<< /Length 45 >>\nstream\nBT /F1 12 Tf 72 700 Td (the first page) Tj ET\nendstream",
    ]
    for node in range(nodes):
        kids = range(first_page + node * per_node, first_page + min(count, (node + 1) * per_node))
        objects.append(
            b"<< /Type /Pages /Parent 2 0 R /Kids [%s] /Count %d >>"
            % (b" ".join(b"%d 0 R" % kid for kid in kids), len(kids))
        )
    for page in range(count):
        parent = first_node + page // per_node
        contents = b" /Contents 4 0 R" if page == 0 else b""
        objects.append(b"<< /Type /Page /Parent %d 0 R%s >>" % (parent, contents))
    objects += [b"(filler %d)" % number for number in range(filler)]
    return _pdf_file(objects)
