package bench

import (
	"fmt"

	"github.com/dssio/dss/internal/wire"
)

// verb is the command of a generated request.
type verb uint8

// The verbs the generator sends.
const (
	opSet verb = iota
	opGet
	opDel
	opVDel
	opKeyNotify
	numVerbs
)

var verbNames = [numVerbs]string{"SET", "GET", "DEL", "VDEL", "KEYNOTIFY"}

func (v verb) String() string { return verbNames[v] }

// outcome is what a valid response says happened.
type outcome uint8

// The outcomes the report counts per verb.
const (
	outOK      outcome = iota // +OK, :1, a GET value
	outMissing                // :0, $-1
	outNotMet                 // :-1
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "missing", "not_met"}

// errKind classifies what was wrong with a request.
type errKind uint8

// The kinds of errors, in report order.
const (
	errNone        errKind = iota
	errStatus              // __stat missing or not 200
	errPayload             // the payload is not a valid reply to the verb
	errReply               // the server answered -ERR
	errValueSize           // a GET returned a value of another size
	errTimestamp           // __ts missing, present where forbidden, or malformed
	errCorrelation         // correlation data of no outstanding request
	errPuback              // the request's PUBACK carried a failure reason code
	errTopic               // a message arrived on a topic nobody asked for
	errNotify              // a notification with a wrong payload or sequence
	errConnection          // the connection failed or the server disconnected
	numErrKinds
)

var errKindNames = [numErrKinds]string{
	"", "status", "payload", "error_reply", "value_size", "timestamp",
	"correlation", "puback", "topic", "notification", "connection",
}

func (k errKind) String() string { return errKindNames[k] }

// validate checks the response p to a request of verb v. valueSize is the
// size of every value the run stores, which a GET must return.
func validate(v verb, valueSize int, p *publish) (outcome, errKind) {
	if !p.hasStat || string(p.stat) != wire.StatusOK {
		return 0, errStatus
	}
	if p.hasTS && !wellFormedTimestamp(p.ts) {
		return 0, errTimestamp
	}
	b := p.payload
	if len(b) > 0 && b[0] == '-' {
		return 0, errReply
	}
	var out outcome
	switch {
	case string(b) == "+OK\r\n":
		out = outOK
	case string(b) == ":1\r\n":
		out = outOK
	case string(b) == ":0\r\n":
		out = outMissing
	case string(b) == ":-1\r\n":
		out = outNotMet
	case string(b) == "$-1\r\n", string(b) == "_\r\n":
		out = outMissing
	case len(b) > 0 && b[0] == '$':
		if v != opGet {
			return 0, errPayload
		}
		n, ok := bulkLen(b)
		if !ok {
			return 0, errPayload
		}
		if n != valueSize {
			return 0, errValueSize
		}
		if !p.hasTS {
			return 0, errTimestamp
		}
		return outOK, errNone
	default:
		return 0, errPayload
	}
	// Which replies each verb may get (PROTOCOL.md, sections 3 and 4), and
	// whether __ts must (1), must not (-1) or may (0) be there.
	var allowed bool
	ts := 0
	switch v {
	case opSet:
		allowed = string(b) == "+OK\r\n" || out == outNotMet
		ts = 1
	case opGet:
		allowed = out == outMissing && b[0] == '$' || string(b) == "_\r\n"
		ts = -1
	case opDel:
		allowed = b[0] == ':' && out != outNotMet
		if out == outOK {
			ts = 1
		}
	case opVDel:
		allowed = b[0] == ':'
		if out == outOK {
			ts = 1
		}
	case opKeyNotify:
		allowed = string(b) == "+OK\r\n" || string(b) == ":0\r\n"
	}
	switch {
	case !allowed:
		return 0, errPayload
	case ts == 1 && !p.hasTS, ts == -1 && p.hasTS:
		return 0, errTimestamp
	}
	return out, errNone
}

// bulkLen checks that b is exactly one bulk string and returns its length.
func bulkLen(b []byte) (int, bool) {
	i, n := 1, 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' && i < 11 {
		n = n*10 + int(b[i]-'0')
		i++
	}
	if i == 1 || len(b) < i+2 || b[i] != '\r' || b[i+1] != '\n' {
		return 0, false
	}
	if len(b) != i+2+n+2 || b[len(b)-2] != '\r' || b[len(b)-1] != '\n' {
		return 0, false
	}
	return n, true
}

// wellFormedTimestamp reports whether b has the shape of an HLC,
// digits:digits:node, without the allocation of hlc.Parse.
func wellFormedTimestamp(b []byte) bool {
	i := 0
	for part := 0; part < 2; part++ {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start || i >= len(b) || b[i] != ':' {
			return false
		}
		i++
	}
	return true
}

// describe renders a response for an error sample.
func describe(v verb, p *publish) string {
	payload := p.payload
	if len(payload) > 64 {
		payload = payload[:64]
	}
	s := fmt.Sprintf("%s: payload %q", v, payload)
	if p.hasStat {
		s += fmt.Sprintf(" __stat=%q", p.stat)
	} else {
		s += " no __stat"
	}
	if p.hasTS {
		s += fmt.Sprintf(" __ts=%q", p.ts)
	} else {
		s += " no __ts"
	}
	return s
}
