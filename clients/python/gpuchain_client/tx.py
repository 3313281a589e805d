"""Transactions, as docs/protocol.md "Transactions" states: a borsh TxBody signed with
ed25519 over a domain-separated encoding; gas and fee computed exactly before signing."""

import hashlib

import nacl.signing

from . import address
from .borsh import Reader, Writer

SIGN_DOMAIN = b"gpuchain/tx/v1\x00"


class TxParams:
    """`/tx/params`: eight integers in this order."""

    FIELDS = [("max_tx_bytes", "u32"), ("max_msgs_per_tx", "u32"), ("max_memo_bytes", "u32"),
              ("max_block_gas", "u64"), ("min_gas_price_ppm", "u64"), ("gas_per_byte", "u64"),
              ("gas_per_signature", "u64"), ("gas_per_msg", "u64")]

    def __init__(self, **values):
        for name, _ in self.FIELDS:
            setattr(self, name, values[name])

    @classmethod
    def decode(cls, data):
        r = Reader(data)
        values = {name: getattr(r, kind)() for name, kind in cls.FIELDS}
        r.finish()
        return cls(**values)

    def gas(self, tx_len, msg_count):
        return tx_len * self.gas_per_byte + self.gas_per_signature + msg_count * self.gas_per_msg

    def min_fee(self, gas_limit):
        return -(-gas_limit * self.min_gas_price_ppm // 1_000_000)


def encode_body(chain_id, nonce, fee, gas_limit, msgs, memo):
    """`msgs` are already-encoded `Msg` values (see messages.py)."""
    w = Writer().string(chain_id).u64(nonce).u128(fee).u64(gas_limit).u32(len(msgs))
    for m in msgs:
        w.buf += m
    return w.string(memo).done()


def sign_bytes(body):
    return SIGN_DOMAIN + body


def encode_tx(body, public_key, signature):
    return body + Writer().fixed(public_key, 32).fixed(signature, 64).done()


def sign(secret_key, body):
    """(tx bytes) of `body` signed by the ed25519 key whose 32-byte seed is `secret_key`."""
    key = nacl.signing.SigningKey(bytes(secret_key))
    signature = key.sign(sign_bytes(body)).signature
    return encode_tx(body, bytes(key.verify_key), signature)


def build(secret_key, chain_id, nonce, params, msgs, memo=""):
    """A signed transaction whose gas limit is exactly its gas and whose fee is the minimum.
    borsh integers are fixed-width, so the size with zero gas and fee is the final size."""
    probe = sign(secret_key, encode_body(chain_id, nonce, 0, 0, msgs, memo))
    gas_limit = params.gas(len(probe), len(msgs))
    fee = params.min_fee(gas_limit)
    return sign(secret_key, encode_body(chain_id, nonce, fee, gas_limit, msgs, memo))


def tx_hash(tx_bytes):
    """How CometBFT names a transaction: upper-case hex SHA-256 of its bytes."""
    return hashlib.sha256(tx_bytes).hexdigest().upper()


def signer(secret_key):
    return address.from_public_key(bytes(nacl.signing.SigningKey(bytes(secret_key)).verify_key))
