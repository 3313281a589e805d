"""Header verification, as docs/protocol.md "Verifying a header" states: CometBFT's header
hash, validator-set hash and commit signatures, with the light client's trust rules."""

import calendar
import hashlib
import re
import time

import nacl.exceptions
import nacl.signing

TRUSTING_PERIOD_S = 14 * 24 * 3600
CLOCK_DRIFT_S = 10


class HeaderError(ValueError):
    """A header that is not signed as the trust rules require."""


# --- protobuf, only what the header and vote encodings use ---------------------------------

def varint(n):
    if n < 0:
        n += 1 << 64  # int64 negatives are ten-byte two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, v):
    return b"" if v == 0 else varint(num << 3) + varint(v)


def field_sfixed64(num, v):
    return b"" if v == 0 else varint(num << 3 | 1) + (v & (1 << 64) - 1).to_bytes(8, "little")


def field_bytes(num, b):
    return b"" if len(b) == 0 else varint(num << 3 | 2) + varint(len(b)) + b


def field_message(num, encoded):
    """An embedded message that is always written, even empty (gogoproto non-nullable)."""
    return varint(num << 3 | 2) + varint(len(encoded)) + encoded


# --- the encodings --------------------------------------------------------------------------

def parse_time(text):
    """(seconds, nanos) of an RFC 3339 time as CometBFT's RPC writes it."""
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?Z", text)
    if not m:
        raise HeaderError(f"unexpected time format {text!r}")
    y, mo, d, hh, mm, ss = (int(x) for x in m.groups()[:6])
    nanos = int((m.group(7) or "0").ljust(9, "0"))
    return calendar.timegm((y, mo, d, hh, mm, ss)), nanos


def timestamp(text):
    s, n = parse_time(text)
    return field_varint(1, s) + field_varint(2, n)


def block_id(bid):
    psh = bid.get("parts") or bid.get("part_set_header") or {}
    part_set = field_varint(1, int(psh.get("total", 0))) + field_bytes(2, bytes.fromhex(psh.get("hash", "")))
    return field_bytes(1, bytes.fromhex(bid.get("hash", ""))) + field_message(2, part_set)


def merkle_root(leaves):
    """RFC 6962 Merkle root with SHA-256 (leaf prefix 0x00, inner prefix 0x01), split at the
    largest power of two below the count."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + merkle_root(leaves[:k]) + merkle_root(leaves[k:])).digest()


def header_hash(hd):
    """The hash of a header, as `/commit`'s `signed_header.header` gives it."""
    hx = lambda k: bytes.fromhex(hd[k])  # noqa: E731
    version = field_varint(1, int(hd["version"]["block"])) + field_varint(2, int(hd["version"].get("app", 0)))
    leaves = [
        version,
        field_bytes(1, hd["chain_id"].encode()),
        field_varint(1, int(hd["height"])),
        timestamp(hd["time"]),
        block_id(hd["last_block_id"]),
        field_bytes(1, hx("last_commit_hash")),
        field_bytes(1, hx("data_hash")),
        field_bytes(1, hx("validators_hash")),
        field_bytes(1, hx("next_validators_hash")),
        field_bytes(1, hx("consensus_hash")),
        field_bytes(1, hx("app_hash")),
        field_bytes(1, hx("last_results_hash")),
        field_bytes(1, hx("evidence_hash")),
        field_bytes(1, hx("proposer_address")),
    ]
    return merkle_root(leaves)


def validator_pubkey(v):
    pk = v["pub_key"]
    if pk.get("type") != "tendermint/PubKeyEd25519":
        raise HeaderError(f"unsupported validator key type {pk.get('type')}")
    import base64
    return base64.b64decode(pk["value"])


def validators_hash(validators):
    """The hash of a validator set in the order `/validators` lists it."""
    leaves = []
    for v in validators:
        pubkey = field_bytes(1, validator_pubkey(v))
        leaves.append(field_message(1, pubkey) + field_varint(2, int(v["voting_power"])))
    return merkle_root(leaves)


def vote_sign_bytes(chain_id, height, round_, bid, ts):
    """What a validator signs for a precommit: a length-prefixed CanonicalVote."""
    body = (
        field_varint(1, 2)  # SIGNED_MSG_TYPE_PRECOMMIT
        + field_sfixed64(2, height)
        + field_sfixed64(3, round_)
        + field_message(4, block_id(bid))
        + field_message(5, timestamp(ts))
        + field_bytes(6, chain_id.encode())
    )
    return varint(len(body)) + body


def signed_power(signed_header, validators, chain_id):
    """(power of `validators` whose valid precommit for this header is in its commit, total
    power of `validators`). A signature that does not verify is an error, not a skip."""
    hd, commit = signed_header["header"], signed_header["commit"]
    by_address = {v["address"].upper(): v for v in validators}
    total = sum(int(v["voting_power"]) for v in validators)
    power, seen = 0, set()
    for sig in commit["signatures"]:
        if sig["block_id_flag"] != 2:  # BLOCK_ID_FLAG_COMMIT; absent and nil votes count nothing
            continue
        addr = sig["validator_address"].upper()
        v = by_address.get(addr)
        if v is None or addr in seen:
            continue
        import base64
        msg = vote_sign_bytes(chain_id, int(commit["height"]), int(commit["round"]),
                              commit["block_id"], sig["timestamp"])
        try:
            nacl.signing.VerifyKey(validator_pubkey(v)).verify(msg, base64.b64decode(sig["signature"]))
        except nacl.exceptions.BadSignatureError:
            raise HeaderError(f"validator {addr} has a bad signature on height {commit['height']}")
        seen.add(addr)
        power += int(v["voting_power"])
    return power, total


def check_header(signed_header, own_validators, chain_id, now=None):
    """A header is well formed and signed by more than 2/3 of its own validator set."""
    hd, commit = signed_header["header"], signed_header["commit"]
    if hd["chain_id"] != chain_id:
        raise HeaderError(f"header of chain {hd['chain_id']}, not {chain_id}")
    hh = header_hash(hd)
    if hh != bytes.fromhex(commit["block_id"]["hash"]) or hd["height"] != commit["height"]:
        raise HeaderError("the commit is for another block than the header")
    if validators_hash(own_validators) != bytes.fromhex(hd["validators_hash"]):
        raise HeaderError("the validator set does not hash to the header's validators_hash")
    now = time.time() if now is None else now
    t = parse_time(hd["time"])[0]
    if t > now + CLOCK_DRIFT_S:
        raise HeaderError("header time is in the future")
    power, total = signed_power(signed_header, own_validators, chain_id)
    if 3 * power <= 2 * total:
        raise HeaderError(f"only {power} of {total} voting power signed height {hd['height']}")
    return hh


class LightClient:
    """Keeps one trusted header and its validator set; moves trust forward header by header
    (adjacent) or by skipping when more than 1/3 of the trusted power signed the new one."""

    def __init__(self, rpc, chain_id, trusted_height=None, trusted_hash=None):
        self.rpc = rpc
        self.chain_id = chain_id
        height = trusted_height or int(rpc.call("status")["sync_info"]["latest_block_height"])
        sh, vals = self._fetch(height)
        hh = check_header(sh, vals, chain_id)
        if trusted_hash is not None and hh != bytes.fromhex(trusted_hash):
            raise HeaderError(f"header {height} has hash {hh.hex()}, not the pinned {trusted_hash}")
        self.trusted = (sh, vals)

    def _fetch(self, height):
        sh = self.rpc.call("commit", height=str(height))["signed_header"]
        vals, page = [], 1
        while True:
            r = self.rpc.call("validators", height=str(height), page=str(page), per_page="100")
            vals += r["validators"]
            if len(vals) >= int(r["total"]):
                return sh, vals
            page += 1

    def verify(self, height):
        """The app hash in header `height`, once that header is verified against trust."""
        trusted_sh, trusted_vals = self.trusted
        trusted_height = int(trusted_sh["header"]["height"])
        if time.time() - parse_time(trusted_sh["header"]["time"])[0] > TRUSTING_PERIOD_S:
            raise HeaderError("the trusted header is older than the trusting period; pin a new one")
        sh, vals = self._fetch(height)
        if height == trusted_height:
            if sh["header"] != trusted_sh["header"]:
                raise HeaderError("the node's header differs from the trusted one")
        else:
            check_header(sh, vals, self.chain_id)
            if height == trusted_height + 1:
                if sh["header"]["validators_hash"] != trusted_sh["header"]["next_validators_hash"]:
                    raise HeaderError("the validator set changed without the trusted header saying so")
            elif height > trusted_height:
                power, total = signed_power(sh, trusted_vals, self.chain_id)
                if 3 * power <= total:
                    raise HeaderError("less than 1/3 of the trusted validators signed; bisect")
            else:
                raise HeaderError("headers older than the trusted one are not verified")
            if height > trusted_height:
                self.trusted = (sh, vals)
        return bytes.fromhex(sh["header"]["app_hash"])
