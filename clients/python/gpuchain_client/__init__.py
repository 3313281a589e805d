"""gpuchain's reference client in Python, written from docs/protocol.md alone: borsh
encoding, addresses, transactions and every module's messages, key files, proven queries
and CometBFT header verification. Dependencies: PyNaCl and blake3."""
