"""The Python reference client against a running localnet, using only docs/protocol.md:
it opens a key file, sends transfers, checks every read with a Merkle proof against a
header it verified itself, and sends one message of each module (bank, staking, slashing,
auction, verify), checking codes, events, gas and the state each one leaves.

Usage: e2e_localnet.py --node http://127.0.0.1:26657 --key-file keys/alice.json
Prints one line per check and "N passed, 0 failed"; exits non-zero on the first failure.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import nacl.signing  # noqa: E402

from gpuchain_client import address, keys, light, messages, proof, schema, tx, types  # noqa: E402
from gpuchain_client.rpc import Rpc, RpcError  # noqa: E402

GPU = 1_000_000
passed = 0


def check(what, ok, detail=""):
    global passed
    if not ok:
        print(f"FAIL {what} {detail}", flush=True)
        print(f"{passed} passed, 1 failed")
        sys.exit(1)
    passed += 1
    print(f"ok   {what}", flush=True)


class Client:
    def __init__(self, rpc, chain_id, light_client):
        self.rpc = rpc
        self.chain_id = chain_id
        self.light = light_client
        self.params = tx.TxParams.decode(rpc.abci_query("/tx/params")[0])
        self.nonces = {}

    def proven(self, key):
        """The value under a state key (None when absent), proven against a verified header."""
        value, height, ops, code, _, log = self.rpc.abci_query("/store/" + key, prove=True)
        if code != 0:
            raise RuntimeError(f"query {key}: {log}")
        op = next(op for op in ops if op["type"] == "jmt:blake3")
        if op["key"] != key.encode():
            raise RuntimeError(f"proof is for key {op['key']!r}, not {key}")
        self.rpc.wait_for_height(height + 1)
        app_hash = self.light.verify(height + 1)
        proof.verify(app_hash, key, value or None, op["data"])
        return value or None

    def proven_as(self, t, key):
        value = self.proven(key)
        return None if value is None else schema.from_bytes(t, value)

    def nonce(self, signer):
        if signer not in self.nonces:
            raw = self.rpc.abci_query("/auth/nonce/" + address.encode(signer))[0]
            self.nonces[signer] = schema.from_bytes("u64", raw)
        return self.nonces[signer]

    def submit(self, secret, msgs, memo=""):
        """Broadcasts and waits for the block; returns (tx bytes, CheckTx result, block result)."""
        signer = tx.signer(secret)
        raw = tx.build(secret, self.chain_id, self.nonce(signer), self.params, msgs, memo)
        res = self.rpc.broadcast_tx_sync(raw)
        if res["code"] != 0:
            return raw, res, None
        self.nonces[signer] += 1
        deadline = time.time() + 30
        while time.time() < deadline:
            found = self.rpc.tx(tx.tx_hash(raw))
            if found is not None:
                return raw, res, found
            time.sleep(0.2)
        raise RuntimeError(f"tx {tx.tx_hash(raw)} not in a block after 30 s")


def events(result):
    return [(e["type"], {a["key"]: a["value"] for a in e["attributes"]})
            for e in result["tx_result"]["events"]]


def event(result, kind):
    return next((attrs for t, attrs in events(result) if t == kind), None)


def fresh_key(label):
    secret = bytes(nacl.signing.SigningKey.generate())
    print(f"     {label}: {address.encode(tx.signer(secret))}")
    return secret


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--node", required=True)
    ap.add_argument("--key-file", required=True)
    args = ap.parse_args()

    rpc = Rpc(args.node)
    alice = keys.load(args.key_file)
    alice_addr = tx.signer(alice)
    check("key file opens to the address it names", True)

    chain_id = rpc.call("status")["node_info"]["network"]
    lc = light.LightClient(rpc, chain_id)
    check("light client trusts the latest header after checking its signatures", True)
    c = Client(rpc, chain_id, lc)
    stored_chain_id = c.proven_as("string", "chain/chain_id")
    check("proven chain id matches the node's network", stored_chain_id == chain_id, stored_chain_id)

    # --- bank: a transfer, its events, gas and fee, and the balances proven after it ---------
    prov, ver, bob = fresh_key("provider"), fresh_key("verifier"), fresh_key("bob")
    before = c.proven_as(types.ACCOUNT, "bank/accounts/" + alice_addr.hex())
    raw, res, found = c.submit(alice, [messages.bank_send(tx.signer(bob), 1234)], memo="from python")
    check("bank.send is accepted by CheckTx", res["code"] == 0, res)
    check("bank.send succeeds in a block", found["tx_result"]["code"] == 0, found["tx_result"])
    gas = c.params.gas(len(raw), 1)
    check("gas used is the documented formula", int(found["tx_result"]["gas_used"]) == gas,
          f'{found["tx_result"]["gas_used"]} vs {gas}')
    fee = c.params.min_fee(gas)
    kinds = [k for k, _ in events(found)]
    check("events: fee transfer, tx, message, transfer",
          kinds == ["bank.transfer", "tx", "message", "bank.transfer"], kinds)
    fee_event = events(found)[0][1]
    check("the fee event pays the fee pool",
          fee_event == {"from": address.encode(alice_addr), "to": address.encode(address.module("fee_pool")),
                        "amount": str(fee)}, fee_event)
    check("message event names the action", event(found, "message")["action"] == "bank.send")
    after = c.proven_as(types.ACCOUNT, "bank/accounts/" + alice_addr.hex())
    check("sender's proven balance fell by amount + fee, nonce rose by one",
          after["balance"] == before["balance"] - 1234 - fee and after["nonce"] == before["nonce"] + 1,
          f"{before} -> {after}")
    bob_account = c.proven_as(types.ACCOUNT, "bank/accounts/" + tx.signer(bob).hex())
    check("recipient's balance is proven", bob_account == {"balance": 1234, "nonce": 0}, bob_account)
    nobody = bytes(20)
    check("an untouched account is proven absent",
          c.proven("bank/accounts/" + nobody.hex()) is None)

    # A tampered value does not pass the proof.
    value, height, ops, *_ = rpc.abci_query("/store/bank/accounts/" + tx.signer(bob).hex(), prove=True)
    rpc.wait_for_height(height + 1)
    try:
        proof.verify(lc.verify(height + 1), "bank/accounts/" + tx.signer(bob).hex(),
                     value[:-1] + bytes([value[-1] ^ 1]), ops[0]["data"])
        check("a tampered value fails its proof", False)
    except proof.ProofError:
        check("a tampered value fails its proof", True)

    # Replays: the same bytes again, and a new transaction with a used nonce.
    try:
        again = rpc.broadcast_tx_sync(raw)
        check("an exact replay is refused", again["code"] != 0, again)
    except RpcError as e:
        check("an exact replay is refused by CometBFT's cache", "cache" in str(e), str(e))
    stale = tx.build(alice, chain_id, c.nonce(alice_addr) - 1, c.params,
                     [messages.bank_send(tx.signer(bob), 1)])
    res = rpc.broadcast_tx_sync(stale)
    check("a used nonce is refused with tx:5", (res["codespace"], res["code"]) == ("tx", 5), res)
    res = rpc.broadcast_tx_sync(b"\xde\xad\xbe\xef")
    check("malformed bytes are refused with tx:1 and one prefix",
          (res["codespace"], res["code"]) == ("tx", 1) and res["log"].count("malformed transaction") == 1,
          res)

    outputs = [{"to": tx.signer(prov), "amount": 3_000 * GPU}, {"to": tx.signer(ver), "amount": 3_000 * GPU}]
    _, res, found = c.submit(alice, [messages.msg("Bank", "MultiSend", {"outputs": outputs})])
    check("bank.multi_send funds two accounts", found and found["tx_result"]["code"] == 0, res)

    # --- staking: register a provider and read it back, proven -------------------------------
    attrs = {"class": "Cpu", "gpu_model": "", "vram_mib": 0, "gpu_count": 0, "compute_capability": 0,
             "driver_version": "none", "cuda_version": 0, "region": "python",
             "endpoint_url": "http://127.0.0.1:9"}
    _, res, found = c.submit(prov, [messages.msg("Staking", "RegisterProvider",
                                                 {"attrs": attrs, "bond": 1_000 * GPU})])
    check("staking.register_provider succeeds", found and found["tx_result"]["code"] == 0, res)
    reg = event(found, "staking.provider_registered")
    check("provider_registered event", reg and reg["operator"] == address.encode(tx.signer(prov)), reg)
    stored = c.proven_as(types.PROVIDER, "staking/providers/" + tx.signer(prov).hex())
    check("the provider is proven with its attributes and bond",
          stored and stored["attrs"] == {**attrs, "class": ("Cpu", None)} and stored["bonded"] == 1_000 * GPU,
          stored)

    # --- slashing: unjail from an account that is no validator -------------------------------
    _, res, _ = c.submit(prov, [messages.msg("Slashing", "Unjail", {})])
    check("slashing.unjail from a non-validator is refused with slashing:1 naming the signer",
          (res["codespace"], res["code"]) == ("slashing", 1)
          and address.encode(tx.signer(prov)) in res["log"], res)

    # --- auction: post an order, bid on it, read both back ----------------------------------
    blob = {"blake3": bytes([7] * 32), "size": 1000, "urls": ["http://127.0.0.1:9/blob"]}
    job = ("Inference", {"arch": ("DigitsMlp", None), "weights": blob, "tokenizer": None, "input": blob,
                         "batch_size": 64, "llama": None, "generation": None, "tolerance": None})
    order = {"job": job,
             "requirements": {"class": ("Any", None), "gpu_model": None, "min_vram_mib": 0,
                              "min_gpu_count": 0, "min_cuda_version": 0, "region": "python"},
             "replicas": 1, "max_price_per_replica": 2 * GPU, "bid_window_blocks": 30,
             "exec_deadline_blocks": 100, "on_too_few_bids": ("Refund", None)}
    _, res, found = c.submit(alice, [messages.msg("Auction", "PostOrder", order)])
    check("auction.post_order succeeds", found and found["tx_result"]["code"] == 0, res)
    posted = event(found, "auction.order_posted")
    order_id = int(posted["order_id"])
    stored = c.proven_as(types.ORDER, "auction/orders/" + types.id20(order_id))
    check("the order is proven as posted",
          stored and stored["client"] == alice_addr and stored["job"] == job and stored["state"] == ("Open", None)
          and stored["escrowed"] == int(posted["escrowed"]), stored)
    _, res, found = c.submit(prov, [messages.msg("Auction", "Bid", {"order_id": order_id, "price": GPU})])
    check("auction.bid succeeds", found and found["tx_result"]["code"] == 0, res)
    bid = c.proven_as(types.BID, f"auction/bids/{types.id20(order_id)}/{tx.signer(prov).hex()}")
    check("the bid is proven", bid and bid["price"] == GPU and bid["provider"] == tx.signer(prov), bid)
    _, res, _ = c.submit(prov, [messages.msg("Auction", "Bid", {"order_id": order_id, "price": GPU})])
    check("a second bid is refused with auction:17 (DuplicateBid)",
          (res["codespace"], res["code"]) == ("auction", 17), res)

    # --- verify: register a verifier --------------------------------------------------------
    _, res, found = c.submit(ver, [messages.msg("Verify", "RegisterVerifier", {"bond": 1_000 * GPU})])
    check("verify.register_verifier succeeds", found and found["tx_result"]["code"] == 0, res)
    v = c.proven_as(types.VERIFIER, "verify/verifiers/" + tx.signer(ver).hex())
    check("the verifier is proven with its bond", v and v["bonded"] == 1_000 * GPU, v)
    params = c.proven_as(types.VERIFY_PARAMS, "verify/params")
    check("verify params decode", params and params["min_verifier_stake"] == 1_000 * GPU, params)

    # --- supply: conserved except for what the chain burns (nothing here) ------------------
    supply = c.proven_as("u128", "bank/supply")
    check("supply is proven", supply is not None and supply > 0, supply)

    print(f"{passed} passed, 0 failed")


if __name__ == "__main__":
    main()
