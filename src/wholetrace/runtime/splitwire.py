"""The split server's message heads, encoded without ``marshal``, whose ``dumps``/``loads`` are audit events a program's hook would see."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:   # pragma: no cover
    from typing import Any

_LEN = 8   # bytes of a length or a count


def dumps(x: Any) -> bytes:
    """``x`` (None, bool, int, str, bytes-like, tuples and lists of these) as bytes (ValueError: any
    other type)."""
    out = bytearray()
    _put(out, x)
    return bytes(out)


def _put(out: bytearray, x: Any) -> None:
    t = type(x)
    if x is None:
        out += b"N"
    elif t is bool:
        out += b"T" if x else b"F"
    elif t is int:
        n = (x.bit_length() + 8) // 8                  # room for the sign bit
        if n > 255:
            raise ValueError("an int too wide for a message head")
        out += b"i" + n.to_bytes(1, "little") + x.to_bytes(n, "little", signed=True)
    elif t is str:
        data = x.encode("utf-8", "surrogatepass")
        out += b"s" + len(data).to_bytes(_LEN, "little") + data
    elif t is bytes or t is bytearray or t is memoryview:
        data = memoryview(x).cast("B")
        out += b"b" + data.nbytes.to_bytes(_LEN, "little")
        out += data
    elif t is tuple or t is list:
        out += (b"t" if t is tuple else b"l") + len(x).to_bytes(_LEN, "little")
        for item in x:
            _put(out, item)
    else:
        raise ValueError(f"no message item: {t.__name__}")


def loads(data: bytes | bytearray) -> Any:
    """The value :func:`dumps` encoded as ``data`` (ValueError: not such an encoding)."""
    try:
        x, at = _get(memoryview(data), 0)
    except IndexError:
        raise ValueError("a message head cut short") from None
    if at != len(data):
        raise ValueError("bytes after a message head")
    return x


def _get(m: memoryview, at: int) -> tuple[Any, int]:
    kind = m[at:at + 1].tobytes()
    at += 1
    if kind == b"N":
        return None, at
    if kind in (b"T", b"F"):
        return kind == b"T", at
    if kind == b"i":
        n = m[at]
        return int.from_bytes(m[at + 1:at + 1 + n], "little", signed=True), at + 1 + n
    if kind not in (b"s", b"b", b"t", b"l"):
        raise ValueError("no message head")
    n = int.from_bytes(m[at:at + _LEN], "little")
    at += _LEN
    if kind == b"s":
        return str(m[at:at + n], "utf-8", "surrogatepass"), at + n
    if kind == b"b":
        return m[at:at + n].tobytes(), at + n
    items = []
    for _ in range(n):
        x, at = _get(m, at)
        items.append(x)
    return (tuple(items) if kind == b"t" else items), at
