"""String hashes TensorFlow buckets with: FarmHash's Fingerprint64 and SipHash-2-4.

Plain Python and NumPy on `bytes` (no compiled dependency): `strings.to_hash_bucket_fast`,
`to_hash_bucket_strong` and Keras's Hashing layer call these, so their buckets match
TensorFlow's bit for bit.
"""
from __future__ import annotations

import numpy as np

_M64 = (1 << 64) - 1
_K0, _K1, _K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F


def _rotr(v: int, shift: int) -> int:
    return ((v >> shift) | (v << (64 - shift))) & _M64


def _rotl(v: int, shift: int) -> int:
    return ((v << shift) | (v >> (64 - shift))) & _M64


def _fetch(s: bytes, at: int, width: int = 8) -> int:
    return int.from_bytes(s[at:at + width], "little")


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash_len16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M64
    b ^= b >> 47
    return (b * mul) & _M64


def _len0to16(s: bytes, n: int) -> int:
    if n >= 8:
        mul = (_K2 + n * 2) & _M64
        a = (_fetch(s, 0) + _K2) & _M64
        b = _fetch(s, n - 8)
        c = (_rotr(b, 37) * mul + a) & _M64
        d = (((_rotr(a, 25) + b) & _M64) * mul) & _M64
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = (_K2 + n * 2) & _M64
        return _hash_len16((n + (_fetch(s, 0, 4) << 3)) & _M64, _fetch(s, n - 4, 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M64) * _K2) & _M64
    return _K2


def _len17to32(s: bytes, n: int) -> int:
    mul = (_K2 + n * 2) & _M64
    a = (_fetch(s, 0) * _K1) & _M64
    b = _fetch(s, 8)
    c = (_fetch(s, n - 8) * mul) & _M64
    d = (_fetch(s, n - 16) * _K2) & _M64
    return _hash_len16((_rotr((a + b) & _M64, 43) + _rotr(c, 30) + d) & _M64,
                       (a + _rotr((b + _K2) & _M64, 18) + c) & _M64, mul)


def _len33to64(s: bytes, n: int) -> int:
    mul = (_K2 + n * 2) & _M64
    a = (_fetch(s, 0) * _K2) & _M64
    b = _fetch(s, 8)
    c = (_fetch(s, n - 8) * mul) & _M64
    d = (_fetch(s, n - 16) * _K2) & _M64
    y = (_rotr((a + b) & _M64, 43) + _rotr(c, 30) + d) & _M64
    z = _hash_len16(y, (a + _rotr((b + _K2) & _M64, 18) + c) & _M64, mul)
    e = (_fetch(s, 16) * mul) & _M64
    f = _fetch(s, 24)
    g = ((y + _fetch(s, n - 32)) * mul) & _M64
    h = ((z + _fetch(s, n - 24)) * mul) & _M64
    return _hash_len16((_rotr((e + f) & _M64, 43) + _rotr(g, 30) + h) & _M64,
                       (e + _rotr((f + a) & _M64, 18) + g) & _M64, mul)


def _weak32(s: bytes, at: int, a: int, b: int) -> tuple:
    w, x, y, z = _fetch(s, at), _fetch(s, at + 8), _fetch(s, at + 16), _fetch(s, at + 24)
    a = (a + w) & _M64
    b = _rotr((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rotr(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def farmhash_fingerprint64(s: bytes) -> int:
    """FarmHash's Fingerprint64 (its "na" Hash64) of `s`: the hash TensorFlow's
    `strings.to_hash_bucket_fast` and Keras's Hashing layer bucket with.

    Example:
        >>> farmhash_fingerprint64(b"") == 0x9AE16A3B2F90404F
        True
    """
    n = len(s)
    if n <= 16:
        return _len0to16(s, n)
    if n <= 32:
        return _len17to32(s, n)
    if n <= 64:
        return _len33to64(s, n)
    # longer strings: 64-byte blocks through a 56-byte state (v, w, x, y, z)
    x = 81
    y = (81 * _K1 + 113) & _M64
    z = (_shift_mix((y * _K2 + 113) & _M64) * _K2) & _M64
    v0 = v1 = w0 = w1 = 0
    x = (x * _K2 + _fetch(s, 0)) & _M64
    end = ((n - 1) // 64) * 64
    at = 0
    while True:
        x = (_rotr((x + y + v0 + _fetch(s, at + 8)) & _M64, 37) * _K1) & _M64
        y = (_rotr((y + v1 + _fetch(s, at + 48)) & _M64, 42) * _K1) & _M64
        x ^= w1
        y = (y + v0 + _fetch(s, at + 40)) & _M64
        z = (_rotr((z + w0) & _M64, 33) * _K1) & _M64
        v0, v1 = _weak32(s, at, (v1 * _K1) & _M64, (x + w0) & _M64)
        w0, w1 = _weak32(s, at + 32, (z + w1) & _M64, (y + _fetch(s, at + 16)) & _M64)
        z, x = x, z
        at += 64
        if at == end:
            break
    mul = (_K1 + ((z & 0xFF) << 1)) & _M64
    at = n - 64
    w0 = (w0 + ((n - 1) & 63)) & _M64
    v0 = (v0 + w0) & _M64
    w0 = (w0 + v0) & _M64
    x = (_rotr((x + y + v0 + _fetch(s, at + 8)) & _M64, 37) * mul) & _M64
    y = (_rotr((y + v1 + _fetch(s, at + 48)) & _M64, 42) * mul) & _M64
    x ^= (w1 * 9) & _M64
    y = (y + v0 * 9 + _fetch(s, at + 40)) & _M64
    z = (_rotr((z + w0) & _M64, 33) * mul) & _M64
    v0, v1 = _weak32(s, at, (v1 * mul) & _M64, (x + w0) & _M64)
    w0, w1 = _weak32(s, at + 32, (z + w1) & _M64, (y + _fetch(s, at + 16)) & _M64)
    z, x = x, z
    return _hash_len16((_hash_len16(v0, w0, mul) + _shift_mix(y) * _K0 + z) & _M64,
                       (_hash_len16(v1, w1, mul) + x) & _M64, mul)


def siphash64(key: tuple, s: bytes) -> int:
    """SipHash-2-4 of `s` under the 128-bit `key` (two 64-bit words): the hash TensorFlow's
    `strings.to_hash_bucket_strong` buckets with.

    Example:
        >>> siphash64((0, 0), b"") == 0x1E924B9D737700D7
        True
    """
    k0, k1 = key[0] & _M64, key[1] & _M64
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D,
         k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rounds(count: int) -> None:
        for _ in range(count):
            v[0] = (v[0] + v[1]) & _M64
            v[1] = _rotl(v[1], 13) ^ v[0]
            v[0] = _rotl(v[0], 32)
            v[2] = (v[2] + v[3]) & _M64
            v[3] = _rotl(v[3], 16) ^ v[2]
            v[0] = (v[0] + v[3]) & _M64
            v[3] = _rotl(v[3], 21) ^ v[0]
            v[2] = (v[2] + v[1]) & _M64
            v[1] = _rotl(v[1], 17) ^ v[2]
            v[2] = _rotl(v[2], 32)

    whole = len(s) - len(s) % 8
    words = [_fetch(s, i) for i in range(0, whole, 8)]
    words.append(((len(s) & 0xFF) << 56) | _fetch(s, whole))
    for m in words:
        v[3] ^= m
        rounds(2)
        v[0] ^= m
    v[2] ^= 0xFF
    rounds(4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


# --------------------------------------------------------------------------- vectorized

_U = np.uint64


def _vrotr(v, shift: int):
    return (v >> _U(shift)) | (v << _U(64 - shift))


def _vmix(v):
    return v ^ (v >> _U(47))


def _vlen16(u, v, mul):
    a = _vmix((u ^ v) * mul)
    b = _vmix((v ^ a) * mul)
    return b * mul


def _fetcher(group: list, width: int):
    """`fetch(offsets, n)`: the little-endian `n`-byte words of each string at its offset
    (an int or an array), from the strings of `group` zero-padded to `width` bytes."""
    rows = np.frombuffer(b"".join(s.ljust(width, b"\0") for s in group),
                         np.uint8).reshape(len(group), width)
    index = np.arange(len(group))[:, None]

    def fetch(offsets, n: int = 8):
        at = np.asarray(offsets).reshape(-1, 1) + np.arange(n)
        return np.ascontiguousarray(rows[index, at]).view("<u8" if n == 8 else "<u4") \
            .reshape(-1).astype(_U)
    return fetch


def _vector_group(group: list, lengths: np.ndarray):
    """Fingerprint64 of strings all 1 to 64 bytes long whose length class is one of
    1-3, 4-7, 8-16, 17-32, 33-64 (the caller groups them), as uint64."""
    n = lengths.astype(_U)
    top = int(lengths.max())
    mul = _U(_K2) + n * _U(2)
    fetch = _fetcher(group, max(top, 8))
    k0, k1, k2 = _U(_K0), _U(_K1), _U(_K2)
    if top <= 3:
        rows = np.frombuffer(b"".join(s.ljust(3, b"\0") for s in group), np.uint8) \
            .reshape(len(group), 3).astype(_U)
        index = np.arange(len(group))
        a, b, c = rows[:, 0], rows[index, lengths >> 1], rows[index, lengths - 1]
        y = a + (b << _U(8))
        z = n + (c << _U(2))
        return _vmix((y * k2) ^ (z * k0)) * k2
    if top <= 7:
        return _vlen16(n + (fetch(0, 4) << _U(3)), fetch(lengths - 4, 4), mul)
    if top <= 16:
        a = fetch(0) + k2
        b = fetch(lengths - 8)
        c = _vrotr(b, 37) * mul + a
        d = (_vrotr(a, 25) + b) * mul
        return _vlen16(c, d, mul)
    a = fetch(0) * (k1 if top <= 32 else k2)
    b = fetch(8)
    c = fetch(lengths - 8) * mul
    d = fetch(lengths - 16) * k2
    y = _vrotr(a + b, 43) + _vrotr(c, 30) + d
    z = _vlen16(y, a + _vrotr(b + k2, 18) + c, mul)
    if top <= 32:
        return z
    e = fetch(16) * mul
    f = fetch(24)
    g = (y + fetch(lengths - 32)) * mul
    h = (z + fetch(lengths - 24)) * mul
    return _vlen16(_vrotr(e + f, 43) + _vrotr(g, 30) + h, e + _vrotr(f + a, 18) + g, mul)


_CLASSES = ((1, 3), (4, 7), (8, 16), (17, 32), (33, 64))


def farmhash_fingerprint64_many(strings: list) -> np.ndarray:
    """`farmhash_fingerprint64` of every string of a list, as uint64: strings up to 64
    bytes in NumPy's wrapping uint64 arithmetic, by length class, longer ones in Python.

    Example:
        >>> int(farmhash_fingerprint64_many([b"", b"a"])[0]) == 0x9AE16A3B2F90404F
        True
    """
    lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    out = np.full(len(strings), _K2, dtype=_U)
    with np.errstate(over="ignore"):
        for low, high in _CLASSES:
            where = np.flatnonzero((lengths >= low) & (lengths <= high))
            if where.size:
                out[where] = _vector_group([strings[i] for i in where], lengths[where])
    for i in np.flatnonzero(lengths > 64).tolist():
        out[i] = farmhash_fingerprint64(strings[i])
    return out
