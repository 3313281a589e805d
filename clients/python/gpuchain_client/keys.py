"""Key files as `gpuchaind keys add` writes them (docs/protocol.md "Key files")."""

import json
import os

import nacl.bindings
import nacl.exceptions
import nacl.signing

from . import address

ARGON2_OPSLIMIT = 2            # argon2id v1.3, t = 2
ARGON2_MEMLIMIT = 19456 * 1024  # m = 19,456 KiB, p = 1
SEALED = "argon2id-chacha20poly1305"


class KeyFileError(ValueError):
    """A key file that cannot be opened, or whose fields disagree."""


def load(path, passphrase=None):
    """The 32-byte ed25519 secret of a key file, checked against its public key and address."""
    with open(path, encoding="utf-8") as f:
        kf = json.load(f)
    if kf["encryption"] == "none":
        secret = bytes.fromhex(kf["secret"])
    elif kf["encryption"] == SEALED:
        if passphrase is None:
            passphrase = os.environ.get("GPUCHAIN_PASSPHRASE")
        if passphrase is None:
            raise KeyFileError(f"{path} is sealed: give a passphrase (GPUCHAIN_PASSPHRASE)")
        key = nacl.bindings.crypto_pwhash_alg(
            32, passphrase.encode(), bytes.fromhex(kf["salt"]), ARGON2_OPSLIMIT, ARGON2_MEMLIMIT,
            nacl.bindings.crypto_pwhash_ALG_ARGON2ID13)
        try:
            secret = nacl.bindings.crypto_aead_chacha20poly1305_ietf_decrypt(
                bytes.fromhex(kf["secret"]), None, bytes.fromhex(kf["nonce"]), key)
        except nacl.exceptions.CryptoError:
            raise KeyFileError(f"wrong passphrase for {path}")
    else:
        raise KeyFileError(f"unknown encryption {kf['encryption']!r} in {path}")
    public = bytes(nacl.signing.SigningKey(secret).verify_key)
    if public.hex() != kf["public_key"] or address.encode(address.from_public_key(public)) != kf["address"]:
        raise KeyFileError(f"{path}: the secret does not match its public key and address")
    return secret
