"""Frames on a pipe: a 4-byte little-endian length, then that many bytes of UTF-8 JSON (one object).

The GPU worker speaks to the reference process this way over fds 3 (requests) and 4 (replies),
as kforge's own workers do. Reads and writes loop until the whole frame has moved, because a pipe
may return or accept fewer bytes than asked. A clean end of input between frames is `None`; an
end in the middle of a frame, a length past the limit or a body that is not a JSON object is a
`FrameError`, since the peer is then broken or not kforge.
"""
import json
import os
import struct

MAX_FRAME_BYTES = 64 << 20  # requests and replies are small; a bigger length is a broken peer


class FrameError(Exception):
    """The byte stream is not a sequence of well-formed frames."""


def _read_exactly(fd, count):
    """`count` bytes from `fd`, or b"" when the input ends before the first byte."""
    chunks, got = [], 0
    while got < count:
        chunk = os.read(fd, count - got)
        if not chunk:
            if got == 0:
                return b""
            raise FrameError(f"the input ended {got} bytes into a {count}-byte read")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd):
    """The next frame's JSON object from `fd`; None at a clean end of input (the peer closed)."""
    header = _read_exactly(fd, 4)
    if not header:
        return None
    (length,) = struct.unpack("<I", header)
    if length > MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {length} bytes is past the limit of {MAX_FRAME_BYTES}")
    body = _read_exactly(fd, length) if length else b""
    if len(body) != length:
        raise FrameError(f"the input ended inside a {length}-byte frame")
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise FrameError(f"a frame is not UTF-8 JSON: {e}") from None
    if not isinstance(value, dict):
        raise FrameError(f"a frame holds a JSON {type(value).__name__}, not an object")
    return value


def write_frame(fd, value):
    """Writes `value` (a JSON-serialisable dict) to `fd` as one frame."""
    body = json.dumps(value, allow_nan=False).encode("utf-8")
    if len(body) > MAX_FRAME_BYTES:
        raise FrameError(f"a reply of {len(body)} bytes is past the limit of {MAX_FRAME_BYTES}")
    data = memoryview(struct.pack("<I", len(body)) + body)
    while data:
        written = os.write(fd, data)
        data = data[written:]
