package client

import (
	"errors"
	"testing"
	"time"

	"github.com/dssio/dss/hlc"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func TestSetGetDel(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	ctx := ctxT(t)

	if _, found, err := c.Get(ctx, "k"); err != nil || found {
		t.Fatalf("Get missing: found %v, err %v", found, err)
	}
	r := mustSet(t, c, "k", "v1")
	if !r.Applied || r.Version.IsZero() || r.Version.Node != "test" {
		t.Fatalf("Set: %+v", r)
	}
	e, found, err := c.Get(ctx, "k")
	if err != nil || !found || string(e.Value) != "v1" || e.Version != r.Version {
		t.Fatalf("Get: %+v %q found %v err %v; want v1 at %v", e, e.Value, found, err, r.Version)
	}
	r2 := mustSet(t, c, "k", "v2")
	if !r2.Version.After(r.Version) {
		t.Fatalf("second version %v not after %v", r2.Version, r.Version)
	}
	d, err := c.Del(ctx, "k")
	if err != nil || !d.Deleted || d.Version != r2.Version {
		t.Fatalf("Del: %+v, %v; want deleted at %v", d, err, r2.Version)
	}
	d, err = c.Del(ctx, "k")
	if err != nil || d.Deleted || d.Mismatch {
		t.Fatalf("Del missing: %+v, %v", d, err)
	}
}

func TestBinaryKeysAndValues(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	key := "k\x00\r\n\xff$3\r\n"
	for _, v := range []string{"", "\x00", "\r\n", "$-1\r\n", "-ERR x\r\n", string([]byte{0xff, 0xfe, 0, 1, 2})} {
		mustSet(t, c, key, v)
		e, found, err := c.Get(ctxT(t), key)
		if err != nil || !found || string(e.Value) != v {
			t.Fatalf("Get after Set %q: %q found %v err %v", v, e.Value, found, err)
		}
	}
	// An empty value exists, with a version; it is not a missing key.
	mustSet(t, c, "empty", "")
	e, found, err := c.Get(ctxT(t), "empty")
	if err != nil || !found || len(e.Value) != 0 || e.Version.IsZero() {
		t.Fatalf("empty value: %+v found %v err %v", e, found, err)
	}
}

func TestSetConditions(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())

	first := mustSet(t, c, "nx", "a", IfMissing)
	if !first.Applied {
		t.Fatal("NX on a missing key not applied")
	}
	r := mustSet(t, c, "nx", "b", IfMissing)
	if r.Applied || r.Version != first.Version {
		t.Fatalf("NX on an existing key: %+v; want not applied, stored version %v", r, first.Version)
	}
	if r := mustSet(t, c, "nx", "a", IfMissingOrEqual); !r.Applied || !r.Version.After(first.Version) {
		t.Fatalf("NEX with the equal value: %+v", r)
	}
	if r := mustSet(t, c, "nx", "c", IfMissingOrEqual); r.Applied {
		t.Fatalf("NEX with another value applied: %+v", r)
	}
	if r := mustSet(t, c, "nex-new", "x", IfMissingOrEqual); !r.Applied {
		t.Fatalf("NEX on a missing key: %+v", r)
	}
	e, _, _ := c.Get(ctxT(t), "nx")
	if string(e.Value) != "a" {
		t.Fatalf("value %q after refused sets, want a", e.Value)
	}
}

func TestSetTTL(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	mustSet(t, c, "short", "v", TTL(50*time.Millisecond))
	mustSet(t, c, "long", "v", TTL(time.Hour))
	dsstest.Eventually(t, "the key with a TTL expires", func() bool {
		_, found, err := c.Get(ctxT(t), "short")
		return err == nil && !found
	})
	if _, found, err := c.Get(ctxT(t), "long"); err != nil || !found {
		t.Fatalf("key with a long TTL: found %v err %v", found, err)
	}
	if _, err := c.Set(ctxT(t), "k", nil, TTL(-time.Second)); err == nil {
		t.Fatal("negative TTL accepted")
	}
}

func TestVDel(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	ctx := ctxT(t)
	v := mustSet(t, c, "k", "mine")

	d, err := c.VDel(ctx, "k", []byte("theirs"))
	if err != nil || d.Deleted || !d.Mismatch {
		t.Fatalf("VDel other value: %+v, %v; want mismatch", d, err)
	}
	d, err = c.VDel(ctx, "k", []byte("mine"))
	if err != nil || !d.Deleted || d.Mismatch || d.Version != v.Version {
		t.Fatalf("VDel same value: %+v, %v; want deleted at %v", d, err, v.Version)
	}
	d, err = c.VDel(ctx, "k", []byte("mine"))
	if err != nil || d.Deleted || d.Mismatch {
		t.Fatalf("VDel missing: %+v, %v", d, err)
	}
}

func TestFencingTokens(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	ctx := ctxT(t)
	old := mustSet(t, c, "lock", "a").Version
	newer := mustSet(t, c, "lock", "b").Version

	mustSet(t, c, "res", "1", FencingToken(newer))
	if _, err := c.Set(ctx, "res", []byte("2")); !errors.Is(err, ErrFencingTokenRequired) {
		t.Fatalf("unfenced write to a protected key: %v, want ErrFencingTokenRequired", err)
	}
	if _, err := c.Set(ctx, "res", []byte("2"), FencingToken(old)); !errors.Is(err, ErrFencingTokenLowerVersion) {
		t.Fatalf("stale token: %v, want ErrFencingTokenLowerVersion", err)
	}
	if _, err := c.Del(ctx, "res", FencingToken(old)); !errors.Is(err, ErrFencingTokenLowerVersion) {
		t.Fatalf("Del with a stale token: %v", err)
	}
	if _, err := c.VDel(ctx, "res", []byte("1")); !errors.Is(err, ErrFencingTokenRequired) {
		t.Fatalf("VDel without token: %v", err)
	}
	future := hlc.Timestamp{Wall: time.Now().Add(time.Hour).UnixMilli(), Node: "x"}
	if _, err := c.Set(ctx, "res", []byte("2"), FencingToken(future)); !errors.Is(err, ErrFencingTokenSkew) {
		t.Fatalf("token from the future: %v", err)
	}
	e, _, _ := c.Get(ctx, "res")
	if string(e.Value) != "1" {
		t.Fatalf("protected value %q changed by refused writes", e.Value)
	}
	if d, err := c.Del(ctx, "res", FencingToken(newer)); err != nil || !d.Deleted {
		t.Fatalf("Del with the current token: %+v, %v", d, err)
	}
}

func TestServerErrorsAreTyped(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	_, err := c.Set(ctxT(t), "", []byte("v"))
	if !errors.Is(err, ErrKeyLengthZero) {
		t.Fatalf("empty key: %v, want ErrKeyLengthZero", err)
	}
	var se *ServerError
	if !errors.As(err, &se) || se.Text != "the key length is zero" {
		t.Fatalf("errors.As ServerError: %v", err)
	}
	if errors.Is(err, ErrSyntax) {
		t.Fatal("error matches the wrong sentinel")
	}
	if _, _, err := c.Get(ctxT(t), ""); !errors.Is(err, ErrKeyLengthZero) {
		t.Fatalf("Get empty key: %v", err)
	}
}

func TestClientClockFollowsServerVersions(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	v := mustSet(t, c, "k", "v").Version
	if now := c.clock.Now(); !now.After(v) {
		t.Fatalf("client clock %v not after the version %v it saw", now, v)
	}
}

func TestClosedClient(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	c := dial(t, s.Addr())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.Set(ctxT(t), "k", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Set after Close: %v", err)
	}
	if _, err := c.Watch(ctxT(t), []string{"k"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Watch after Close: %v", err)
	}
	if c.Server() != "" {
		t.Fatalf("closed client reports server %q", c.Server())
	}
}
