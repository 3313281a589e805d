package main

import (
	"context"
	"sync"

	abcicli "github.com/cometbft/cometbft/abci/client"
	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cometbft/cometbft/proxy"
)

// queuedChecksCreator gives each ABCI connection CometBFT opens a local client whose
// CheckTxAsync is asynchronous, as it is over the socket: the check is queued and runs
// on the connection's own goroutine, in order, and its callbacks fire when it is done.
// CometBFT's local client would run it inline instead, and a transaction gossiped by a
// peer is checked inside the p2p reactor that also carries votes and block parts: a
// signature check per transaction there stalled consensus on a 4-validator localnet.
type queuedChecksCreator struct {
	app abci.Application
}

var _ proxy.ClientCreator = queuedChecksCreator{}

func (c queuedChecksCreator) NewABCIClient() (abcicli.Client, error) {
	q := &queuedChecks{
		// Every call but CheckTxAsync and Flush; nil: a lock of its own per connection.
		Client: abcicli.NewLocalClient(nil, c.app),
		app:    c.app,
		// As many checks may wait as the socket client's request queue holds.
		queue: make(chan *abcicli.ReqRes, 256),
	}
	q.answeredCond = sync.NewCond(&q.mtx)
	go q.run()
	return q, nil
}

// queuedChecks is one connection's client; only the mempool's calls CheckTxAsync.
type queuedChecks struct {
	abcicli.Client
	app   abci.Application
	queue chan *abcicli.ReqRes

	mtx          sync.Mutex
	callback     abcicli.Callback
	err          error
	queued       uint64
	answered     uint64
	answeredCond *sync.Cond
}

func (q *queuedChecks) SetResponseCallback(cb abcicli.Callback) {
	q.mtx.Lock()
	q.callback = cb
	q.mtx.Unlock()
}

func (q *queuedChecks) Error() error {
	q.mtx.Lock()
	defer q.mtx.Unlock()
	return q.err
}

// CheckTxAsync queues the check and returns; a full queue makes the caller wait, as a
// full socket queue does. Once the app has failed a check the client stops with its
// error, which makes CometBFT stop the node, as a broken socket does.
func (q *queuedChecks) CheckTxAsync(ctx context.Context, req *abci.RequestCheckTx) (*abcicli.ReqRes, error) {
	if err := q.Error(); err != nil {
		return nil, err
	}
	rr := abcicli.NewReqRes(abci.ToRequestCheckTx(req))
	// Counted before it is sent: Flush then waits for every check already handed in,
	// even one whose sender still waits for room in a full queue.
	q.mtx.Lock()
	q.queued++
	q.mtx.Unlock()
	select {
	case q.queue <- rr:
		return rr, nil
	case <-ctx.Done():
		// Never sent, so never answered: count it as done for Flush's sake.
		q.markAnswered()
		return nil, ctx.Err()
	}
}

func (q *queuedChecks) markAnswered() {
	q.mtx.Lock()
	q.answered++
	q.answeredCond.Broadcast()
	q.mtx.Unlock()
}

// Flush returns once every check queued before it has been answered and its callbacks
// have run: what a Flush round trip over the socket guarantees.
func (q *queuedChecks) Flush(context.Context) error {
	q.mtx.Lock()
	defer q.mtx.Unlock()
	for target := q.queued; q.answered < target; {
		q.answeredCond.Wait()
	}
	return q.err
}

func (q *queuedChecks) run() {
	for rr := range q.queue {
		res, err := q.app.CheckTx(context.Background(), rr.Request.GetCheckTx())
		if err != nil {
			// As the socket client does: no answer and no callbacks, the waiters released,
			// the client stopped with its error (CometBFT then stops the node).
			q.mtx.Lock()
			if q.err == nil {
				q.err = err
			}
			q.mtx.Unlock()
			rr.Done()
			q.markAnswered()
			_ = q.Stop()
			continue
		}
		rr.Response = abci.ToResponseCheckTx(res)
		rr.Done()
		q.mtx.Lock()
		cb := q.callback
		q.mtx.Unlock()
		if cb != nil {
			cb(rr.Request, rr.Response)
		}
		rr.InvokeCallback()
		q.markAnswered()
	}
}
