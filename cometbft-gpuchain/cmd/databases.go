package main

import (
	dbm "github.com/cometbft/cometbft-db"
	cfg "github.com/cometbft/cometbft/config"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// txIndexID is the database CometBFT's kv transaction indexer writes (tx_index.db).
const txIndexID = "tx_index"

// txIndexOptions size goleveldb for the transaction index, the one database that grows
// with every committed transaction: CometBFT 0.38 never prunes it, and its keys are
// transaction hashes, so each compaction merges across the whole key range. With
// goleveldb's defaults (4 MiB memtable, 2 MiB tables, 10 MiB in level 1, ×10 a level)
// an index of 500,000 transfers reaches a third level and its compactions cost the node
// a quarter of its throughput; these sizes keep such an index within two levels and
// write fewer, larger tables. The memtable and its frozen twin hold at most 128 MiB.
func txIndexOptions() *opt.Options {
	return &opt.Options{
		WriteBuffer:         64 * opt.MiB,
		CompactionTableSize: 16 * opt.MiB,
		CompactionTotalSize: 128 * opt.MiB,
	}
}

// databases opens the node's databases as CometBFT's default provider does, except the
// goleveldb transaction index, which gets txIndexOptions. The files are goleveldb's
// either way, so a home written by the `cometbft` binary opens here and the reverse.
func databases(ctx *cfg.DBContext) (dbm.DB, error) {
	if ctx.ID == txIndexID && dbm.BackendType(ctx.Config.DBBackend) == dbm.GoLevelDBBackend {
		return dbm.NewGoLevelDBWithOpts(ctx.ID, ctx.Config.DBDir(), txIndexOptions())
	}
	return cfg.DefaultDBProvider(ctx)
}
