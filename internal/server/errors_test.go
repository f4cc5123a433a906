package server_test

import (
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/wire"
)

func future(d time.Duration) string {
	return hlc.Timestamp{Wall: time.Now().Add(d).UnixMilli(), Node: "client"}.String()
}

// TestEveryErrorText reaches each error of PROTOCOL.md section 5 that this
// server can produce, and checks the exact payload.
func TestEveryErrorText(t *testing.T) {
	_, c := start(t)
	now := dsstest.Now()
	// A protected key for the fencing errors.
	token := expect(t, "lock", c.Set([]string{"lock", "me", "NEX", "PX", "60000"}), "+OK\r\n", "any")
	expect(t, "protect", c.Request(dsstest.Cmd("SET", "protected", "v"), ts(now), ft(token.String())), "+OK\r\n", "any")
	older := hlc.Timestamp{Wall: token.Wall - 1, Node: token.Node}.String()

	tests := []struct {
		name    string
		payload []byte
		user    []paho.UserProperty
		want    *wire.Error
	}{
		{"timestamp too far ahead", dsstest.Cmd("SET", "k", "v"), []paho.UserProperty{ts(future(2 * time.Minute))}, wire.ErrTimestampSkew},
		{"fencing token required", dsstest.Cmd("SET", "protected", "w"), []paho.UserProperty{ts(now)}, wire.ErrFencingRequired},
		{"fencing token too far ahead", dsstest.Cmd("SET", "protected", "w"), []paho.UserProperty{ts(now), ft(future(2 * time.Minute))}, wire.ErrFencingSkew},
		{"fencing token lower", dsstest.Cmd("SET", "protected", "w"), []paho.UserProperty{ts(now), ft(older)}, wire.ErrFencingLower},
		{"syntax error: not RESP", []byte("SET k v"), nil, wire.ErrSyntax},
		{"syntax error: empty payload", nil, nil, wire.ErrSyntax},
		{"syntax error: bad option", dsstest.Cmd("SET", "k", "v", "XX"), []paho.UserProperty{ts(now)}, wire.ErrSyntax},
		{"syntax error: NX and NEX", dsstest.Cmd("SET", "k", "v", "NX", "NEX"), []paho.UserProperty{ts(now)}, wire.ErrSyntax},
		{"syntax error: PX 0", dsstest.Cmd("SET", "k", "v", "PX", "0"), []paho.UserProperty{ts(now)}, wire.ErrSyntax},
		{"syntax error: PX not a number", dsstest.Cmd("SET", "k", "v", "PX", "1.5"), []paho.UserProperty{ts(now)}, wire.ErrSyntax},
		{"syntax error: KEYNOTIFY option", dsstest.Cmd("KEYNOTIFY", "k", "GO"), nil, wire.ErrSyntax},
		{"unknown command", dsstest.Cmd("INCR", "k"), nil, wire.ErrUnknownCommand},
		{"wrong number of arguments: GET", dsstest.Cmd("GET"), nil, wire.ErrWrongArgs},
		{"wrong number of arguments: SET", dsstest.Cmd("SET", "k"), []paho.UserProperty{ts(now)}, wire.ErrWrongArgs},
		{"wrong number of arguments: VDEL", dsstest.Cmd("VDEL", "k"), nil, wire.ErrWrongArgs},
		{"missing timestamp", dsstest.Cmd("SET", "k", "v"), nil, wire.ErrMissingTimestamp},
		{"malformed timestamp", dsstest.Cmd("SET", "k", "v"), []paho.UserProperty{ts("yesterday")}, wire.ErrMalformedTimestamp},
		{"malformed fencing token", dsstest.Cmd("SET", "k", "v"), []paho.UserProperty{ts(now), ft("12:x:y")}, wire.ErrMalformedTimestamp},
		{"malformed timestamp on GET", dsstest.Cmd("GET", "k"), []paho.UserProperty{ts("1:2")}, wire.ErrMalformedTimestamp},
		{"key length zero", dsstest.Cmd("GET", ""), nil, wire.ErrEmptyKey},
		{"key length zero on SET", dsstest.Cmd("SET", "", "v"), []paho.UserProperty{ts(now)}, wire.ErrEmptyKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, tt.name, c.Request(tt.payload, tt.user...), errPayload(tt.want), "")
		})
	}
	// Nothing of the refused requests was stored.
	expect(t, "k untouched", c.Request(dsstest.Cmd("GET", "k")), "$-1\r\n", "")
	expect(t, "protected untouched", c.Request(dsstest.Cmd("GET", "protected")), "$1\r\nv\r\n", "any")
}

// TestBadRequestsHarmNobody sends a burst of malformed requests from one
// client while another works normally.
func TestBadRequestsHarmNobody(t *testing.T) {
	s, bad := start(t)
	good := dsstest.Dial(t, s.Addr(), "good")
	good.Set([]string{"k", "v"})
	junk := [][]byte{
		nil, []byte("*"), []byte("*1\r\n$5\r\nab"), []byte("*2\r\n$3\r\nGET\r\n$-1\r\n"),
		[]byte("*99999999\r\n"), []byte("$3\r\nGET\r\n"), []byte("*1\r\n$99999999999\r\n"),
		dsstest.Cmd("SET"), dsstest.Cmd("KEYNOTIFY"), []byte("\x00\xff\r\n"),
	}
	var pending []chan *paho.Publish
	for i := 0; i < 20; i++ {
		for _, j := range junk {
			pending = append(pending, bad.Send(j, ts("not a timestamp")))
		}
	}
	for _, ch := range pending {
		p := bad.Await(ch)
		if len(p.Payload) == 0 || p.Payload[0] != '-' {
			t.Fatalf("malformed request answered with %q", p.Payload)
		}
	}
	// The bad client's connection still works, and so does everyone else's.
	expect(t, "bad client GET", bad.Request(dsstest.Cmd("GET", "k")), "$1\r\nv\r\n", "any")
	expect(t, "good client GET", good.Request(dsstest.Cmd("GET", "k")), "$1\r\nv\r\n", "any")
}
