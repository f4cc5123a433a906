package service

import (
	"testing"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/engine"
	"github.com/dssio/dss/internal/store"
	"github.com/dssio/dss/internal/wire"
)

func cmd(args ...string) []byte {
	b := []byte("*" + itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestPrepareOrderOfChecks(t *testing.T) {
	lim := Limits{MaxKeySize: 4, MaxValueSize: 4}
	ts := "001700000000000:00000:n"
	cases := []struct {
		name    string
		payload []byte
		env     Envelope
		may     func(*wire.Request) bool
		want    *wire.Error
	}{
		{"syntax first", []byte("*1\r\n"), Envelope{}, func(*wire.Request) bool { return false }, wire.ErrSyntax},
		{"then authorization", cmd("GET", "k"), Envelope{}, func(*wire.Request) bool { return false }, wire.ErrNotAuthorized},
		{"key size", cmd("GET", "kkkkk"), Envelope{}, nil, wire.ErrKeyTooLong},
		{"value size", cmd("SET", "k", "vvvvv"), Envelope{Timestamp: ts, HasTimestamp: true}, nil, wire.ErrValueTooLong},
		{"missing timestamp", cmd("SET", "k", "v"), Envelope{}, nil, wire.ErrMissingTimestamp},
		{"malformed timestamp", cmd("GET", "k"), Envelope{Timestamp: "x", HasTimestamp: true}, nil, wire.ErrMalformedTimestamp},
		{"malformed token", cmd("DEL", "k"), Envelope{FencingToken: "x", HasFencingToken: true}, nil, wire.ErrMalformedTimestamp},
		{"ok", cmd("SET", "k", "v"), Envelope{Timestamp: ts, HasTimestamp: true}, nil, nil},
	}
	for _, c := range cases {
		var op engine.Op
		if got := Prepare(&op, c.payload, &c.env, lim, c.may); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestEnvelope(t *testing.T) {
	var e Envelope
	for _, p := range [][2]string{
		{"__ts", "1:0:a"}, {"__ft", "2:0:b"}, {"__protVer", "1.2"}, {"aio-persistence", "TRUE"},
		{"dss-consistency", "stale"}, {"__srcId", "me"}, {"$partition", "x"},
	} {
		e.Add(p[0], p[1])
	}
	want := Envelope{Timestamp: "1:0:a", HasTimestamp: true, FencingToken: "2:0:b", HasFencingToken: true,
		Version: "1.2", Persist: true, Stale: true, SourceID: "me"}
	if e != want {
		t.Fatalf("%+v, want %+v", e, want)
	}
	if !e.Supported() {
		t.Fatal("1.2 not supported")
	}
	var op engine.Op
	if err := Prepare(&op, cmd("SET", "k", "v"), &e, Limits{MaxKeySize: 9, MaxValueSize: 9}, nil); err != nil {
		t.Fatal(err)
	}
	if op.Volatile || !op.Stale || !op.HasTimestamp || !op.HasFence || op.Timestamp.Wall != 1 || op.Fence.Wall != 2 {
		t.Fatalf("op %+v", op)
	}
}

func TestPayloadAndProperties(t *testing.T) {
	v := hlc.Timestamp{Wall: 5, Node: "n"}
	cases := []struct {
		verb   wire.Verb
		stop   bool
		result engine.Result
		want   string
	}{
		{wire.VerbGet, false, engine.Result{Found: true, Value: []byte("v")}, "$1\r\nv\r\n"},
		{wire.VerbGet, false, engine.Result{}, "$-1\r\n"},
		{wire.VerbSet, false, engine.Result{Outcome: store.Applied}, "+OK\r\n"},
		{wire.VerbSet, false, engine.Result{Outcome: store.NotMet}, ":-1\r\n"},
		{wire.VerbDel, false, engine.Result{Outcome: store.Applied}, ":1\r\n"},
		{wire.VerbDel, false, engine.Result{Outcome: store.Missing}, ":0\r\n"},
		{wire.VerbKeyNotify, true, engine.Result{}, ":0\r\n"},
		{wire.VerbKeyNotify, true, engine.Result{Watched: true}, "+OK\r\n"},
		{wire.VerbKeyNotify, false, engine.Result{}, "+OK\r\n"},
		{wire.VerbSet, false, engine.Result{Err: wire.ErrSyntax}, "-ERR syntax error\r\n"},
	}
	for _, c := range cases {
		op := engine.Op{Request: wire.Request{Verb: c.verb, Stop: c.stop}, Result: c.result}
		if got := string(Payload(&op)); got != c.want {
			t.Errorf("%v %+v: %q, want %q", c.verb, c.result, got, c.want)
		}
	}
	op := engine.Op{Result: engine.Result{Version: v, HasVersion: true, Err: wire.ErrSyntax}}
	if HasVersion(&op) {
		t.Error("an error carries a version")
	}
	if p := Properties(v, true); len(p) != 3 || p[2] != (Property{wire.PropTimestamp, v.String()}) {
		t.Errorf("properties %v", p)
	}
	if p := Properties(v, false); len(p) != 2 || p[0] != (Property{wire.PropStatus, "200"}) || p[1] != (Property{wire.PropProtocolVersion, "1.0"}) {
		t.Errorf("properties %v", p)
	}
	if got := string(NotificationPayload(&store.Change{Deleted: true})); got != "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n" {
		t.Errorf("delete notification %q", got)
	}
	if got := string(NotificationPayload(&store.Change{Value: []byte("x")})); got != "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nx\r\n" {
		t.Errorf("set notification %q", got)
	}
}
