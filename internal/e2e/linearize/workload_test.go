package linearize

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/wire"
)

// workload is what the clients of a round do.
type workload struct {
	keys []string
	// timeout bounds one request; a write that times out is recorded as
	// unknown.
	timeout time.Duration
	// names are the node ids by MQTT address.
	names map[string]string
}

// errProtocol reports a response that breaks the protocol in a way no
// history can explain (a malformed reply, an error text the workload never
// provokes): the round fails at once.
var errProtocol = errors.New("protocol violation")

// errBusy reports a request the server refused without executing it (its
// pipeline was full): it took no effect, and the history leaves it out.
var errBusy = errors.New("refused: the state store is busy")

// worker is one client: a sequence of requests, each recorded in h.
type worker struct {
	id   int
	c    *client.Client
	h    *history
	rng  *rand.Rand
	w    *workload
	seen map[string]string // the last value this worker saw per key
	n    int               // values written
}

// run sends requests until ctx ends. It returns an error only for a
// response that breaks the protocol.
func (wk *worker) run(ctx context.Context) error {
	process := wk.h.process()
	for ctx.Err() == nil {
		if wk.c.Server() == "" {
			// Not connected: a request now would only wait for the
			// connection and end as unknown.
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		in := wk.next()
		call := wk.h.invoke(process, in, wk.w.names[wk.c.Server()])
		out, err := wk.do(ctx, in)
		switch {
		case errors.Is(err, errProtocol):
			return fmt.Errorf("worker %d: %s: %w", wk.id, describeOp(in, out), err)
		case errors.Is(err, errBusy):
			call.refused()
			continue
		}
		call.complete(out)
		if out.Result == unknown && in.Verb != verbGet {
			process = wk.h.process()
		}
	}
	return nil
}

// next draws the next request.
func (wk *worker) next() input {
	r := wk.rng
	key := wk.w.keys[r.IntN(len(wk.w.keys))]
	in := input{Key: key}
	switch p := r.IntN(100); {
	case p < 40:
		in.Verb = verbGet
	case p < 72:
		in.Verb = verbSet
		wk.n++
		in.Value = fmt.Sprintf("w%d.%d", wk.id, wk.n)
		switch r.IntN(4) {
		case 0:
			in.Cond = nx
		case 1:
			in.Cond = nex
			if v, ok := wk.seen[key]; ok && r.IntN(2) == 0 {
				// A renewal: the value the key had when last seen.
				in.Value = v
			}
		}
		switch p := r.IntN(20); {
		case p < 5:
			in.PX = 200 + r.Int64N(1800)
		case p < 8:
			in.PX = 60_000
		}
	case p < 80:
		in.Verb = verbDel
	default:
		in.Verb = verbVDel
		in.Value = fmt.Sprintf("w%d.%d", r.IntN(8), r.IntN(wk.n+1))
		if v, ok := wk.seen[key]; ok && r.IntN(3) > 0 {
			in.Value = v
		}
	}
	return in
}

// do sends one request and turns its response into an output.
func (wk *worker) do(ctx context.Context, in input) (output, error) {
	ctx, cancel := context.WithTimeout(ctx, wk.w.timeout)
	defer cancel()
	var out output
	var err error
	switch in.Verb {
	case verbGet:
		var e client.Entry
		var ok bool
		e, ok, err = wk.c.Get(ctx, in.Key)
		out = output{Result: missing}
		if ok {
			out = output{Result: found, Value: string(e.Value), Version: e.Version}
			wk.seen[in.Key] = out.Value
		}
	case verbSet:
		opts := []client.SetOption{[...]client.Condition{always: client.Always, nx: client.IfMissing, nex: client.IfMissingOrEqual}[in.Cond]}
		if in.PX > 0 {
			opts = append(opts, client.TTL(time.Duration(in.PX)*time.Millisecond))
		}
		var r client.SetResult
		r, err = wk.c.Set(ctx, in.Key, []byte(in.Value), opts...)
		out = output{Result: notMet, Version: r.Version}
		if r.Applied {
			out.Result = applied
			wk.seen[in.Key] = in.Value
		}
	case verbDel, verbVDel:
		var r client.DelResult
		if in.Verb == verbDel {
			r, err = wk.c.Del(ctx, in.Key)
		} else {
			r, err = wk.c.VDel(ctx, in.Key, []byte(in.Value))
		}
		out = output{Result: missing}
		switch {
		case r.Deleted:
			out = output{Result: deleted, Version: r.Version}
		case r.Mismatch:
			out = output{Result: notMet, Version: r.Version}
		}
	}
	if err == nil {
		return out, nil
	}
	var se *client.ServerError
	if errors.As(err, &se) && se.Text == wire.ErrBusy.Text() {
		return output{Result: unknown}, fmt.Errorf("%w: %w", errBusy, err)
	}
	if errors.Is(err, client.ErrBadResponse) || (errors.As(err, &se) && !errors.Is(err, client.ErrUnavailable)) {
		return output{Result: unknown}, fmt.Errorf("%w: %w", errProtocol, err)
	}
	// A timeout, a lost connection, a store that stayed unavailable:
	// the request may or may not have taken effect.
	return output{Result: unknown}, nil
}
