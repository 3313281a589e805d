package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	dbm "github.com/cometbft/cometbft-db"
	cfg "github.com/cometbft/cometbft/config"
)

// tables counts goleveldb's table files in the database directory `name`.db.
func tables(t *testing.T, dir, name string) int {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dir, name+".db", "*.ldb"))
	if err != nil {
		t.Fatal(err)
	}
	return len(found)
}

// fill writes 12 MiB: three times goleveldb's default memtable, under a fifth of the index's.
func fill(t *testing.T, db dbm.DB) {
	t.Helper()
	value := bytes.Repeat([]byte{7}, 1024)
	for b := 0; b < 12; b++ {
		batch := db.NewBatch()
		for i := 0; i < 1024; i++ {
			if err := batch.Set([]byte(fmt.Sprintf("key-%02d-%04d", b, i)), value); err != nil {
				t.Fatal(err)
			}
		}
		if err := batch.WriteSync(); err != nil {
			t.Fatal(err)
		}
		batch.Close()
	}
}

func TestTheTransactionIndexBuffersMoreAndStaysReadableByCometBFT(t *testing.T) {
	config := cfg.DefaultConfig()
	config.SetRoot(t.TempDir())
	config.DBBackend = string(dbm.GoLevelDBBackend)
	if err := os.MkdirAll(config.DBDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	open := func(id string) dbm.DB {
		db, err := databases(&cfg.DBContext{ID: id, Config: config})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}

	index, blocks := open(txIndexID), open("blockstore")
	fill(t, index)
	fill(t, blocks)
	// The block store keeps CometBFT's defaults: its full memtables become tables.
	deadline := time.Now().Add(10 * time.Second)
	for tables(t, config.DBDir(), "blockstore") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the block store wrote no table after three default memtables' worth")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := tables(t, config.DBDir(), txIndexID); n != 0 {
		t.Fatalf("the index flushed %d tables from a memtable sized to hold 64 MiB", n)
	}
	if err := index.Close(); err != nil {
		t.Fatal(err)
	}
	if err := blocks.Close(); err != nil {
		t.Fatal(err)
	}

	// CometBFT's own provider (the stock binary) reads what this one wrote.
	stock, err := cfg.DefaultDBProvider(&cfg.DBContext{ID: txIndexID, Config: config})
	if err != nil {
		t.Fatal(err)
	}
	defer stock.Close()
	got, err := stock.Get([]byte("key-11-1023"))
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{7}, 1024)) {
		t.Fatalf("the stock provider read %d bytes, err %v", len(got), err)
	}
}
