package linearize

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dssio/dss/hlc"
)

// verb is the command of an operation.
type verb uint8

const (
	verbGet verb = iota + 1
	verbSet
	verbDel
	verbVDel
)

func (v verb) String() string {
	return [...]string{"?", "GET", "SET", "DEL", "VDEL"}[v]
}

// cond is a SET's condition.
type cond uint8

const (
	always cond = iota
	nx
	nex
)

// input is what a client asked for.
type input struct {
	Verb  verb
	Key   string
	Value string // SET: the value; VDEL: the value to compare
	Cond  cond
	PX    int64 // SET: milliseconds to live; 0 for none
	// CallMs is the wall clock in milliseconds when the request was sent.
	CallMs int64
}

// result is what came back, in the terms of the protocol.
type result uint8

const (
	// unknown: no response (a timeout or a lost connection). The write
	// may or may not have taken effect.
	unknown result = iota
	// applied: SET +OK.
	applied
	// notMet: SET NX/NEX or VDEL :-1.
	notMet
	// deleted: DEL or VDEL :1.
	deleted
	// missing: GET $-1, DEL or VDEL :0.
	missing
	// found: GET returned a value.
	found
)

func (r result) String() string {
	return [...]string{"unknown", "OK", ":-1", ":1", "missing", "value"}[r]
}

// output is a response.
type output struct {
	Result  result
	Value   string        // found: the value
	Version hlc.Timestamp // the response's __ts; zero when it had none
	// RetMs is the wall clock in milliseconds when the response arrived;
	// far in the future for unknown.
	RetMs int64
}

// never is RetMs of an operation without response, and the upper bound of
// a deadline that is not known: far in the future, with room to add to it.
const never = math.MaxInt64 / 4

// clockMargin is how far the server's clock may be from the harness's when
// it reads the time for a request, in milliseconds. They read the same
// clock; the margin covers the rounding to milliseconds.
const clockMargin = 5

// state is one key as the model sees it.
type state struct {
	Exists bool
	Value  string
	// Version is the version of Value; zero when the write that stored it
	// got no response, until a later response reveals it.
	Version hlc.Timestamp
	// Floor is the highest version known to have been given to the key;
	// every later write must get a higher one.
	Floor hlc.Timestamp
	// DeadlineLo and DeadlineHi bound when the key expires (milliseconds);
	// both zero when it does not.
	DeadlineLo, DeadlineHi int64
}

// mayBeLive reports whether the key may exist for a request sent at callMs.
func (s state) mayBeLive(callMs int64) bool {
	return s.Exists && (s.DeadlineHi == 0 || callMs-clockMargin < s.DeadlineHi)
}

// mayBeGone reports whether the key may be missing (never set, deleted, or
// expired) for a request answered at retMs.
func (s state) mayBeGone(retMs int64) bool {
	return !s.Exists || (s.DeadlineHi != 0 && retMs+clockMargin >= s.DeadlineLo)
}

// gone is the key deleted or expired.
func (s state) gone() state { return state{Floor: s.Floor} }

// versionIs reports whether v can be the version of the stored value, and
// the state with that version known.
func (s state) versionIs(v hlc.Timestamp) (state, bool) {
	if !s.Version.IsZero() {
		return s, v == s.Version
	}
	if !v.After(s.Floor) {
		return s, false
	}
	s.Version, s.Floor = v, v
	return s, true
}

// step returns the states the key can be in after the operation, given the
// state before it; none when the operation cannot have answered what it
// did.
func step(s state, in input, out output) []state {
	retMs := out.RetMs
	if out.Result == unknown {
		retMs = never
	}
	// Expiry makes the state before the operation one of two, when the
	// operation's interval straddles the key's deadline.
	var before []state
	if s.mayBeLive(in.CallMs) {
		before = append(before, s)
	}
	if s.mayBeGone(retMs) {
		before = append(before, s.gone())
	}
	var after []state
	for _, b := range before {
		if a, ok := apply(b, in, out); ok {
			after = append(after, a)
		}
	}
	return after
}

// apply is the protocol's semantics on a key that is certainly live (with
// Exists) or certainly gone (without).
func apply(s state, in input, out output) (state, bool) {
	switch in.Verb {
	case verbGet:
		switch out.Result {
		case found:
			if !s.Exists || s.Value != out.Value {
				return s, false
			}
			return s.versionIs(out.Version)
		case missing:
			return s, !s.Exists
		}
	case verbSet:
		takes := in.Cond == always || !s.Exists || (in.Cond == nex && s.Value == in.Value)
		switch out.Result {
		case unknown:
			if !takes {
				return s, true
			}
			n := state{Exists: true, Value: in.Value, Floor: s.Floor}
			if in.PX > 0 {
				n.DeadlineLo, n.DeadlineHi = in.CallMs+in.PX, never
			}
			return n, true
		case applied:
			if !takes || !out.Version.After(s.Floor) {
				return s, false
			}
			n := state{Exists: true, Value: in.Value, Version: out.Version, Floor: out.Version}
			if in.PX > 0 {
				n.DeadlineLo, n.DeadlineHi = in.CallMs+in.PX, out.RetMs+in.PX
			}
			return n, true
		case notMet:
			if takes {
				return s, false
			}
			return s.versionIs(out.Version)
		}
	case verbDel, verbVDel:
		match := in.Verb == verbDel || s.Value == in.Value
		switch out.Result {
		case unknown:
			if s.Exists && match {
				return s.gone(), true
			}
			return s, true
		case deleted:
			if !s.Exists || !match {
				return s, false
			}
			s, ok := s.versionIs(out.Version)
			return s.gone(), ok
		case notMet:
			if in.Verb != verbVDel || !s.Exists || match {
				return s, false
			}
			return s.versionIs(out.Version)
		case missing:
			return s, !s.Exists
		}
	}
	return s, false
}

// storeModel is the porcupine model of the state store, one partition per
// key.
var storeModel = (&porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		parts := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, byKey[k])
		}
		return parts
	},
	Init: func() []any { return []any{state{}} },
	Step: func(s, in, out any) []any {
		next := step(s.(state), in.(input), out.(output))
		states := make([]any, len(next))
		for i, n := range next {
			states[i] = n
		}
		return states
	},
	DescribeOperation: func(in, out any) string { return describeOp(in.(input), out.(output)) },
	DescribeState:     func(s any) string { return describeState(s.(state)) },
}).ToModel()

func describeOp(in input, out output) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", in.Verb, in.Key)
	if in.Verb == verbSet || in.Verb == verbVDel {
		fmt.Fprintf(&b, " %s", in.Value)
	}
	switch in.Cond {
	case nx:
		b.WriteString(" NX")
	case nex:
		b.WriteString(" NEX")
	}
	if in.PX > 0 {
		fmt.Fprintf(&b, " PX %d", in.PX)
	}
	b.WriteString(" → ")
	switch out.Result {
	case found:
		fmt.Fprintf(&b, "%q", out.Value)
	default:
		b.WriteString(out.Result.String())
	}
	if !out.Version.IsZero() {
		fmt.Fprintf(&b, " @%s", out.Version)
	}
	return b.String()
}

func describeState(s state) string {
	if !s.Exists {
		return fmt.Sprintf("missing (floor %s)", s.Floor)
	}
	v := "unknown"
	if !s.Version.IsZero() {
		v = s.Version.String()
	}
	d := ""
	if s.DeadlineHi != 0 {
		hi := "?"
		if s.DeadlineHi < never {
			hi = time.UnixMilli(s.DeadlineHi).Format("15:04:05.000")
		}
		d = fmt.Sprintf(", expires %s..%s", time.UnixMilli(s.DeadlineLo).Format("15:04:05.000"), hi)
	}
	return fmt.Sprintf("%q @%s%s", s.Value, v, d)
}
