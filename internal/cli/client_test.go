package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/client"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// cliResult is what a finished command left behind.
type cliResult struct {
	code     int
	out, err string
}

// runCLI runs dss with args and stdin, and returns its exit status and
// output.
func runCLI(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errOut dsstest.Buffer
	code := Run(context.Background(), args, Stdio{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return cliResult{code: code, out: out.String(), err: errOut.String()}
}

// expectCode fails the test unless r has exit status code.
func (r cliResult) expectCode(t *testing.T, code int) cliResult {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d; stdout %q stderr %q", r.code, code, r.out, r.err)
	}
	return r
}

// runningCLI is a command running in the background.
type runningCLI struct {
	out, err *dsstest.Buffer
	cancel   context.CancelFunc
	done     chan int
}

// startCLI runs dss with args until it exits or stop is called.
func startCLI(t *testing.T, args ...string) *runningCLI {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningCLI{out: &dsstest.Buffer{}, err: &dsstest.Buffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		r.done <- Run(ctx, args, Stdio{In: strings.NewReader(""), Out: r.out, Err: r.err})
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// wait returns the command's exit status, failing the test if it does not
// exit.
func (r *runningCLI) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-r.done:
		r.done <- code // for the cleanup
		return code
	case <-time.After(dsstest.Timeout):
		t.Fatalf("command still running; stdout %q stderr %q", r.out.String(), r.err.String())
	}
	return 0
}

// stop interrupts the command and returns its exit status.
func (r *runningCLI) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	return r.wait(t)
}

// waitOutput waits until the command's stdout contains s.
func (r *runningCLI) waitOutput(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(dsstest.Timeout)
	for !strings.Contains(r.out.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("stdout %q does not contain %q; stderr %q", r.out.String(), s, r.err.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startServer starts a server and returns its address and a client of it.
func startServer(t *testing.T) (string, *client.Client) {
	t.Helper()
	s := dsstest.StartServer(t, server.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	defer cancel()
	c, err := client.Dial(ctx, client.Config{Servers: []string{s.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return s.Addr(), c
}

// protectedKey stores key with value, written with the fencing token of a
// lock (the version of the key "lock"), so that a write of key needs a
// token: it returns that one.
func protectedKey(t *testing.T, c *client.Client, key, value string) string {
	t.Helper()
	lock, err := c.Set(testCtx(t), "lock", []byte("me"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(testCtx(t), key, []byte(value), client.FencingToken(lock.Version)); err != nil {
		t.Fatal(err)
	}
	return lock.Version.String()
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), dsstest.Timeout)
	t.Cleanup(cancel)
	return ctx
}

func TestServerList(t *testing.T) {
	f := clientFlags{server: " a:1, ,b:2,"}
	got := f.servers()
	if len(got) != 2 || got[0] != "a:1" || got[1] != "b:2" {
		t.Fatalf("servers %q", got)
	}
}

func TestReadValue(t *testing.T) {
	if v, err := readValue("-", strings.NewReader("from\x00stdin\n")); err != nil || string(v) != "from\x00stdin\n" {
		t.Fatalf("stdin: %q %v", v, err)
	}
	if v, err := readValue("literal", strings.NewReader("ignored")); err != nil || string(v) != "literal" {
		t.Fatalf("argument: %q %v", v, err)
	}
	if _, err := readValue("-", nil); err == nil {
		t.Fatal("no stdin accepted")
	}
}

func TestJSONObjectBinary(t *testing.T) {
	var b bytes.Buffer
	if err := (jsonObject{}).bytes("text", []byte("héllo")).bytes("bin", []byte{0xff, 0x00}).write(&b); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `{"bin":"/wA=","encoding":"base64","text":"aMOpbGxv"}`+"\n"; got != want {
		t.Fatalf("json %q, want %q", got, want)
	}
	b.Reset()
	if err := (jsonObject{"n": 1}).bytes("text", []byte("héllo")).write(&b); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `{"encoding":"utf8","n":1,"text":"héllo"}`+"\n"; got != want {
		t.Fatalf("json %q, want %q", got, want)
	}
}

// A command fails as soon as every listed server refused: it does not
// wait out --timeout.
func TestUnreachableServer(t *testing.T) {
	closed, closed2 := dsstest.ClosedAddr(t), dsstest.ClosedAddr(t)
	start := time.Now()
	r := runCLI(t, "", "get", "--server", closed+","+closed2, "--timeout", "1m", "k").expectCode(t, ExitError)
	if !strings.Contains(r.err, "no server reachable") || !strings.Contains(r.err, "connection refused") {
		t.Fatalf("stderr %q: want the connection error", r.err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("took %v: waited for --timeout instead of failing", took)
	}
	for _, cmd := range [][]string{{"set", "k", "v"}, {"del", "k"}, {"vdel", "k", "v"}, {"watch", "k"}, {"lock", "l", "--", "true"}} {
		args := append([]string{cmd[0], "--server", closed, "--timeout", "1m"}, cmd[1:]...)
		if r := runCLI(t, "", args...).expectCode(t, ExitError); !strings.Contains(r.err, "connection refused") {
			t.Errorf("%v: stderr %q", cmd, r.err)
		}
	}
}
