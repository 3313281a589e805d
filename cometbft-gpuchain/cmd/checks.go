package main

import (
	"context"
	"fmt"
	"sync"

	abcicli "github.com/cometbft/cometbft/abci/client"
	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cometbft/cometbft/proxy"
)

// checkBatcher is an app that answers several CheckTx requests in one call, in order:
// the linked gpuchain app checks their signatures in one batch.
type checkBatcher interface {
	CheckTxs(reqs []*abci.RequestCheckTx) ([]*abci.ResponseCheckTx, error)
}

// maxCheckBatch is how many queued checks go to the app at once at most: the queue's size.
const maxCheckBatch = 256

// queuedChecksCreator gives each ABCI connection CometBFT opens a local client whose
// CheckTxAsync is asynchronous, as it is over the socket: the check is queued and runs
// on the connection's own goroutine, in order, and its callbacks fire when it is done.
// The checks waiting when the goroutine gets to them go to the app together.
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
		queue: make(chan *abcicli.ReqRes, maxCheckBatch),
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
	batch := make([]*abcicli.ReqRes, 0, maxCheckBatch)
	for rr := range q.queue {
		batch = append(batch[:0], rr)
	waiting:
		for len(batch) < maxCheckBatch {
			select {
			case more, ok := <-q.queue:
				if !ok {
					break waiting
				}
				batch = append(batch, more)
			default:
				break waiting
			}
		}
		responses, err := q.check(batch)
		if err != nil {
			// As the socket client does: no answer and no callbacks, the waiters released,
			// the client stopped with its error (CometBFT then stops the node).
			q.mtx.Lock()
			if q.err == nil {
				q.err = err
			}
			q.mtx.Unlock()
			for _, rr := range batch {
				rr.Done()
				q.markAnswered()
			}
			_ = q.Stop()
			continue
		}
		for i, rr := range batch {
			rr.Response = abci.ToResponseCheckTx(responses[i])
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
}

// check has the app answer every check in batch, one answer each, in order.
func (q *queuedChecks) check(batch []*abcicli.ReqRes) ([]*abci.ResponseCheckTx, error) {
	reqs := make([]*abci.RequestCheckTx, len(batch))
	for i, rr := range batch {
		reqs[i] = rr.Request.GetCheckTx()
	}
	if b, ok := q.app.(checkBatcher); ok {
		responses, err := b.CheckTxs(reqs)
		if err == nil && len(responses) != len(reqs) {
			err = fmt.Errorf("%d checks got %d answers", len(reqs), len(responses))
		}
		return responses, err
	}
	responses := make([]*abci.ResponseCheckTx, len(reqs))
	for i, req := range reqs {
		res, err := q.app.CheckTx(context.Background(), req)
		if err != nil {
			return nil, err
		}
		responses[i] = res
	}
	return responses, nil
}
