package main

/*
#include <stddef.h>
#include <stdint.h>

typedef struct {
	uint8_t *ptr;
	size_t len;
	size_t cap;
} gpuchain_buf;

int32_t gpuchain_open(const uint8_t *home, size_t home_len, gpuchain_buf *out);
int32_t gpuchain_call(const uint8_t *request, size_t len, gpuchain_buf *out);
void gpuchain_free(gpuchain_buf buf);
*/
import "C"

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"unsafe"

	abci "github.com/cometbft/cometbft/abci/types"
)

// gpuchainApp is the linked gpuchain app as CometBFT's abci.Application: requests go
// over as the length-prefixed protobuf bytes the socket would carry (several CheckTx at
// once from the mempool's queue), and the answers come back the same way.
type gpuchainApp struct{}

var _ abci.Application = gpuchainApp{}

// openApp opens the app whose app.toml is in home; the library holds one app a process.
func openApp(home string) (gpuchainApp, error) {
	if home == "" {
		return gpuchainApp{}, errors.New("the app home is empty")
	}
	b := []byte(home)
	var out C.gpuchain_buf
	rc := C.gpuchain_open((*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b)), &out)
	msg := string(unsafe.Slice((*byte)(unsafe.Pointer(out.ptr)), int(out.len)))
	C.gpuchain_free(out)
	if rc != 0 {
		return gpuchainApp{}, fmt.Errorf("opening the gpuchain app in %s: %s", home, msg)
	}
	return gpuchainApp{}, nil
}

// fatal stops the process. The app failing to answer is what a broken ABCI socket is
// to CometBFT, which then stops too; a node must not go on half-serving (and the app's
// own panics and halts abort the process before they get here).
func fatal(err error) {
	fmt.Fprintf(os.Stderr, "FATAL: %v; halting\n", err)
	os.Exit(1)
}

// call hands one request to the app and decodes its answer; any failure is fatal.
func call(req *abci.Request) *abci.Response {
	res, err := exchange(req)
	if err != nil {
		fatal(err)
	}
	return res
}

func exchange(req *abci.Request) (*abci.Response, error) {
	res, err := exchangeAll([]*abci.Request{req})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// exchangeAll hands requests to the app in one call and returns its answers, one each.
func exchangeAll(reqs []*abci.Request) ([]*abci.Response, error) {
	var in bytes.Buffer
	for _, req := range reqs {
		if err := abci.WriteMessage(req, &in); err != nil {
			return nil, fmt.Errorf("encoding an ABCI request: %w", err)
		}
	}
	var ptr *C.uint8_t
	if in.Len() > 0 {
		ptr = (*C.uint8_t)(unsafe.Pointer(&in.Bytes()[0]))
	}
	var out C.gpuchain_buf
	rc := C.gpuchain_call(ptr, C.size_t(in.Len()), &out)
	defer C.gpuchain_free(out)
	// Decoding copies every field out of the library's buffer before it is freed.
	answers := unsafe.Slice((*byte)(unsafe.Pointer(out.ptr)), int(out.len))
	if rc != 0 {
		return nil, fmt.Errorf("gpuchain app: %s", string(answers))
	}
	reader := bytes.NewReader(answers)
	res := make([]*abci.Response, len(reqs))
	for i := range res {
		res[i] = new(abci.Response)
		if err := abci.ReadMessage(reader, res[i]); err != nil {
			return nil, fmt.Errorf("decoding the gpuchain app's answer %d of %d: %w", i+1, len(reqs), err)
		}
		if e := res[i].GetException(); e != nil {
			return nil, fmt.Errorf("gpuchain app: %s", e.Error)
		}
	}
	if reader.Len() != 0 {
		return nil, fmt.Errorf("the gpuchain app answered %d requests with %d bytes too many", len(reqs), reader.Len())
	}
	return res, nil
}

// answer is call's result as the response type T, which the app must have answered with.
func answer[T any](req *abci.Request, get func(*abci.Response) *T) (*T, error) {
	res := call(req)
	if v := get(res); v != nil {
		return v, nil
	}
	fatal(fmt.Errorf("gpuchain app answered %T with %T", req.Value, res.Value))
	return nil, nil
}

func (gpuchainApp) Info(_ context.Context, r *abci.RequestInfo) (*abci.ResponseInfo, error) {
	return answer(abci.ToRequestInfo(r), (*abci.Response).GetInfo)
}

func (gpuchainApp) Query(_ context.Context, r *abci.RequestQuery) (*abci.ResponseQuery, error) {
	return answer(abci.ToRequestQuery(r), (*abci.Response).GetQuery)
}

func (gpuchainApp) CheckTx(_ context.Context, r *abci.RequestCheckTx) (*abci.ResponseCheckTx, error) {
	return answer(abci.ToRequestCheckTx(r), (*abci.Response).GetCheckTx)
}

// CheckTxs checks several transactions in one call (checkBatcher); any failure is fatal,
// as for every other request.
func (gpuchainApp) CheckTxs(reqs []*abci.RequestCheckTx) ([]*abci.ResponseCheckTx, error) {
	wrapped := make([]*abci.Request, len(reqs))
	for i, r := range reqs {
		wrapped[i] = abci.ToRequestCheckTx(r)
	}
	res, err := exchangeAll(wrapped)
	if err != nil {
		fatal(err)
	}
	out := make([]*abci.ResponseCheckTx, len(res))
	for i, r := range res {
		if out[i] = r.GetCheckTx(); out[i] == nil {
			fatal(fmt.Errorf("gpuchain app answered CheckTx with %T", r.Value))
		}
	}
	return out, nil
}

func (gpuchainApp) InitChain(_ context.Context, r *abci.RequestInitChain) (*abci.ResponseInitChain, error) {
	return answer(abci.ToRequestInitChain(r), (*abci.Response).GetInitChain)
}

func (gpuchainApp) PrepareProposal(_ context.Context, r *abci.RequestPrepareProposal) (*abci.ResponsePrepareProposal, error) {
	return answer(abci.ToRequestPrepareProposal(r), (*abci.Response).GetPrepareProposal)
}

func (gpuchainApp) ProcessProposal(_ context.Context, r *abci.RequestProcessProposal) (*abci.ResponseProcessProposal, error) {
	return answer(abci.ToRequestProcessProposal(r), (*abci.Response).GetProcessProposal)
}

func (gpuchainApp) FinalizeBlock(_ context.Context, r *abci.RequestFinalizeBlock) (*abci.ResponseFinalizeBlock, error) {
	return answer(abci.ToRequestFinalizeBlock(r), (*abci.Response).GetFinalizeBlock)
}

func (gpuchainApp) ExtendVote(_ context.Context, r *abci.RequestExtendVote) (*abci.ResponseExtendVote, error) {
	return answer(abci.ToRequestExtendVote(r), (*abci.Response).GetExtendVote)
}

func (gpuchainApp) VerifyVoteExtension(_ context.Context, r *abci.RequestVerifyVoteExtension) (*abci.ResponseVerifyVoteExtension, error) {
	return answer(abci.ToRequestVerifyVoteExtension(r), (*abci.Response).GetVerifyVoteExtension)
}

func (gpuchainApp) Commit(_ context.Context, _ *abci.RequestCommit) (*abci.ResponseCommit, error) {
	return answer(abci.ToRequestCommit(), (*abci.Response).GetCommit)
}

func (gpuchainApp) ListSnapshots(_ context.Context, r *abci.RequestListSnapshots) (*abci.ResponseListSnapshots, error) {
	return answer(abci.ToRequestListSnapshots(r), (*abci.Response).GetListSnapshots)
}

func (gpuchainApp) OfferSnapshot(_ context.Context, r *abci.RequestOfferSnapshot) (*abci.ResponseOfferSnapshot, error) {
	return answer(abci.ToRequestOfferSnapshot(r), (*abci.Response).GetOfferSnapshot)
}

func (gpuchainApp) LoadSnapshotChunk(_ context.Context, r *abci.RequestLoadSnapshotChunk) (*abci.ResponseLoadSnapshotChunk, error) {
	return answer(abci.ToRequestLoadSnapshotChunk(r), (*abci.Response).GetLoadSnapshotChunk)
}

func (gpuchainApp) ApplySnapshotChunk(_ context.Context, r *abci.RequestApplySnapshotChunk) (*abci.ResponseApplySnapshotChunk, error) {
	return answer(abci.ToRequestApplySnapshotChunk(r), (*abci.Response).GetApplySnapshotChunk)
}
