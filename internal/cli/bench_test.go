package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

func runBenchCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	code = Run(ctx, append([]string{"bench"}, args...), Stdio{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

func TestBenchCmd(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	// The server address comes from the environment, as DSS_SERVER.
	t.Setenv("DSS_SERVER", s.Addr())
	var rep struct {
		Requests   int64              `json:"requests"`
		Errors     int64              `json:"errors"`
		Throughput float64            `json:"requests_per_second"`
		Latency    map[string]float64 `json:"latency_us"`
		Preload    struct{ Requests int64 }
	}
	// Counted runs, with a timeout no busy machine reaches: how many
	// requests fit in a window, or how fast they are, is not checked here.
	code, out, errOut := runBenchCLI(t, "--op", "mix:0.5", "--clients", "2", "--keys", "50",
		"--requests", "200", "--warmup", "0", "--timeout", "1m", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json %q: %v", out, err)
	}
	if rep.Requests != 200 || rep.Errors != 0 || rep.Throughput <= 0 || rep.Latency["p99"] <= 0 || rep.Preload.Requests != 50 {
		t.Fatalf("report %+v", rep)
	}

	code, out, _ = runBenchCLI(t, "--op", "set", "--clients", "1", "--requests", "20", "--warmup", "0", "--timeout", "1m")
	if code != ExitOK || !strings.Contains(out, "requests    20") || !strings.Contains(out, "latency") {
		t.Fatalf("exit %d, text report %q", code, out)
	}
}

func TestBenchCmdRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--op", "incr"},
		{"--op", "mix:3"},
		{"--response-qos", "2"},
		{"--inflight", "70000"},
	} {
		if code, _, errOut := runBenchCLI(t, args...); code != ExitError || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}
