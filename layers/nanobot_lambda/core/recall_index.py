"""A scope's recall index: its memory, history and documents as chunks with int8 vectors.

One object per scope (stored by a `RecallIndexObjects` port, outside the workspace the model
sees), in a versioned binary format:

    b"NBRI" | format version (u16) | header length (u32) | header (JSON, UTF-8)
    | matrix: one row of `dims` int8 per chunk | scales: one float32 per chunk | CRC-32 (u32)

The header names the embedding model and its dimensions and lists the chunks (id, source, the
file it came from, when it was written, its text). A row is its chunk's unit vector divided by
its largest component and rounded to -127..127; `scale` brings it back (cosine = dot product of
the rows × both scales). 10,000 chunks of 256 dimensions take 2.5 MB of matrix and 40 KB of
scales, plus their text.

An object that is truncated, corrupt (the CRC), of another format version or another model is
refused with `IndexFormatError`; the caller treats the scope as unindexed, and the next
indexing rebuilds it.

Updates are operations, not states (`IndexUpdate`: chunks added, ids removed), so a writer that
lost a race applies its own operation again to what the winner stored, and neither loses the
other's chunks (core/hybrid_recall.py).

Scoring without numpy (the Lambda layer has none): the matrix is packed, once per container and
object, into one big integer per dimension whose fields are the chunks' values (offset to
0..255). The query's dot product with every row is then `dims` multiplications of a big integer
by a small one and as many additions, all done by CPython's integer arithmetic in C, and the
fields are read back with byte slicing. bench/recall.py measures it.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import struct
import sys
import zlib
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import ge, mul, sub
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nanobot_lambda.core.scopes import Scope

MAGIC = b"NBRI"
FORMAT_VERSION = 1
_PREAMBLE = struct.Struct("<4sHI")
_CRC = struct.Struct("<I")
# Chunks kept per scope; past it the oldest go (docs/memory.md: what takes over at scale).
MAX_CHUNKS = 50_000
SOURCES = ("memory", "history", "document")
BLOCK_ROWS = 512  # rows scored together (core/recall_index.py: VectorScorer)


class IndexFormatError(ValueError):
    """The stored object is not a readable index of this format and model: rebuild it."""


@dataclass(frozen=True)
class Chunk:
    id: str  # a hash of its source and text: the same entry is never embedded twice
    source: str  # memory, history or document
    origin: str  # the workspace file it came from
    at: float  # when it was written (seconds since the epoch): recall prefers recent ones
    text: str


def chunk_id(source: str, text: str) -> str:
    return hashlib.sha256(f"{source}\0{text}".encode()).hexdigest()[:20]


def make_chunk(source: str, origin: str, at: float, text: str) -> Chunk:
    return Chunk(chunk_id(source, text), source, origin, at, text)


@dataclass(frozen=True)
class Quantized:
    row: bytes  # `dims` int8 values (two's complement bytes)
    scale: float


def quantize(vector: Sequence[float]) -> Quantized:
    """A vector as an int8 row and its scale (of the unit vector in its direction)."""
    norm = math.sqrt(sum(value * value for value in vector)) or 1.0
    largest = max((abs(value) for value in vector), default=0.0) / norm or 1.0
    factor = 127 / (largest * norm)
    row = bytes(round(value * factor) & 0xFF for value in vector)
    return Quantized(row, array("f", [largest / 127])[0])  # as stored: float32


@dataclass(frozen=True)
class IndexUpdate:
    """What one indexing run changes: chunks to add (with their vectors), ids to remove."""

    model: str
    dims: int
    added: tuple[tuple[Chunk, Quantized], ...] = ()
    removed: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.added and not self.removed


@dataclass(frozen=True)
class RecallIndex:
    model: str
    dims: int
    chunks: tuple[Chunk, ...] = ()
    matrix: bytes = b""  # len(chunks) rows of `dims` int8
    scales: tuple[float, ...] = ()
    _scorer: list[VectorScorer] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def empty(cls, model: str, dims: int) -> RecallIndex:
        return cls(model, dims)

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(chunk.id for chunk in self.chunks)

    def applied(self, update: IndexUpdate) -> RecallIndex:
        """This index with `update` made: its removals, then its chunks not here yet; an
        index of another model or size starts again from empty. Past MAX_CHUNKS the oldest
        chunks go."""
        base = self if (self.model, self.dims) == (update.model, update.dims) else None
        kept: list[tuple[Chunk, bytes, float]] = []
        seen: set[str] = set()
        if base is not None:
            for position, chunk in enumerate(base.chunks):
                if chunk.id in update.removed:
                    continue
                row = base.matrix[position * base.dims : (position + 1) * base.dims]
                kept.append((chunk, row, base.scales[position]))
                seen.add(chunk.id)
        for chunk, quantized in update.added:
            if chunk.id not in seen and len(quantized.row) == update.dims:
                kept.append((chunk, quantized.row, quantized.scale))
                seen.add(chunk.id)
        if len(kept) > MAX_CHUNKS:
            kept = sorted(kept, key=lambda item: item[0].at)[-MAX_CHUNKS:]
        return RecallIndex(
            update.model,
            update.dims,
            tuple(item[0] for item in kept),
            b"".join(item[1] for item in kept),
            tuple(item[2] for item in kept),
        )

    def scorer(self) -> VectorScorer:
        """The index packed for scoring, made once per index object."""
        if not self._scorer:
            self._scorer.append(VectorScorer(self.matrix, self.dims, self.scales))
        return self._scorer[0]


# -- the stored format ---------------------------------------------------------------------


def encode(index: RecallIndex) -> bytes:
    header = json.dumps(
        {
            "model": index.model,
            "dims": index.dims,
            "chunks": [[c.id, c.source, c.origin, c.at, c.text] for c in index.chunks],
        },
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode()
    scales = array("f", index.scales)
    if sys.byteorder == "big":
        scales.byteswap()
    body = (
        _PREAMBLE.pack(MAGIC, FORMAT_VERSION, len(header))
        + header
        + index.matrix
        + scales.tobytes()
    )
    return body + _CRC.pack(zlib.crc32(body))


def decode(data: bytes, *, model: str | None = None) -> RecallIndex:
    """The index in `data`; IndexFormatError when it is not one of this format (and, given
    `model`, of that embedding model)."""
    if len(data) < _PREAMBLE.size + _CRC.size:
        raise IndexFormatError("too short")
    magic, version, header_length = _PREAMBLE.unpack_from(data)
    if magic != MAGIC:
        raise IndexFormatError("not a recall index")
    if version != FORMAT_VERSION:
        raise IndexFormatError(f"format version {version}, not {FORMAT_VERSION}")
    body, (crc,) = data[: -_CRC.size], _CRC.unpack(data[-_CRC.size :])
    if zlib.crc32(body) != crc:
        raise IndexFormatError("checksum mismatch (truncated or corrupt)")
    start = _PREAMBLE.size
    try:
        header = json.loads(body[start : start + header_length])
        dims = int(header["dims"])
        chunks = tuple(
            Chunk(str(id_), str(source), str(origin), float(at), str(text))
            for id_, source, origin, at, text in header["chunks"]
        )
        index_model = str(header["model"])
    except (ValueError, KeyError, TypeError) as error:
        raise IndexFormatError(f"unreadable header ({type(error).__name__})") from None
    if model is not None and index_model != model:
        raise IndexFormatError(f"made with {index_model}, not {model}")
    matrix_start = start + header_length
    matrix_end = matrix_start + len(chunks) * dims
    if dims <= 0 or len(body) != matrix_end + 4 * len(chunks):
        raise IndexFormatError("sizes do not add up")
    scales = array("f")
    scales.frombytes(body[matrix_end:])
    if sys.byteorder == "big":
        scales.byteswap()
    return RecallIndex(index_model, dims, chunks, body[matrix_start:matrix_end], tuple(scales))


# -- scoring -------------------------------------------------------------------------------

_OFFSET = bytes((value ^ 0x80) for value in range(256))  # int8 byte -> value + 128


class VectorScorer:
    """Approximate cosine similarity of a query with every row, in pure Python (see above)."""

    def __init__(self, matrix: bytes, dims: int, scales: Sequence[float]) -> None:
        self.rows = len(scales)
        self.dims = dims
        self._scales = list(scales)
        # A field holds at most dims × 255 × 255: no field ever carries into the next.
        self._width = max(3, math.ceil((dims * 255 * 255).bit_length() / 8))
        width = self._width
        # Blocks of rows, so that one block's columns stay in the CPU's cache while summed.
        self._blocks: list[tuple[int, list[int]]] = []
        for first in range(0, self.rows, BLOCK_ROWS):
            rows = min(BLOCK_ROWS, self.rows - first)
            block = matrix[first * dims : (first + rows) * dims]
            columns = []
            for dimension in range(dims):
                spread = bytearray(rows * width)
                spread[0::width] = block[dimension::dims].translate(_OFFSET)
                columns.append(int.from_bytes(spread, "little"))
            self._blocks.append((rows, columns))
        signed = array("b", matrix)
        # Per row: what the offsets add to its field besides the query's share.
        self._base = [
            128 * sum(signed[row * dims : (row + 1) * dims]) + dims * 128 * 128
            for row in range(self.rows)
        ]

    def scores(self, query: Sequence[float]) -> list[float]:
        """Each row's cosine similarity with `query` (within int8 rounding)."""
        if not self.rows or len(query) != self.dims:
            return []
        unscaled, scale = self._unscaled(query)
        return [value * scale for value in unscaled]

    def best(self, query: Sequence[float], limit: int, floor: float) -> list[tuple[float, int]]:
        """(similarity, row) of the best `limit` rows at least `floor` similar, best first: as
        `top(scores(query), limit, floor)`, with the per-row work left to C (map, compress)."""
        similarities = self.similarities(query)
        return similarities.best(limit, floor) if similarities is not None else []

    def similarities(self, query: Sequence[float]) -> Similarities | None:
        """`query`'s similarity with every row, to take the best of and to look rows up in;
        None when there is no row or the query is of another size."""
        if not self.rows or len(query) != self.dims:
            return None
        return Similarities(*self._unscaled(query))

    def _unscaled(self, query: Sequence[float]) -> tuple[list[float], float]:
        """(each row's similarity divided by the query's scale, the query's scale)."""
        quantized = quantize(query)
        values = array("b", quantized.row)
        weights = [value + 128 for value in values]
        width = self._width
        fields = array("Q")
        for rows, columns in self._blocks:
            total = 0
            for weight, column in zip(weights, columns, strict=True):
                total += weight * column
            raw = total.to_bytes(rows * width + 1, "little")
            wide = bytearray(rows * 8)
            for byte in range(width):
                wide[byte::8] = raw[byte : rows * width : width]
            fields.frombytes(bytes(wide))
        if sys.byteorder == "big":
            fields.byteswap()
        shift = 128 * sum(values)
        # (field - base - shift) × the row's scale, row by row in C.
        dots = map(sub, map(sub, fields, self._base), repeat(shift))
        return list(map(mul, dots, self._scales)), quantized.scale


class Similarities:
    """A query's similarity with each row of an index, scored once (`VectorScorer`)."""

    def __init__(self, unscaled: list[float], scale: float) -> None:
        self._unscaled = unscaled  # each row's similarity divided by the query's scale
        self._scale = scale
        self.rows = len(unscaled)

    def best(self, limit: int, floor: float) -> list[tuple[float, int]]:
        """(similarity, row) of the best `limit` rows at least `floor` similar, best first."""
        unscaled = self._unscaled
        above = compress(
            range(self.rows - 1, -1, -1), map(ge, reversed(unscaled), repeat(floor / self._scale))
        )
        # Ties: the later row (the newer chunk) first, as `top` orders them.
        best = heapq.nlargest(limit, above, key=unscaled.__getitem__)
        return [(unscaled[row] * self._scale, row) for row in best]

    def of(self, row: int) -> float:
        """The similarity of one row."""
        return self._unscaled[row] * self._scale


def dot_scores(index: RecallIndex, query: Sequence[float]) -> list[float]:
    """The same scores computed row by row (for tests and the benchmark's comparison)."""
    quantized = quantize(query)
    values = array("b", quantized.row)
    signed = array("b", index.matrix)
    dims = index.dims
    return [
        sum(a * b for a, b in zip(values, signed[row * dims : (row + 1) * dims], strict=True))
        * index.scales[row]
        * quantized.scale
        for row in range(len(index.chunks))
    ]


def top(scores: Iterable[float], limit: int, floor: float) -> list[tuple[float, int]]:
    """(score, position) of the best `limit` scores at or above `floor`, best first."""
    above = [(score, position) for position, score in enumerate(scores) if score >= floor]
    above.sort(key=lambda item: (-item[0], -item[1]))
    return above[:limit]


@dataclass(frozen=True)
class StoredIndex:
    """A scope's stored index object as read (`RecallIndexObjects.get`)."""

    etag: str
    data: bytes | None  # None: unchanged since the ETag the conditional read named


class RecallIndexObjects(Protocol):
    """Each scope's recall index as one stored object, kept outside the workspace the model
    can list or write."""

    def get(self, scope: Scope, *, unless_etag: str | None = None) -> StoredIndex | None:
        """The stored object, or None when there is none. With `unless_etag`, a conditional
        read: when the object still has that ETag its bytes are not sent again
        (`StoredIndex.data` is None)."""
        ...

    def put(self, scope: Scope, data: bytes, *, if_match: str | None) -> str:
        """Store the object only if it still has the ETag `if_match` (None: only if there is
        none yet); returns the new ETag. Raises WriteConflict when the condition fails."""
        ...
