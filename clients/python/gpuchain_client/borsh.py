"""Borsh encoding and decoding, as docs/protocol.md "Encoding" states it."""

import struct


class Writer:
    """Appends borsh values to a byte buffer."""

    def __init__(self):
        self.buf = bytearray()

    def u8(self, v):
        self.buf += struct.pack("<B", v)
        return self

    def u32(self, v):
        self.buf += struct.pack("<I", v)
        return self

    def u64(self, v):
        self.buf += struct.pack("<Q", v)
        return self

    def i64(self, v):
        self.buf += struct.pack("<q", v)
        return self

    def u128(self, v):
        if not 0 <= v < 1 << 128:
            raise ValueError(f"{v} does not fit in u128")
        self.buf += v.to_bytes(16, "little")
        return self

    def bool(self, v):
        return self.u8(1 if v else 0)

    def fixed(self, b, n):
        b = bytes(b)
        if len(b) != n:
            raise ValueError(f"expected {n} bytes, got {len(b)}")
        self.buf += b
        return self

    def bytes(self, b):
        self.u32(len(b))
        self.buf += bytes(b)
        return self

    def string(self, s):
        return self.bytes(s.encode("utf-8"))

    def option(self, v, write):
        if v is None:
            return self.u8(0)
        self.u8(1)
        write(self, v)
        return self

    def vec(self, items, write):
        self.u32(len(items))
        for item in items:
            write(self, item)
        return self

    def done(self):
        return bytes(self.buf)


class DecodeError(ValueError):
    """Bytes that are not the borsh value expected."""


class Reader:
    """Reads borsh values from bytes; `finish` insists every byte was consumed."""

    def __init__(self, data):
        self.data = bytes(data)
        self.pos = 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise DecodeError(f"need {n} bytes at offset {self.pos}, have {len(self.data) - self.pos}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u8(self):
        return self.take(1)[0]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def i64(self):
        return struct.unpack("<q", self.take(8))[0]

    def u128(self):
        return int.from_bytes(self.take(16), "little")

    def bool(self):
        b = self.u8()
        if b > 1:
            raise DecodeError(f"bool byte {b}")
        return b == 1

    def fixed(self, n):
        return self.take(n)

    def bytes(self):
        return self.take(self.u32())

    def string(self):
        return self.bytes().decode("utf-8")

    def option(self, read):
        tag = self.u8()
        if tag == 0:
            return None
        if tag == 1:
            return read(self)
        raise DecodeError(f"option tag {tag}")

    def vec(self, read):
        return [read(self) for _ in range(self.u32())]

    def finish(self):
        if self.pos != len(self.data):
            raise DecodeError(f"{len(self.data) - self.pos} trailing bytes")
