package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
)

// gatedApp answers CheckTx with the transaction's first byte as its code, and only once
// the test opens the gate.
type gatedApp struct {
	abci.BaseApplication
	gate chan struct{}
}

func (a gatedApp) CheckTx(_ context.Context, r *abci.RequestCheckTx) (*abci.ResponseCheckTx, error) {
	<-a.gate
	return &abci.ResponseCheckTx{Code: uint32(r.Tx[0])}, nil
}

func TestChecksAreQueuedAnsweredInOrderAndFlushWaitsForThem(t *testing.T) {
	app := gatedApp{gate: make(chan struct{})}
	client, err := queuedChecksCreator{app: app}.NewABCIClient()
	if err != nil {
		t.Fatal(err)
	}
	var mtx sync.Mutex
	var global, own []uint32
	returned := 0
	client.SetResponseCallback(func(_ *abci.Request, res *abci.Response) {
		mtx.Lock()
		global = append(global, res.GetCheckTx().Code)
		mtx.Unlock()
	})

	// Handed in while the app is still blocked: the calls return at once.
	const n = 300 // more than the queue holds: the last senders wait for room
	handedIn := make(chan struct{})
	go func() {
		for i := 0; i < n; i++ {
			rr, err := client.CheckTxAsync(context.Background(), &abci.RequestCheckTx{Tx: []byte{byte(i)}})
			if err != nil {
				t.Error(err)
				return
			}
			rr.SetCallback(func(res *abci.Response) {
				mtx.Lock()
				own = append(own, res.GetCheckTx().Code)
				mtx.Unlock()
			})
			mtx.Lock()
			returned++
			mtx.Unlock()
		}
		close(handedIn)
	}()
	time.Sleep(50 * time.Millisecond)
	mtx.Lock()
	if len(global) != 0 {
		t.Fatalf("answered before the app was: %v", global)
	}
	// A full queue (256) and the check the app holds: the callers did not wait for it.
	if returned < 256 {
		t.Fatalf("only %d of %d calls returned while the app was busy", returned, n)
	}
	mtx.Unlock()

	flushed := make(chan struct{})
	go func() {
		<-handedIn
		if err := client.Flush(context.Background()); err != nil {
			t.Error(err)
		}
		close(flushed)
	}()
	close(app.gate)
	select {
	case <-flushed:
	case <-time.After(10 * time.Second):
		t.Fatal("Flush did not return once every check was answered")
	}
	mtx.Lock()
	defer mtx.Unlock()
	if len(global) != n || len(own) != n {
		t.Fatalf("%d global and %d own callbacks after Flush, want %d", len(global), len(own), n)
	}
	for i := 0; i < n; i++ {
		if global[i] != uint32(byte(i)) || own[i] != uint32(byte(i)) {
			t.Fatalf("answer %d out of order: %d / %d", i, global[i], own[i])
		}
	}
}

type failingApp struct{ abci.BaseApplication }

func (failingApp) CheckTx(context.Context, *abci.RequestCheckTx) (*abci.ResponseCheckTx, error) {
	return nil, errors.New("broken")
}

func TestAFailedCheckStopsTheClientWithItsErrorAndNoAnswer(t *testing.T) {
	client, err := queuedChecksCreator{app: failingApp{}}.NewABCIClient()
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	answered := false
	client.SetResponseCallback(func(*abci.Request, *abci.Response) { answered = true })
	rr, err := client.CheckTxAsync(context.Background(), &abci.RequestCheckTx{Tx: []byte{1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Flush(context.Background()); err == nil || err.Error() != "broken" {
		t.Fatalf("Flush after a failed check: %v", err)
	}
	select {
	case <-client.Quit():
	case <-time.After(5 * time.Second):
		t.Fatal("the client did not stop, so CometBFT would not stop the node")
	}
	rr.Wait()
	if answered || rr.Response != nil {
		t.Fatalf("a failed check was answered: %v", rr.Response)
	}
	if _, err := client.CheckTxAsync(context.Background(), &abci.RequestCheckTx{Tx: []byte{2}}); err == nil {
		t.Fatal("a stopped client took another check")
	}
}

// batchingApp answers checks as gatedApp does, but several at a time, and records how many
// each call got.
type batchingApp struct {
	gatedApp
	mtx   sync.Mutex
	sizes []int
}

func (a *batchingApp) CheckTxs(reqs []*abci.RequestCheckTx) ([]*abci.ResponseCheckTx, error) {
	<-a.gate
	a.mtx.Lock()
	a.sizes = append(a.sizes, len(reqs))
	a.mtx.Unlock()
	out := make([]*abci.ResponseCheckTx, len(reqs))
	for i, r := range reqs {
		out[i] = &abci.ResponseCheckTx{Code: uint32(r.Tx[0])}
	}
	return out, nil
}

func TestChecksWaitingTogetherGoToABatchingAppInOneCallAndAreAnsweredInOrder(t *testing.T) {
	app := &batchingApp{gatedApp: gatedApp{gate: make(chan struct{})}}
	client, err := queuedChecksCreator{app: app}.NewABCIClient()
	if err != nil {
		t.Fatal(err)
	}
	var mtx sync.Mutex
	var codes []uint32
	client.SetResponseCallback(func(_ *abci.Request, res *abci.Response) {
		mtx.Lock()
		codes = append(codes, res.GetCheckTx().Code)
		mtx.Unlock()
	})
	const n = 200
	for i := 0; i < n; i++ {
		if _, err := client.CheckTxAsync(context.Background(), &abci.RequestCheckTx{Tx: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	close(app.gate)
	if err := client.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mtx.Lock()
	defer mtx.Unlock()
	if len(codes) != n {
		t.Fatalf("%d answers after Flush, want %d", len(codes), n)
	}
	for i, c := range codes {
		if c != uint32(byte(i)) {
			t.Fatalf("answer %d out of order: %d", i, c)
		}
	}
	app.mtx.Lock()
	defer app.mtx.Unlock()
	total := 0
	for _, s := range app.sizes {
		total += s
	}
	// The first call takes what was queued when it started; everything queued while the
	// app was busy goes in the next one.
	if total != n || len(app.sizes) > 2 {
		t.Fatalf("calls of %v checks: the waiting checks did not go together", app.sizes)
	}
}
