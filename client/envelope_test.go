package client

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
	"github.com/dssio/dss/internal/wire"
)

// recorder keeps the requests a client sends.
type recorder struct {
	mu   sync.Mutex
	pubs []*paho.Publish
}

func (r *recorder) hook(p *paho.Publish) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pubs = append(r.pubs, p)
}

func (r *recorder) last(t *testing.T) *paho.Publish {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pubs) == 0 {
		t.Fatal("no request sent")
	}
	return r.pubs[len(r.pubs)-1]
}

// dialRecorded connects a client whose requests are recorded as sent.
func dialRecorded(t *testing.T, addr, id string) (*Client, *recorder) {
	t.Helper()
	cfg := testConfig(addr)
	cfg.ClientID = id
	c, err := newClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	c.publishHook = rec.hook
	c.start()
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.awaitConn(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func userProps(p *paho.Publish) map[string]string {
	m := make(map[string]string)
	for _, u := range p.Properties.User {
		m[u.Key] = u.Value
	}
	return m
}

func TestRequestEnvelope(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c, rec := dialRecorded(t, s.Addr(), "client-id1")
	ctx := ctxT(t)

	lock := mustSet(t, c, "lock", "me")
	p := rec.last(t)
	if p.QoS != 1 || p.Topic != wire.RequestTopic || p.Retain {
		t.Fatalf("QoS %d topic %q retain %v", p.QoS, p.Topic, p.Retain)
	}
	wantResp := "clients/636C69656E742D696431/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke/response"
	if p.Properties.ResponseTopic != wantResp {
		t.Fatalf("response topic %q, want %q", p.Properties.ResponseTopic, wantResp)
	}
	if wire.ForbiddenResponseTopic(p.Properties.ResponseTopic) {
		t.Fatal("response topic is one the server forbids")
	}
	if p.Properties.ContentType != "application/octet-stream" {
		t.Fatalf("content type %q", p.Properties.ContentType)
	}
	if len(p.Properties.CorrelationData) != 16 {
		t.Fatalf("correlation data %x, want 16 bytes", p.Properties.CorrelationData)
	}
	if p.Properties.MessageExpiry == nil || *p.Properties.MessageExpiry == 0 || *p.Properties.MessageExpiry > 10 {
		t.Fatalf("message expiry %v, want the seconds left of the context (at most 10)", p.Properties.MessageExpiry)
	}
	up := userProps(p)
	if up["__protVer"] != "1.0" || up["__srcId"] != "client-id1" {
		t.Fatalf("user properties %v", up)
	}
	if _, ok := up["__ft"]; ok {
		t.Fatal("__ft sent without a fencing token")
	}
	ts1, err := hlc.Parse(up["__ts"])
	if err != nil || ts1.Node != "client-id1" {
		t.Fatalf("__ts %q: %v", up["__ts"], err)
	}
	if string(p.Payload) != "*3\r\n$3\r\nSET\r\n$4\r\nlock\r\n$2\r\nme\r\n" {
		t.Fatalf("payload %q", p.Payload)
	}
	firstCorr := string(p.Properties.CorrelationData)

	if _, err := c.Set(ctx, "res", []byte("v"), IfMissing, TTL(1500*time.Microsecond), FencingToken(lock.Version)); err != nil {
		t.Fatal(err)
	}
	p = rec.last(t)
	up = userProps(p)
	if up["__ft"] != lock.Version.String() {
		t.Fatalf("__ft %q, want %q", up["__ft"], lock.Version.String())
	}
	ts2, _ := hlc.Parse(up["__ts"])
	if !ts2.After(ts1) || !ts2.After(lock.Version) {
		t.Fatalf("__ts %v not after the earlier %v and the version seen %v", ts2, ts1, lock.Version)
	}
	if string(p.Properties.CorrelationData) == firstCorr {
		t.Fatal("correlation data reused")
	}
	// The options in the vendor's order; a 1.5 ms TTL is rounded up.
	if want := "*6\r\n$3\r\nSET\r\n$3\r\nres\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nPX\r\n$1\r\n2\r\n"; string(p.Payload) != want {
		t.Fatalf("payload %q, want %q", p.Payload, want)
	}

	for _, tt := range []struct {
		do   func() error
		want string
	}{
		{func() error { _, _, err := c.Get(ctx, "k"); return err }, "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"},
		{func() error { _, err := c.Del(ctx, "k"); return err }, "*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n"},
		{func() error { _, err := c.VDel(ctx, "k", []byte("v")); return err }, "*3\r\n$4\r\nVDEL\r\n$1\r\nk\r\n$1\r\nv\r\n"},
		{func() error { _, err := c.Set(ctx, "k", []byte("v"), IfMissingOrEqual); return err }, "*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$3\r\nNEX\r\n"},
		{func() error { return c.keyNotify(ctx, "k", false) }, "*2\r\n$9\r\nKEYNOTIFY\r\n$1\r\nk\r\n"},
		{func() error { return c.keyNotify(ctx, "k", true) }, "*3\r\n$9\r\nKEYNOTIFY\r\n$1\r\nk\r\n$4\r\nSTOP\r\n"},
	} {
		if err := tt.do(); err != nil {
			t.Fatalf("%q: %v", tt.want, err)
		}
		if got := rec.last(t).Payload; string(got) != tt.want {
			t.Fatalf("payload %q, want %q", got, tt.want)
		}
	}
}

func TestNoMessageExpiryWithoutDeadline(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c, rec := dialRecorded(t, s.Addr(), "no-deadline")
	if _, _, err := c.Get(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if e := rec.last(t).Properties.MessageExpiry; e != nil {
		t.Fatalf("message expiry %d without a deadline", *e)
	}
}

func fakeResponse(payload string, user ...string) *paho.Publish {
	p := &paho.Publish{Payload: []byte(payload), Properties: &paho.PublishProperties{}}
	for i := 0; i+1 < len(user); i += 2 {
		p.Properties.User = append(p.Properties.User, paho.UserProperty{Key: user[i], Value: user[i+1]})
	}
	return p
}

func TestDecodeResponse(t *testing.T) {
	const v = "001700000000000:00003:node"
	ok := func(p *paho.Publish) response {
		t.Helper()
		r, err := decodeResponse(p)
		if err != nil {
			t.Fatalf("decode %q: %v", p.Payload, err)
		}
		return r
	}
	r := ok(fakeResponse("+OK\r\n", "__stat", "200", "__ts", v, "__protVer", "1.0"))
	if !r.hasVersion || r.version.String() != v {
		t.Fatalf("version %v", r.version)
	}
	if r := ok(fakeResponse("$-1\r\n", "__stat", "200")); r.hasVersion {
		t.Fatal("version without __ts")
	}

	for _, tt := range []struct {
		name string
		p    *paho.Publish
		want error
	}{
		{"no status", fakeResponse("+OK\r\n"), ErrBadResponse},
		{"bad version", fakeResponse("+OK\r\n", "__stat", "200", "__ts", "yesterday"), ErrBadResponse},
		{"bad payload", fakeResponse("OK", "__stat", "200"), ErrBadResponse},
		{"empty payload", fakeResponse("", "__stat", "200"), ErrBadResponse},
		{"major version 2", fakeResponse("+OK\r\n", "__stat", "200", "__protVer", "2.0"), ErrBadResponse},
		{"known error", fakeResponse("-ERR the quota has been exceeded\r\n", "__stat", "200"), ErrQuotaExceeded},
	} {
		if _, err := decodeResponse(tt.p); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}

	_, err := decodeResponse(fakeResponse("", "__stat", "505", "__stMsg", "version 2.0 not supported"))
	var se *StatusError
	if !errors.As(err, &se) || se.Status != "505" || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("505: %v", err)
	}
	_, err = decodeResponse(fakeResponse("-ERR something new\r\n", "__stat", "200"))
	var srv *ServerError
	if !errors.As(err, &srv) || srv.Text != "something new" {
		t.Fatalf("unknown error text: %v", err)
	}
	for _, known := range serverErrors {
		if errors.Is(err, known) {
			t.Fatalf("unknown text matches %q", known.Text)
		}
	}
}

func TestReplyMapping(t *testing.T) {
	dec := func(payload string, user ...string) response {
		r, err := decodeResponse(fakeResponse(payload, append([]string{"__stat", "200"}, user...)...))
		if err != nil {
			t.Fatalf("%q: %v", payload, err)
		}
		return r
	}
	const v = "1:0:n"
	if r, err := setResult(dec("+OK\r\n", "__ts", v)); err != nil || !r.Applied {
		t.Fatalf("SET +OK: %+v %v", r, err)
	}
	if _, err := setResult(dec("+OK\r\n")); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("SET +OK without version: %v", err)
	}
	for _, notMet := range []string{":-1\r\n", ":0\r\n", "$-1\r\n"} {
		if r, err := setResult(dec(notMet, "__ts", v)); err != nil || r.Applied {
			t.Fatalf("SET %q: %+v %v", notMet, r, err)
		}
	}
	if _, err := setResult(dec(":1\r\n")); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("SET :1: %v", err)
	}
	if _, found, err := getResult(dec(":-1\r\n")); err != nil || found {
		t.Fatalf("GET :-1: %v %v", found, err)
	}
	if _, _, err := getResult(dec("+OK\r\n")); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("GET +OK: %v", err)
	}
	if _, err := delResult(dec("$1\r\nx\r\n")); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("DEL bulk: %v", err)
	}
	if _, err := delResult(dec(":-2\r\n")); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("DEL :-2: %v", err)
	}
}

func TestResponseRouting(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	ch := make(chan *paho.Publish, 1)
	c.mu.Lock()
	c.calls["mine"] = ch
	c.mu.Unlock()
	deliver := func(topic, corr string) {
		p := fakeResponse("+OK\r\n", "__stat", "200")
		p.Topic, p.Properties.CorrelationData = topic, []byte(corr)
		if _, err := c.received(paho.PublishReceived{Packet: p}); err != nil {
			t.Fatal(err)
		}
	}
	deliver(c.respTopic, "other")
	deliver("clients/other/response", "mine")
	select {
	case p := <-ch:
		t.Fatalf("delivered a response with foreign correlation or topic: %v", p)
	default:
	}
	deliver(c.respTopic, "mine")
	select {
	case <-ch:
	default:
		t.Fatal("matching response not delivered")
	}
}

func TestEveryProtocolErrorHasASentinel(t *testing.T) {
	for _, e := range wire.Errors {
		s, ok := serverErrors[e.Text()]
		if !ok {
			t.Errorf("no sentinel for %q", e.Text())
			continue
		}
		if got := serverErrorFor(e.Text()); got != s || !errors.Is(fmtWrap(got), s) {
			t.Errorf("%q does not map to its sentinel", e.Text())
		}
	}
	if len(serverErrors) != len(wire.Errors) {
		t.Errorf("%d sentinels for %d protocol errors", len(serverErrors), len(wire.Errors))
	}
	// A new *ServerError with a known text matches the sentinel too.
	if !errors.Is(&ServerError{Text: ErrSyntax.Text}, ErrSyntax) {
		t.Error("ServerError.Is does not compare texts")
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("context"), err) }
