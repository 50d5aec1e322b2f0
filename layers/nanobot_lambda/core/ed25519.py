"""Ed25519 signature verification (RFC 8032, section 5.1.7), in pure Python.

Only verification, only for Telegram's signature of a Mini App's launch data
(core/launch_data.py): the functions' layer has no cryptography library, and one signature per
launch (the console caches what it checked) does not warrant one. About 10 ms per signature.
Not constant-time, which verification need not be: every input is public.
"""

from __future__ import annotations

import hashlib

P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493  # the order of the base point
D = -121665 * pow(121666, -1, P) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)

Point = tuple[int, int, int, int]  # extended coordinates: x = X/Z, y = Y/Z, x*y = T/Z


def _add(a: Point, b: Point) -> Point:
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    e1 = (y1 - x1) * (y2 - x2) % P
    e2 = (y1 + x1) * (y2 + x2) % P
    c = 2 * t1 * t2 * D % P
    z = 2 * z1 * z2 % P
    e, f, g, h = e2 - e1, z - c, z + c, e2 + e1
    return e * f % P, g * h % P, f * g % P, e * h % P


def _double(a: Point) -> Point:
    x1, y1, z1, _ = a
    a2 = x1 * x1 % P
    b2 = y1 * y1 % P
    c = 2 * z1 * z1 % P
    h = a2 + b2
    e = h - (x1 + y1) * (x1 + y1) % P
    g = a2 - b2
    f = c + g
    return e * f % P, g * h % P, f * g % P, e * h % P


def _multiply(scalar: int, point: Point) -> Point:
    result: Point = (0, 1, 1, 0)  # the neutral element
    while scalar:
        if scalar & 1:
            result = _add(result, point)
        point = _double(point)
        scalar >>= 1
    return result


def _equal(a: Point, b: Point) -> bool:
    return (a[0] * b[2] - b[0] * a[2]) % P == 0 and (a[1] * b[2] - b[1] * a[2]) % P == 0


def _recover_x(y: int, sign: int) -> int | None:
    if y >= P:
        return None
    x2 = (y * y - 1) * pow(D * y * y + 1, -1, P) % P
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P:
        x = x * SQRT_M1 % P
    if (x * x - x2) % P:
        return None
    if x & 1 != sign:
        x = P - x
    return x


def _decode(encoded: bytes) -> Point | None:
    if len(encoded) != 32:
        return None
    y = int.from_bytes(encoded, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    x = _recover_x(y, sign)
    return None if x is None else (x, y, 1, x * y % P)


_BASE_Y = 4 * pow(5, -1, P) % P
_BASE_X = _recover_x(_BASE_Y, 0) or 0
_BASE: Point = (_BASE_X, _BASE_Y, 1, _BASE_X * _BASE_Y % P)


def verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Whether `signature` (64 bytes) is `public_key`'s (32 bytes) signature of `message`."""
    if len(signature) != 64:
        return False
    key = _decode(public_key)
    r = _decode(signature[:32])
    s = int.from_bytes(signature[32:], "little")
    if key is None or r is None or s >= L:
        return False
    digest = hashlib.sha512(signature[:32] + public_key + message).digest()
    h = int.from_bytes(digest, "little") % L
    return _equal(_multiply(s, _BASE), _add(r, _multiply(h, key)))
