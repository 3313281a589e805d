"""CometBFT JSON-RPC over HTTP, with the standard library only."""

import base64
import json
import time
import urllib.parse
import urllib.request


class RpcError(RuntimeError):
    """A JSON-RPC error answer or an unreachable node."""


class Rpc:
    def __init__(self, url, timeout_s=10):
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._id = 0

    def call(self, method, **params):
        self._id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}).encode()
        req = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                answer = json.load(resp)
        except urllib.error.HTTPError as e:
            answer = json.load(e)
        if "error" in answer:
            err = answer["error"]
            raise RpcError(f"{method}: {err.get('message')} {err.get('data', '')}".strip())
        return answer["result"]

    def height(self):
        return int(self.call("status")["sync_info"]["latest_block_height"])

    def wait_for_height(self, height, timeout_s=30):
        deadline = time.time() + timeout_s
        while self.height() < height:
            if time.time() > deadline:
                raise RpcError(f"height {height} not reached in {timeout_s} s")
            time.sleep(0.1)

    def abci_query(self, path, prove=False, height=0):
        """(value bytes, height, proof ops, code, codespace, log) of an ABCI query."""
        params = {"path": path, "data": "", "prove": prove}
        if height:
            params["height"] = str(height)
        r = self.call("abci_query", **params)["response"]
        value = base64.b64decode(r.get("value") or "")
        ops = (r.get("proofOps") or r.get("proof_ops") or {}).get("ops") or []
        ops = [{"type": op["type"], "key": base64.b64decode(op.get("key") or ""),
                "data": base64.b64decode(op.get("data") or "")} for op in ops]
        return value, int(r.get("height") or 0), ops, int(r.get("code") or 0), r.get("codespace", ""), r.get("log", "")

    def broadcast_tx_sync(self, tx_bytes):
        # JSON-RPC bodies carry byte parameters as base64 (URI queries take 0x-hex).
        return self.call("broadcast_tx_sync", tx=base64.b64encode(tx_bytes).decode())

    def tx(self, hash_hex):
        """The block result of a transaction, or None while it is not in a block."""
        try:
            return self.call("tx", hash=base64.b64encode(bytes.fromhex(hash_hex)).decode())
        except RpcError as e:
            if "not found" in str(e):
                return None
            raise
