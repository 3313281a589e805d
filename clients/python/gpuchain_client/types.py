"""Every message and stored object of docs/protocol.md ("Messages", "Stored objects",
"Parameter layouts"), as schema types (see schema.py)."""

ADDRESS = ("array", 20)
HASH = ("array", 32)


def struct(*fields):
    return ("struct", list(fields))


def enum(*variants):
    return ("enum", [v if isinstance(v, tuple) else (v, None) for v in variants])


# --- messages -------------------------------------------------------------------------------

BANK_MSG = enum(
    ("Send", struct(("to", ADDRESS), ("amount", "u128"))),
    ("MultiSend", struct(("outputs", ("vec", struct(("to", ADDRESS), ("amount", "u128")))))),
)

PROVIDER_ATTRS = struct(
    ("class", enum("Gpu", "Cpu")),
    ("gpu_model", "string"), ("vram_mib", "u64"), ("gpu_count", "u32"),
    ("compute_capability", "u32"), ("driver_version", "string"), ("cuda_version", "u32"),
    ("region", "string"), ("endpoint_url", "string"),
)

STAKING_MSG = enum(
    ("CreateValidator", struct(("consensus_pubkey", HASH), ("moniker", "string"), ("self_bond", "u128"))),
    ("DelegateSelf", struct(("amount", "u128"))),
    ("UnbondValidator", struct(("amount", "u128"))),
    ("EditValidator", struct(("moniker", "string"))),
    ("RegisterProvider", struct(("attrs", PROVIDER_ATTRS), ("bond", "u128"))),
    ("UpdateProvider", struct(("attrs", PROVIDER_ATTRS))),
    ("BondProvider", struct(("amount", "u128"))),
    ("UnbondProvider", struct(("amount", "u128"))),
    ("DeregisterProvider", struct()),
)

SLASHING_MSG = enum(("Unjail", struct()))

BLOB_REF = struct(("blake3", HASH), ("size", "u64"), ("urls", ("vec", "string")))
TOLERANCE = struct(("rel_l2_ppm_max", "u32"), ("agreement_ppm_min", "u32"), ("cosine_ppm_min", "u32"))
MODEL_ARCH = enum("DigitsMlp", "DigitsCnn", "MiniLmEmbedder", "LlamaDecoder", "LlamaGguf",
                  "MiniLmClassifier")
LLAMA_SHAPE = struct(*[(n, "u32") for n in (
    "vocab_size", "hidden_size", "intermediate_size", "num_layers", "num_heads",
    "num_kv_heads", "max_seq_len", "rope_theta", "rms_norm_eps_ppb")])
SAMPLING = enum("Greedy", ("Seeded", struct(("seed", "u64"), ("temperature_milli", "u32"), ("top_k", "u32"),
                                            ("top_p_ppm", "u32"))))
GENERATION = struct(("max_new_tokens", "u32"), ("sampling", SAMPLING), ("stop_tokens", ("vec", "u32")))
INFERENCE_SPEC = struct(
    ("arch", MODEL_ARCH), ("weights", BLOB_REF), ("tokenizer", ("option", BLOB_REF)),
    ("input", BLOB_REF), ("batch_size", "u32"), ("llama", ("option", LLAMA_SHAPE)),
    ("generation", ("option", GENERATION)), ("tolerance", ("option", TOLERANCE)),
)
TRAINING_SPEC = struct(
    ("arch", MODEL_ARCH), ("init", enum(("Seed", "u64"), ("Blob", BLOB_REF))),
    ("dataset", BLOB_REF), ("workers", "u32"), ("rounds", "u32"), ("local_steps", "u32"),
    ("batch_size", "u32"), ("lr_ppm", "u32"), ("momentum_ppm", "u32"), ("topk_ppm", "u32"),
    ("value_bits", enum("B32", "B16", "B8")), ("error_feedback", "bool"),
    ("momentum_correction", "bool"), ("warmup_rounds", "u32"), ("seed", "u64"),
    ("tolerance", ("option", TOLERANCE)), ("coordinator_url", ("option", "string")),
)
JOB_SPEC = enum(("Inference", INFERENCE_SPEC), ("Training", TRAINING_SPEC))
REQUIREMENTS = struct(
    ("class", enum("Any", "Gpu", "Cpu")), ("gpu_model", ("option", "string")),
    ("min_vram_mib", "u64"), ("min_gpu_count", "u32"), ("min_cuda_version", "u32"),
    ("region", ("option", "string")),
)
TOO_FEW_BIDS = enum("Refund", "ReopenOnce")

AUCTION_MSG = enum(
    ("PostOrder", struct(
        ("job", JOB_SPEC), ("requirements", REQUIREMENTS), ("replicas", "u32"),
        ("max_price_per_replica", "u128"), ("bid_window_blocks", "u64"),
        ("exec_deadline_blocks", "u64"), ("on_too_few_bids", TOO_FEW_BIDS))),
    ("CancelOrder", struct(("order_id", "u64"))),
    ("Bid", struct(("order_id", "u64"), ("price", "u128"))),
    ("CommitResult", struct(("lease_id", "u64"), ("commitment", HASH))),
    ("RevealResult", struct(("lease_id", "u64"), ("result_hash", HASH), ("salt", HASH))),
    ("WithdrawRewards", struct()),
    ("ReleaseLease", struct(("lease_id", "u64"))),
    ("CompareReplicas", struct(("lease_id", "u64"), ("consistent", "bool"))),
    ("ConfirmReceipt", struct(("lease_id", "u64"))),
)

VERDICT_KIND = enum("Honest", "Faulty")
VERIFY_MSG = enum(
    ("RegisterVerifier", struct(("bond", "u128"))),
    ("BondVerifier", struct(("amount", "u128"))),
    ("UnbondVerifier", struct(("amount", "u128"))),
    ("SubmitVerdict", struct(("lease_id", "u64"), ("output_hash", HASH), ("verdict", VERDICT_KIND))),
    ("Appeal", struct(("lease_id", "u64"))),
    ("CommitChallenge", struct(("commitment", HASH))),
    ("RevealChallenge", struct(("challenge_id", "u64"), ("order_id", "u64"),
                                ("expected_output_hash", HASH), ("salt", HASH))),
)

UPGRADE_MSG = enum(
    ("Signal", struct(("name", "string"), ("height", "u64"))),
    ("Withdraw", struct()),
)

MSG = enum(("Bank", BANK_MSG), ("Staking", STAKING_MSG), ("Slashing", SLASHING_MSG),
           ("Auction", AUCTION_MSG), ("Verify", VERIFY_MSG), ("Upgrade", UPGRADE_MSG))

# --- stored objects -------------------------------------------------------------------------

ACCOUNT = struct(("balance", "u128"), ("nonce", "u64"))
PROVIDER = struct(("operator", ADDRESS), ("attrs", PROVIDER_ATTRS), ("bonded", "u128"),
                  ("jailed_until", "u64"), ("registered_height", "u64"))
ORDER = struct(
    ("id", "u64"), ("client", ADDRESS), ("job", JOB_SPEC), ("requirements", REQUIREMENTS),
    ("replicas", "u32"), ("max_price_per_replica", "u128"), ("exec_deadline_blocks", "u64"),
    ("on_too_few_bids", TOO_FEW_BIDS), ("created_height", "u64"), ("bid_end_height", "u64"),
    ("reopened", "bool"), ("verification_fee", "u128"), ("clearing_price", ("option", "u128")),
    ("escrowed", "u128"), ("state", enum("Open", "Cleared", "Settled", "Cancelled", "Expired")),
    ("dispute_reserve", "u128"),
)
BID = struct(("order_id", "u64"), ("provider", ADDRESS), ("price", "u128"), ("height", "u64"))
UPGRADE_PLAN = struct(("name", "string"), ("height", "u64"))
APPLIED_UPGRADE = struct(("name", "string"), ("height", "u64"))
VERIFIER = struct(
    ("operator", ADDRESS), ("bonded", "u128"), ("jailed_until", "u64"), ("registered_height", "u64"),
    ("open_cases", "u64"), ("open_challenges", "u32"), ("verdicts", "u64"), ("misses", "u64"),
    ("overturned", "u64"),
)

TX_PARAMS = struct(("max_tx_bytes", "u32"), ("max_msgs_per_tx", "u32"), ("max_memo_bytes", "u32"),
                   ("max_block_gas", "u64"), ("min_gas_price_ppm", "u64"), ("gas_per_byte", "u64"),
                   ("gas_per_signature", "u64"), ("gas_per_msg", "u64"))
STAKING_PARAMS = struct(("unbonding_blocks", "u64"), ("max_validators", "u32"),
                        ("power_reduction", "u128"), ("min_self_bond", "u128"),
                        ("min_provider_stake", "u128"), ("max_moniker_len", "u32"),
                        ("max_attr_len", "u32"), ("max_url_len", "u32"), ("max_gpu_count", "u32"))
VERIFY_PARAMS = struct(
    ("min_verifier_stake", "u128"), ("verifier_unbonding_blocks", "u64"),
    ("verdict_deadline_blocks", "u64"), ("appeal_window_blocks", "u64"), ("appeal_deposit", "u128"),
    ("verifier_miss_slash_ppm", "u32"), ("verifier_wrong_slash_ppm", "u32"),
    ("wrong_slash_harmed_share_ppm", "u32"), ("verifier_jail_blocks", "u64"),
    ("challenge_rate_ppm", "u32"),
    ("challenge_ttl_blocks", "u64"), ("max_open_challenges", "u32"),
    ("max_verdict_wait_blocks", "u64"), ("max_pool_outflow_ppm", "u32"),
    ("spot_check_ppm", "u32"), ("spot_check_deterrence_ppm", "u32"),
)


def id20(n):
    """A numeric state-key segment: 20 zero-padded decimal digits."""
    return f"{n:020d}"
