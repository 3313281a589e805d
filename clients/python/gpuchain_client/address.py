"""Addresses: the first 20 bytes of blake3(public key), shown as bech32 (BIP-173) with the
prefix `gpu`, as docs/protocol.md "Addresses" states."""

import blake3

HRP = "gpu"
_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_GEN = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


def _polymod(values):
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            if (top >> i) & 1:
                chk ^= _GEN[i]
    return chk


def _hrp_expand(hrp):
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def _regroup(data, frm, to, pad):
    acc, bits, out = 0, 0, []
    for b in data:
        acc = (acc << frm) | b
        bits += frm
        while bits >= to:
            bits -= to
            out.append((acc >> bits) & ((1 << to) - 1))
    if pad and bits:
        out.append((acc << (to - bits)) & ((1 << to) - 1))
    elif not pad and (bits >= frm or (acc << (to - bits)) & ((1 << to) - 1)):
        raise ValueError("invalid padding")
    return out


def encode(raw20):
    """bech32 text of a 20-byte address."""
    if len(raw20) != 20:
        raise ValueError("an address is 20 bytes")
    data = _regroup(raw20, 8, 5, True)
    polymod = _polymod(_hrp_expand(HRP) + data + [0] * 6) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return HRP + "1" + "".join(_CHARSET[d] for d in data + checksum)


def decode(text):
    """The 20 bytes of a `gpu1…` address; raises ValueError on anything else."""
    if text.lower() != text and text.upper() != text:
        raise ValueError("mixed case")
    text = text.lower()
    hrp, sep, rest = text.rpartition("1")
    if hrp != HRP or not sep or len(rest) < 6:
        raise ValueError(f"not a {HRP}1… address: {text}")
    data = [_CHARSET.index(c) for c in rest]
    if _polymod(_hrp_expand(hrp) + data) != 1:
        raise ValueError("bad checksum")
    raw = bytes(_regroup(data[:-6], 5, 8, False))
    if len(raw) != 20:
        raise ValueError("an address is 20 bytes")
    return raw


def from_public_key(public_key):
    """The 20 raw bytes of the account whose ed25519 public key is `public_key`."""
    return blake3.blake3(bytes(public_key)).digest()[:20]


def module(name):
    """The 20 raw bytes of a module account (`fee_pool`, `escrow`, …)."""
    return blake3.blake3(b"gpuchain/module/" + name.encode()).digest()[:20]
