package wire

import (
	"bytes"
	"math"

	"github.com/dssio/dss/internal/resp"
)

// Verb is the command of a request.
type Verb uint8

// The verbs of the protocol.
const (
	VerbSet Verb = iota + 1
	VerbGet
	VerbDel
	VerbVDel
	VerbKeyNotify
	// VerbScan lists keys a page at a time, as the vendor's newer clients
	// ask (docs/protocol.md).
	VerbScan
	// VerbKeyInfo reads a key with its expiry and fencing token, dss's
	// extension (docs/protocol.md).
	VerbKeyInfo
)

var verbNames = [...]string{VerbSet: "SET", VerbGet: "GET", VerbDel: "DEL", VerbVDel: "VDEL", VerbKeyNotify: "KEYNOTIFY", VerbScan: "SCAN", VerbKeyInfo: "KEYINFO"}

func (v Verb) String() string {
	if int(v) < len(verbNames) && verbNames[v] != "" {
		return verbNames[v]
	}
	return "UNKNOWN"
}

// Condition is the NX or NEX option of a SET.
type Condition uint8

// The SET conditions.
const (
	// Always sets unconditionally.
	Always Condition = iota
	// IfMissing (NX) sets only when the key does not exist.
	IfMissing
	// IfMissingOrEqual (NEX) sets only when the key does not exist or
	// already holds the new value.
	IfMissingOrEqual
)

// Request is a decoded request payload. Key and Value alias the payload.
type Request struct {
	Verb  Verb
	Key   []byte
	Value []byte // SET and VDEL
	Cond  Condition
	// PX is the SET's time to live in milliseconds; 0 means none.
	PX int64
	// Stop marks KEYNOTIFY STOP.
	Stop bool
	// Pattern marks KEYNOTIFY PATTERN, dss's extension: Key is a pattern
	// (MatchPattern) and the registration is for every key it matches.
	Pattern bool
	// SCAN: Key is the pattern (it may be empty); Token, when HasToken is
	// set, the continuation token of the previous page.
	Token    []byte
	HasToken bool
}

// verbOf returns the verb a command's name stands for, in any case of
// its ASCII letters as Redis reads them, or 0 for none.
func verbOf(name []byte) Verb {
	var upper [len("KEYNOTIFY")]byte // the longest name
	if len(name) > len(upper) {
		return 0
	}
	for i, c := range name {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper[i] = c
	}
	switch string(upper[:len(name)]) { // compared without a copy
	case "SET":
		return VerbSet
	case "GET":
		return VerbGet
	case "KEYINFO":
		return VerbKeyInfo
	case "DEL":
		return VerbDel
	case "VDEL":
		return VerbVDel
	case "SCAN":
		return VerbScan
	case "KEYNOTIFY":
		return VerbKeyNotify
	}
	return 0
}

// ParseRequest decodes a RESP3 request payload. scratch, which may be nil,
// is reused for the argument list. The error is always one of this
// package's protocol errors.
func ParseRequest(payload []byte, scratch [][]byte) (Request, [][]byte, *Error) {
	args, err := resp.ParseArray(payload, scratch)
	if err != nil || len(args) == 0 {
		return Request{}, args, ErrSyntax
	}
	var r Request
	r.Verb = verbOf(args[0])
	switch r.Verb {
	case VerbSet:
		if len(args) < 3 {
			return r, args, ErrWrongArgs
		}
	case VerbGet:
		if len(args) != 2 {
			return r, args, ErrWrongArgs
		}
	case VerbKeyInfo:
		if len(args) != 2 {
			return r, args, ErrWrongArgs
		}
	case VerbDel:
		if len(args) != 2 {
			return r, args, ErrWrongArgs
		}
	case VerbVDel:
		if len(args) != 3 {
			return r, args, ErrWrongArgs
		}
	case VerbScan:
		if len(args) != 2 && len(args) != 3 {
			return r, args, ErrWrongArgs
		}
		// An empty pattern matches only the empty key, which no key is:
		// an empty listing, not an error.
		r.Key = args[1]
		if len(args) == 3 {
			r.Token, r.HasToken = args[2], true
		}
		return r, args, nil
	case VerbKeyNotify:
		if len(args) < 2 || len(args) > 4 {
			return r, args, ErrWrongArgs
		}
	default:
		return Request{}, args, ErrUnknownCommand
	}
	r.Key = args[1]
	if len(r.Key) == 0 {
		return r, args, ErrEmptyKey
	}
	switch r.Verb {
	case VerbSet:
		r.Value = args[2]
		if e := parseSetOptions(&r, args[3:]); e != nil {
			return r, args, e
		}
	case VerbVDel:
		r.Value = args[2]
	case VerbKeyNotify:
		// STOP, and dss's PATTERN, in either order, each at most once.
		for _, o := range args[2:] {
			switch {
			case bytes.EqualFold(o, []byte("STOP")) && !r.Stop:
				r.Stop = true
			case bytes.EqualFold(o, []byte("PATTERN")) && !r.Pattern:
				r.Pattern = true
			default:
				return r, args, ErrSyntax
			}
		}
	}
	return r, args, nil
}

// parseSetOptions reads NX, NEX and PX in any order. A repeated, conflicting
// or unknown option, or a PX that is not a positive integer, is a syntax
// error.
func parseSetOptions(r *Request, opts [][]byte) *Error {
	for i := 0; i < len(opts); i++ {
		switch o := opts[i]; {
		case bytes.EqualFold(o, []byte("NX")), bytes.EqualFold(o, []byte("NEX")):
			if r.Cond != Always {
				return ErrSyntax
			}
			r.Cond = IfMissing
			if len(o) == 3 {
				r.Cond = IfMissingOrEqual
			}
		case bytes.EqualFold(o, []byte("PX")):
			if r.PX != 0 || i+1 == len(opts) {
				return ErrSyntax
			}
			i++
			ms, ok := parsePositive(opts[i])
			if !ok {
				return ErrSyntax
			}
			r.PX = ms
		default:
			return ErrSyntax
		}
	}
	return nil
}

// maxPX bounds a time to live to about 290 years, so that a deadline
// computed from it cannot overflow.
const maxPX = math.MaxInt64 / 1000

func parsePositive(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
		if v > maxPX {
			return 0, false
		}
	}
	return v, v > 0
}
