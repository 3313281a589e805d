"""Borsh types described as data, so that each message and stored object is written down
once, as docs/protocol.md spells it, and both encodes and decodes.

A type is one of:
  "u8" "u32" "u64" "u128" "bool" "string" "unit"     scalars ("unit" is zero bytes)
  ("array", n)                                          n raw bytes
  ("option", T)  ("vec", T)  ("tuple", T1, T2, …)
  ("struct", [(field, T), …])                          a dict in Python
  ("enum", [(variant, T or None), …])                   (variant, value) in Python; value
                                                        None for a variant without fields
"""

from .borsh import DecodeError, Reader, Writer

_SCALARS = {"u8", "u32", "u64", "u128", "bool", "string"}


def encode(t, v, w=None):
    w = Writer() if w is None else w
    if isinstance(t, str):
        if t == "unit":
            return w
        if t not in _SCALARS:
            raise ValueError(f"unknown type {t}")
        getattr(w, t)(v)
        return w
    kind = t[0]
    if kind == "array":
        w.fixed(v, t[1])
    elif kind == "option":
        w.option(v, lambda w, x: encode(t[1], x, w))
    elif kind == "vec":
        w.vec(v, lambda w, x: encode(t[1], x, w))
    elif kind == "tuple":
        for sub, x in zip(t[1:], v, strict=True):
            encode(sub, x, w)
    elif kind == "struct":
        missing = {name for name, _ in t[1]} ^ set(v)
        if missing:
            raise ValueError(f"fields differ from the type: {sorted(missing)}")
        for name, sub in t[1]:
            encode(sub, v[name], w)
    elif kind == "enum":
        name, value = v if isinstance(v, tuple) else (v, None)
        for index, (variant, sub) in enumerate(t[1]):
            if variant == name:
                w.u8(index)
                if sub is not None:
                    encode(sub, value, w)
                return w
        raise ValueError(f"no variant {name}")
    else:
        raise ValueError(f"unknown type {t}")
    return w


def decode_from(t, r):
    if isinstance(t, str):
        return None if t == "unit" else getattr(r, t)()
    kind = t[0]
    if kind == "array":
        return r.fixed(t[1])
    if kind == "option":
        return r.option(lambda r: decode_from(t[1], r))
    if kind == "vec":
        return r.vec(lambda r: decode_from(t[1], r))
    if kind == "tuple":
        return tuple(decode_from(sub, r) for sub in t[1:])
    if kind == "struct":
        return {name: decode_from(sub, r) for name, sub in t[1]}
    if kind == "enum":
        index = r.u8()
        if index >= len(t[1]):
            raise DecodeError(f"variant {index} of a {len(t[1])}-variant enum")
        variant, sub = t[1][index]
        return (variant, None if sub is None else decode_from(sub, r))
    raise ValueError(f"unknown type {t}")


def to_bytes(t, v):
    return encode(t, v).done()


def from_bytes(t, data):
    r = Reader(data)
    v = decode_from(t, r)
    r.finish()
    return v
