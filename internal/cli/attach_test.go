package cli

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// Settings that cannot work stop dss attach at once with a message that
// names the setting as it was given.
func TestAttachRefusesSettings(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "attach.yaml")
	if err := os.WriteFile(conf, []byte("broker: ftp://x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--in-memory"}, nil, "--broker: the URL of the broker to attach to is required"},
		{[]string{"--in-memory", "--broker", "localhost:1883"}, nil, "want mqtt://HOST:PORT or mqtts://HOST:PORT"},
		{[]string{"--in-memory", "--config", conf}, nil, `unknown scheme "ftp"`},
		{[]string{"--in-memory"}, map[string]string{"DSS_BROKER": "mqtt://"}, "want mqtt://HOST:PORT or mqtts://HOST:PORT"},
		{[]string{"--in-memory", "--broker", "mqtt://h:1883", "--ca", "ca.pem"}, nil, "need a broker URL of the scheme mqtts://"},
		{[]string{"--in-memory", "--broker", "mqtt://h:1883", "--presence", "hivemq"}, nil, "--presence"},
		{[]string{"--in-memory", "--broker", "mqtt://h:1883", "--session-expiry", "1500ms"}, nil, "--session-expiry"},
		{[]string{"--in-memory", "--broker", "mqtt://h:1883", "--keepalive", "0s"}, nil, "--keepalive"},
		{[]string{"--in-memory", "--broker", "mqtt://h:1883", "--keynotify-lease", "-1s"}, nil, "need the broker to say when clients leave"},
		{[]string{"--in-memory", "--broker", "mqtt://h:1883", "--group", "a/b"}, nil, "shared subscription group"},
	} {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // an attach that wrongly starts stops at once
		var out, errOut bytes.Buffer
		code := Run(ctx, append([]string{"attach"}, c.args...), Stdio{Out: &out, Err: &errOut})
		if code != ExitError || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v %v: exit status %d, stderr %q; want %q", c.args, c.env, code, errOut.String(), c.want)
		}
		for k := range c.env {
			os.Unsetenv(k)
		}
	}
}

// dss attach takes its broker from the configuration file and its
// password from the environment, serves through Mosquitto, and stops
// on its context with status 0.
func TestAttachServesFromItsSettings(t *testing.T) {
	m := dsstest.StartMosquitto(t, dsstest.MosquittoConfig{})
	web := dsstest.NodeAddr(t)
	conf := filepath.Join(t.TempDir(), "attach.yaml")
	if err := os.WriteFile(conf, []byte("broker: "+m.URL()+"\nin-memory: true\nhttp-listen: "+web+"\nclient-id: dss-cli\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DSS_PASSWORD", "not needed by an anonymous broker")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	var out, errOut dsstest.Buffer
	go func() { done <- Run(ctx, []string{"attach", "--config", conf}, Stdio{Out: &out, Err: &errOut}) }()
	dsstest.Eventually(t, "ready", func() bool {
		resp, err := http.Get("http://" + web + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	c := dsstest.Dial(t, m.Addr, "cli-test")
	if p := c.Set([]string{"k", "v"}); string(p.Payload) != "+OK\r\n" {
		t.Fatalf("SET: %q", p.Payload)
	}
	var setOut, setErr bytes.Buffer
	if code := Run(context.Background(), []string{"get", "k", "--server", m.Addr, "--client-id", "getter"}, Stdio{Out: &setOut, Err: &setErr}); code != 0 || setOut.String() != "v" {
		t.Fatalf("dss get through Mosquitto: status %d, %q %q", code, setOut.String(), setErr.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit status %d:\n%s", code, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("dss attach did not stop:\n%s", errOut.String())
	}
	if !strings.Contains(errOut.String(), "attached_to="+m.URL()) || !strings.Contains(errOut.String(), "unsubscribed from the request topic") {
		t.Fatalf("the log does not say where dss attached, or that it left:\n%s", errOut.String())
	}
}
