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
	versioned := engine.Op{Result: engine.Result{Version: v, HasVersion: true}}
	if p := Properties(&versioned); len(p) != 3 || p[2] != (Property{wire.PropTimestamp, v.String()}) {
		t.Errorf("properties %v", p)
	}
	if p := Properties(&engine.Op{}); len(p) != 2 || p[0] != (Property{wire.PropStatus, "200"}) || p[1] != (Property{wire.PropProtocolVersion, "1.0"}) {
		t.Errorf("properties %v", p)
	}
	withTTL := engine.Op{Result: engine.Result{Version: v, HasVersion: true, TTL: 1500}}
	if p := Properties(&withTTL); len(p) != 4 || p[3] != (Property{wire.PropTTL, "1500"}) {
		t.Errorf("properties of a GET with dss-ttl %v", p)
	}
	withTTL.Result.Err = wire.ErrBusy
	if p := Properties(&withTTL); len(p) != 2 {
		t.Errorf("properties of an error %v", p)
	}
	if got := string(NotificationPayload(&store.Change{Deleted: true})); got != "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n" {
		t.Errorf("delete notification %q", got)
	}
	if got := string(NotificationPayload(&store.Change{Value: []byte("x")})); got != "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nx\r\n" {
		t.Errorf("set notification %q", got)
	}
}

func TestExtensionPayloads(t *testing.T) {
	keys := engine.Result{Keys: []string{"a", "b\r\n"}}
	if got := string(Payload(&engine.Op{Request: wire.Request{Verb: wire.VerbScan}, Result: keys})); got != "*1\r\n*2\r\n$1\r\na\r\n$3\r\nb\r\n\r\n" {
		t.Errorf("last SCAN page %q", got)
	}
	more := engine.Result{More: true, Position: wire.ScanPosition{ID: 7, Next: 9}}
	want := "*2\r\n*0\r\n$" + itoa(len(wire.AppendScanToken(nil, more.Position))) + "\r\n" + string(wire.AppendScanToken(nil, more.Position)) + "\r\n"
	if got := string(Payload(&engine.Op{Request: wire.Request{Verb: wire.VerbScan}, Result: more})); got != want {
		t.Errorf("SCAN page with a token %q, want %q", got, want)
	}
	info := engine.Result{Found: true, Value: []byte("v"), Now: 100}
	info.Info.Deadline = 1100
	if got := string(Payload(&engine.Op{Request: wire.Request{Verb: wire.VerbKeyInfo}, Result: info})); got != "*3\r\n$1\r\nv\r\n$4\r\n1000\r\n$0\r\n\r\n" {
		t.Errorf("KEYINFO %q", got)
	}
	if got := string(Payload(&engine.Op{Request: wire.Request{Verb: wire.VerbKeyInfo}})); got != "$-1\r\n" {
		t.Errorf("KEYINFO of a missing key %q", got)
	}
}

func TestScanPageBytes(t *testing.T) {
	if n := ScanPageBytes(0, 10, 10); n != 0 {
		t.Errorf("no limit: %d, want the engine's default (0)", n)
	}
	if n := ScanPageBytes(1<<28, 10, 10); n != engine.ScanReplyBytes {
		t.Errorf("a large limit: %d, want the engine's bound", n)
	}
	if n := ScanPageBytes(20000, 100, 16); n != 20000-8192-116 {
		t.Errorf("20000 bytes: %d", n)
	}
	if n := ScanPageBytes(10000, 100, 16); n != 5000 {
		t.Errorf("a small limit: %d, want half of it", n)
	}
}

func TestRefusal(t *testing.T) {
	payload, props := Refusal(ReasonNoCorrelation)
	if string(payload) != "-ERR "+ReasonNoCorrelation+"\r\n" || len(props) != 3 ||
		props[0] != (Property{wire.PropStatus, "400"}) || props[1] != (Property{wire.PropStatusMessage, ReasonNoCorrelation}) {
		t.Errorf("refusal %q %v", payload, props)
	}
	for topic, want := range map[string]bool{"a/b": true, "": false, "a/+": false, "a/#": false, wire.RequestTopic: false} {
		if MayAnswerOn(topic) != want {
			t.Errorf("MayAnswerOn(%q) = %v", topic, !want)
		}
	}
	if NeedsQoS1(true) != ReasonNeedsQoS1 || NeedsQoS1(false) != ReasonNeedsQoS1Correlation {
		t.Error("NeedsQoS1")
	}
}
