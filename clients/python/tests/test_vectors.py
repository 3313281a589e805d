"""The Python client reproduces every test vector in docs/protocol.md.

Run: python clients/python/tests/test_vectors.py (exits non-zero on any mismatch)."""

import json
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
DOC = os.path.join(HERE, "..", "..", "..", "docs", "protocol.md")

import tempfile  # noqa: E402

from gpuchain_client import address, keys, messages, proof, tx  # noqa: E402


def block(tag):
    text = open(DOC, encoding="utf-8").read()
    m = re.search(r"```json " + re.escape(tag) + r"\n(.*?)```", text, re.S)
    if not m:
        raise AssertionError(f"docs/protocol.md has no `json {tag}` block")
    return json.loads(m.group(1))


class TransactionVectors(unittest.TestCase):
    def setUp(self):
        self.v = block("test-vectors")
        self.secret = bytes.fromhex(self.v["secret_key"])
        self.body = tx.encode_body("gpuchain-1", 7, 250, 25000,
                                   [messages.bank_send(address.decode(self.v["recipient"]), 1_000_000)],
                                   "hello")

    def test_addresses(self):
        self.assertEqual(address.encode(tx.signer(self.secret)), self.v["address"])
        self.assertEqual(address.encode(b"\x22" * 20), self.v["recipient"])
        self.assertEqual(address.encode(address.module("fee_pool")), self.v["fee_pool"])
        self.assertEqual(address.decode(self.v["address"]), tx.signer(self.secret))
        with self.assertRaises(ValueError):
            address.decode(self.v["address"][:-1] + ("q" if self.v["address"][-1] != "q" else "p"))

    def test_body_sign_bytes_signature_and_tx(self):
        self.assertEqual(self.body.hex(), self.v["body_borsh"])
        self.assertEqual(tx.sign_bytes(self.body).hex(), self.v["sign_bytes"])
        signed = tx.sign(self.secret, self.body)
        self.assertEqual(signed.hex(), self.v["tx"])
        self.assertEqual(signed[-64:].hex(), self.v["signature"])

    def test_hash_and_gas(self):
        signed = bytes.fromhex(self.v["tx"])
        self.assertEqual(tx.tx_hash(signed), self.v["tx_hash"])
        params = tx.TxParams.decode(bytes.fromhex(self.v["tx_params_borsh"]))
        self.assertEqual(params.gas(len(signed), 1), self.v["gas"])
        self.assertEqual(params.min_fee(self.v["gas"]), self.v["min_fee"])


class KeyFileVector(unittest.TestCase):
    def test_sealed_key_file_opens_to_its_seed(self):
        v = block("key-file-vector")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "vector.json")
            with open(path, "w") as f:
                json.dump(v["file"], f)
            self.assertEqual(keys.load(path, v["passphrase"]).hex(), v["seed"])
            with self.assertRaises(keys.KeyFileError):
                keys.load(path, "wrong")


class WorkedLayouts(unittest.TestCase):
    def test_messages_encode_as_the_document_shows(self):
        self.assertEqual(messages.msg("Auction", "Bid", {"order_id": 5, "price": 1000}).hex(),
                         "0302" + "0500000000000000" + "e8030000000000000000000000000000")
        h = bytes(range(32))
        self.assertEqual(messages.msg("Verify", "SubmitVerdict",
                                      {"lease_id": 7, "output_hash": h, "verdict": "Faulty"}).hex(),
                         "0403" + "0700000000000000" + h.hex() + "01")
        self.assertEqual(messages.msg("Staking", "DeregisterProvider", {}).hex(), "0108")


class ProofVectors(unittest.TestCase):
    def setUp(self):
        self.v = block("proof-vectors")
        self.root = bytes.fromhex(self.v["root"])

    def test_key_hashes(self):
        for name in ("membership", "absence_beside_a_leaf", "absence_in_an_empty_subtree"):
            p = self.v[name]
            self.assertEqual(proof.key_hash(p["key"]).hex(), p["key_hash"])

    def test_membership(self):
        p = self.v["membership"]
        proof.verify(self.root, p["key"], bytes.fromhex(p["value"]), bytes.fromhex(p["proof"]))
        with self.assertRaises(proof.ProofError):
            proof.verify(self.root, p["key"], bytes.fromhex(p["value"]) + b"\x00", bytes.fromhex(p["proof"]))
        with self.assertRaises(proof.ProofError):
            proof.verify(self.root, p["key"], None, bytes.fromhex(p["proof"]))

    def test_absence(self):
        for name in ("absence_beside_a_leaf", "absence_in_an_empty_subtree"):
            p = self.v[name]
            self.assertIsNone(p["value"])
            proof.verify(self.root, p["key"], None, bytes.fromhex(p["proof"]))
            with self.assertRaises(proof.ProofError):
                proof.verify(self.root, p["key"], b"\x01", bytes.fromhex(p["proof"]))
        # An absence proof does not prove another key absent, nor a present key absent.
        present = self.v["membership"]
        with self.assertRaises(proof.ProofError):
            proof.verify(self.root, present["key"], None, bytes.fromhex(self.v["absence_beside_a_leaf"]["proof"]))

    def test_tampered_proofs_fail(self):
        p = self.v["membership"]
        raw = bytearray(bytes.fromhex(p["proof"]))
        for i in range(0, len(raw), 7):
            bad = bytearray(raw)
            bad[i] ^= 0x01
            with self.assertRaises(ValueError, msg=f"byte {i}"):
                proof.verify(self.root, p["key"], bytes.fromhex(p["value"]), bytes(bad))
        with self.assertRaises(ValueError):
            proof.verify(self.root, p["key"], bytes.fromhex(p["value"]), bytes(raw) + b"\x00")

    def test_tree_root_recomputed_from_the_values(self):
        # The membership proof of every key in the tree leads to the same root: rebuild the
        # leaf for the proven key from the tree's value.
        values = {e["key"]: bytes.fromhex(e["value"]) for e in self.v["tree"]}
        p = self.v["membership"]
        self.assertEqual(values[p["key"]].hex(), p["value"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
