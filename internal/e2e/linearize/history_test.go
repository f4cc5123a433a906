package linearize

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dssio/dss/hlc"
)

// history records the operations of one round and the faults injected
// during it. It is safe for concurrent use.
type history struct {
	start time.Time // Call and Return count nanoseconds from here

	mu          sync.Mutex
	ops         []porcupine.Operation  // guarded by mu
	annotations []porcupine.Annotation // guarded by mu
	processes   int                    // guarded by mu; process ids handed out
	unanswered  int                    // guarded by mu; reads without response, left out
	refused     int                    // guarded by mu; requests refused unexecuted, left out
	open        []int                  // guarded by mu; indexes in ops of writes without response
}

func newHistory() *history {
	return &history{start: time.Now()}
}

// process returns a new process id. A client that got no response to a
// write goes on as a new process, as in Jepsen: the old one may still be
// in flight.
func (h *history) process() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.processes++
	return h.processes - 1
}

// call is an operation in flight.
type call struct {
	h       *history
	process int
	in      input
	at      time.Time
	node    string // the node the client was connected to when it sent
}

// invoke records that process sends in now through node.
func (h *history) invoke(process int, in input, node string) *call {
	now := time.Now()
	in.CallMs = now.UnixMilli()
	return &call{h: h, process: process, in: in, at: now, node: node}
}

// complete records the response out; an out with Result unknown records a
// write without response (a read without one is left out: it changed
// nothing).
func (c *call) complete(out output) {
	now := time.Now()
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if out.Result == unknown {
		if c.in.Verb == verbGet {
			h.unanswered++
			return
		}
		out.RetMs = never
		// Return is set when the history is closed: after everything.
		h.open = append(h.open, len(h.ops))
	} else {
		out.RetMs = now.UnixMilli()
	}
	h.ops = append(h.ops, porcupine.Operation{
		ClientId: c.process,
		Input:    c.in,
		Call:     int64(c.at.Sub(h.start)),
		Output:   out,
		Return:   int64(now.Sub(h.start)),
		Metadata: c.node,
	})
}

// refused records that the server refused the request without executing
// it: it is left out of the history.
func (c *call) refused() {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	c.h.refused++
}

// fault records a fault on the timeline of the visualisation.
func (h *history) fault(from, to time.Time, what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.annotations = append(h.annotations, porcupine.Annotation{
		Tag:             "faults",
		Start:           int64(from.Sub(h.start)),
		End:             int64(to.Sub(h.start)),
		Description:     what,
		BackgroundColor: "#fbd5d5",
	})
}

// operations returns the history to check: operations without response
// return after every other one.
func (h *history) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	var end int64
	for _, op := range h.ops {
		end = max(end, op.Return)
	}
	ops := append([]porcupine.Operation(nil), h.ops...)
	for _, i := range h.open {
		ops[i].Return = end + 1
	}
	return ops
}

// counts returns the number of operations recorded and of writes without
// response among them, of reads without response and of requests refused
// unexecuted, both left out.
func (h *history) counts() (ops, unknownWrites, unansweredReads, refused int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops), len(h.open), h.unanswered, h.refused
}

// verdict is the outcome of checking a history.
type verdict struct {
	result porcupine.CheckResult
	// file is the visualisation of a history that is not Ok; the history
	// itself is beside it, one operation per line in JSON (.jsonl).
	file string
	// report describes, for each key whose history is not Ok, the end of
	// the longest linearization found and the operations it could not
	// place.
	report []string
}

// check checks the history against the model within timeout. When the
// result is not Ok it writes porcupine's visualisation into dir, and
// checks each key alone to report where its history breaks.
func (h *history) check(timeout time.Duration, dir, name string) (verdict, error) {
	ops := h.operations()
	res, info := porcupine.CheckOperationsVerbose(storeModel, ops, timeout)
	v := verdict{result: res}
	if res == porcupine.Ok {
		return v, nil
	}
	h.mu.Lock()
	info.AddAnnotations(h.annotations)
	h.mu.Unlock()
	v.file = filepath.Join(dir, name+".html")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return v, err
	}
	if err := porcupine.VisualizePath(storeModel, info, v.file); err != nil {
		return v, fmt.Errorf("visualise: %w", err)
	}
	if err := writeOps(strings.TrimSuffix(v.file, ".html")+".jsonl", ops); err != nil {
		return v, err
	}
	for _, part := range storeModel.Partition(ops) {
		r, info := porcupine.CheckOperationsVerbose(storeModel, part, timeout)
		if r != porcupine.Ok {
			v.report = append(v.report, explain(part, r, info)...)
		}
	}
	return v, nil
}

// writeOps writes the operations to path, one JSON object a line, in the
// order they were invoked.
func writeOps(path string, ops []porcupine.Operation) error {
	ops = append([]porcupine.Operation(nil), ops...)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, op := range ops {
		in, out := op.Input.(input), op.Output.(output)
		err = enc.Encode(struct {
			Process      int
			Call, Return int64 // nanoseconds from the start of the round
			Op           string
			Key, Value   string `json:",omitempty"`
			Cond         string `json:",omitempty"`
			PX           int64  `json:",omitempty"`
			Result       string
			Got          string `json:",omitempty"`
			Version      string `json:",omitempty"`
			Node         string `json:",omitempty"` // the node the client sent it to
		}{op.ClientId, op.Call, op.Return, in.Verb.String(), in.Key, in.Value,
			[...]string{"", "NX", "NEX"}[in.Cond], in.PX, out.Result.String(), out.Value, versionText(out.Version), nodeOf(op)})
		if err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

func nodeOf(op porcupine.Operation) string {
	s, _ := op.Metadata.(string)
	return s
}

func versionText(v hlc.Timestamp) string {
	if v.IsZero() {
		return ""
	}
	return v.String()
}

// explain describes where the history of one key breaks: the last
// operations of the longest linearization the checker found, then the
// earliest operations it could not place after them.
func explain(part []porcupine.Operation, r porcupine.CheckResult, info porcupine.LinearizationInfo) []string {
	key := part[0].Input.(input).Key
	lines := []string{fmt.Sprintf("key %q: %s", key, r)}
	var longest []porcupine.Operation
	for _, lin := range info.PartialLinearizationsOperations() {
		for _, l := range lin {
			if len(l) > len(longest) {
				longest = l
			}
		}
	}
	type id struct {
		process int
		call    int64
	}
	placed := map[id]bool{}
	for _, op := range longest {
		placed[id{op.ClientId, op.Call}] = true
	}
	from := max(0, len(longest)-10)
	lines = append(lines, fmt.Sprintf("  longest linearization: %d of %d operations; its last ones:", len(longest), len(part)))
	for _, op := range longest[from:] {
		lines = append(lines, "    "+describe(op))
	}
	var left []porcupine.Operation
	for _, op := range part {
		if !placed[id{op.ClientId, op.Call}] {
			left = append(left, op)
		}
	}
	sort.Slice(left, func(i, j int) bool { return left[i].Call < left[j].Call })
	lines = append(lines, "  not placed after them (earliest first):")
	for _, op := range left[:min(len(left), 5)] {
		lines = append(lines, "    "+describe(op))
	}
	return lines
}

// describe is one operation in a report: process, interval in
// milliseconds from the start of the round, and what it did.
func describe(op porcupine.Operation) string {
	return fmt.Sprintf("p%-3d %-3s [%10.3f, %10.3f] %s", op.ClientId, nodeOf(op),
		float64(op.Call)/1e6, float64(op.Return)/1e6, describeOp(op.Input.(input), op.Output.(output)))
}
