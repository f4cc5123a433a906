package linearize

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dssio/dss/hlc"
)

// base is the wall clock (ms) of the hand-made histories' time 0.
const base = 1_700_000_000_000

func ver(wall int64, counter uint32) hlc.Timestamp {
	return hlc.Timestamp{Wall: base + wall, Counter: counter, Node: "n1"}
}

// op builds an operation of process p over [call, ret] milliseconds; a
// ret below 0 makes it an operation without response.
func op(p int, call, ret int64, in input, out output) porcupine.Operation {
	in.CallMs = base + call
	if ret < 0 {
		out.Result, out.RetMs = unknown, never
		return porcupine.Operation{ClientId: p, Input: in, Call: call * 1e6, Output: out, Return: 1 << 50}
	}
	out.RetMs = base + ret
	return porcupine.Operation{ClientId: p, Input: in, Call: call * 1e6, Output: out, Return: ret * 1e6}
}

func set(v string, c cond, px int64) input {
	return input{Verb: verbSet, Key: "k", Value: v, Cond: c, PX: px}
}
func get() input                { return input{Verb: verbGet, Key: "k"} }
func del() input                { return input{Verb: verbDel, Key: "k"} }
func vdel(v string) input       { return input{Verb: verbVDel, Key: "k", Value: v} }
func ok(v hlc.Timestamp) output { return output{Result: applied, Version: v} }
func met(v hlc.Timestamp) output {
	return output{Result: notMet, Version: v}
}
func val(s string, v hlc.Timestamp) output { return output{Result: found, Value: s, Version: v} }
func gone() output                         { return output{Result: missing} }
func dead(v hlc.Timestamp) output          { return output{Result: deleted, Version: v} }
func lost() output                         { return output{Result: unknown} }

// TestModel checks the model on histories small enough to judge by hand:
// the checker must accept every linearizable one and reject every one that
// is not. A model that accepts everything fails here.
func TestModel(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
		ops  []porcupine.Operation
	}{
		{"sequential writes and reads", true, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, get(), val("a", ver(0, 1))),
			op(0, 4, 5, set("b", nx, 0), met(ver(0, 1))),
			op(0, 6, 7, set("a", nex, 0), ok(ver(6, 0))),
			op(0, 8, 9, vdel("x"), met(ver(6, 0))),
			op(0, 10, 11, vdel("a"), dead(ver(6, 0))),
			op(0, 12, 13, vdel("a"), gone()),
			op(0, 14, 15, set("c", nx, 0), ok(ver(14, 0))),
			op(0, 16, 17, del(), dead(ver(14, 0))),
			op(0, 18, 19, del(), gone()),
			op(0, 20, 21, get(), gone()),
		}},
		{"a read concurrent with a write sees either", true, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(1, 2, 10, set("b", always, 0), ok(ver(5, 0))),
			op(2, 3, 4, get(), val("b", ver(5, 0))),
			op(3, 5, 6, get(), val("b", ver(5, 0))),
		}},
		{"a stale read", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, set("b", always, 0), ok(ver(2, 0))),
			op(1, 4, 5, get(), val("a", ver(0, 1))),
		}},
		{"a lost acknowledged write", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(1, 2, 3, get(), gone()),
		}},
		{"a read that goes back in time", false, []porcupine.Operation{
			op(0, 0, 10, set("b", always, 0), ok(ver(5, 0))),
			op(1, 1, 2, get(), val("b", ver(5, 0))),
			op(2, 3, 4, get(), gone()),
		}},
		{"a version that goes backwards", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 5))),
			op(0, 2, 3, set("b", always, 0), ok(ver(0, 4))),
		}},
		{"a version reused after a delete", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 5))),
			op(0, 2, 3, del(), dead(ver(0, 5))),
			op(0, 4, 5, set("b", always, 0), ok(ver(0, 5))),
		}},
		{"a read with another version than the write's", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, get(), val("a", ver(0, 2))),
		}},
		{"a read without version", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, get(), val("a", hlc.Timestamp{})),
		}},
		{"NX applied on a live key", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, set("b", nx, 0), ok(ver(2, 0))),
		}},
		{"NX refused on a missing key", false, []porcupine.Operation{
			op(0, 0, 1, set("b", nx, 0), met(ver(0, 1))),
		}},
		{"NX refused with another version than the stored one", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, set("b", nx, 0), met(ver(0, 2))),
		}},
		{"NEX applied over another value", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, set("b", nex, 0), ok(ver(2, 0))),
		}},
		{"NEX refused over the same value", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, set("a", nex, 0), met(ver(0, 1))),
		}},
		{"VDEL deletes another value", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, vdel("b"), dead(ver(0, 1))),
		}},
		{"VDEL refuses the same value", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, vdel("a"), met(ver(0, 1))),
		}},
		{"VDEL finds no key where there is one", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, vdel("b"), gone()),
		}},
		{"DEL deletes a missing key", false, []porcupine.Operation{
			op(0, 0, 1, del(), dead(ver(0, 1))),
		}},
		{"DEL finds no key where there is one", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(0, 2, 3, del(), gone()),
		}},
		{"a write without response that took effect", true, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(1, 2, -1, set("b", always, 0), lost()),
			op(2, 50, 51, get(), val("b", ver(3, 0))),
			op(2, 52, 53, get(), val("b", ver(3, 0))),
		}},
		{"a write without response that did not", true, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(1, 2, -1, set("b", always, 0), lost()),
			op(2, 50, 51, get(), val("a", ver(0, 1))),
		}},
		{"a write without response that took effect and then did not", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(1, 2, -1, set("b", always, 0), lost()),
			op(2, 50, 51, get(), val("b", ver(3, 0))),
			op(2, 52, 53, get(), val("a", ver(0, 1))),
		}},
		{"a write without response whose version is not above the floor", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 5))),
			op(1, 2, -1, set("b", always, 0), lost()),
			op(2, 50, 51, get(), val("b", ver(0, 4))),
		}},
		{"a delete without response", true, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 0), ok(ver(0, 1))),
			op(1, 2, -1, del(), lost()),
			op(2, 50, 51, set("b", nx, 0), ok(ver(50, 0))),
		}},
		{"a key read before its deadline", true, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 100), ok(ver(0, 1))),
			op(0, 50, 51, get(), val("a", ver(0, 1))),
			op(0, 200, 201, get(), gone()),
			op(0, 202, 203, set("b", nx, 0), ok(ver(202, 0))),
		}},
		{"a key gone before its deadline", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 100), ok(ver(0, 1))),
			op(0, 50, 51, get(), gone()),
		}},
		{"a key read after its deadline", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 100), ok(ver(0, 1))),
			op(0, 200, 201, get(), val("a", ver(0, 1))),
		}},
		{"a key that expires and comes back", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 100), ok(ver(0, 1))),
			op(0, 98, 103, get(), gone()),
			op(0, 104, 105, get(), val("a", ver(0, 1))),
		}},
		{"a key read around its deadline, either way", true, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 100), ok(ver(0, 1))),
			op(0, 98, 103, get(), val("a", ver(0, 1))),
			op(1, 99, 104, vdel("a"), gone()),
		}},
		{"a SET without PX keeps the key", false, []porcupine.Operation{
			op(0, 0, 1, set("a", always, 100), ok(ver(0, 1))),
			op(0, 2, 3, set("b", always, 0), ok(ver(2, 0))),
			op(0, 200, 201, get(), gone()),
		}},
		{"a write without response with PX expires some time after it was sent", true, []porcupine.Operation{
			op(0, 0, -1, set("a", always, 100), lost()),
			op(1, 50, 51, get(), val("a", ver(40, 0))),
			op(1, 5000, 5001, get(), gone()),
		}},
		{"a write without response with PX does not expire before it was sent plus PX", false, []porcupine.Operation{
			op(0, 0, -1, set("a", always, 100), lost()),
			op(1, 50, 51, get(), val("a", ver(40, 0))),
			op(1, 60, 61, get(), gone()),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := porcupine.CheckOperationsTimeout(storeModel, c.ops, 10*time.Second)
			want := porcupine.Illegal
			if c.ok {
				want = porcupine.Ok
			}
			if res != want {
				t.Fatalf("checker says %s, want %s", res, want)
			}
		})
	}
}

// TestCheckWritesVisualisation: a history that is not linearizable gives
// a visualisation file and a report that names the key and the operation
// that could not be placed.
func TestCheckWritesVisualisation(t *testing.T) {
	h := newHistory()
	p := h.process()
	c := h.invoke(p, input{Verb: verbSet, Key: "k", Value: "a"}, "n1")
	c.complete(output{Result: applied, Version: hlc.Timestamp{Wall: time.Now().UnixMilli(), Node: "n1"}})
	c = h.invoke(p, input{Verb: verbGet, Key: "k"}, "n1")
	c.complete(output{Result: missing})
	v, err := h.check(10*time.Second, t.TempDir(), "lost-write")
	if err != nil {
		t.Fatal(err)
	}
	if v.result != porcupine.Illegal {
		t.Fatalf("checker says %s, want Illegal", v.result)
	}
	b, err := os.ReadFile(v.file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<html") {
		t.Fatalf("%s is not a visualisation", v.file)
	}
	b, err = os.ReadFile(strings.TrimSuffix(v.file, ".html") + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 2 || !strings.Contains(lines[1], `"Op":"GET","Key":"k"`) {
		t.Fatalf("the history beside the visualisation is not the two operations:\n%s", b)
	}
	report := strings.Join(v.report, "\n")
	if !strings.Contains(report, `key "k": Illegal`) || !strings.Contains(report, "GET k → missing") {
		t.Fatalf("report does not name the key and the operation:\n%s", report)
	}
}
