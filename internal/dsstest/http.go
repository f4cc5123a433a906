package dsstest

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// HTTPGet sends GET path to the HTTP listener at addr (a server's
// /metrics, /healthz, /readyz) and returns the status code and the body.
func HTTPGet(t testing.TB, addr, path string) (int, string) {
	t.Helper()
	res, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// Metrics returns what GET /metrics on the HTTP listener at addr prints.
func Metrics(t testing.TB, addr string) string {
	t.Helper()
	_, body := HTTPGet(t, addr, "/metrics")
	return body
}

// Metric returns the value of the sample series (a metric name with its
// labels as /metrics prints them) on the HTTP listener at addr, or 0 when
// it is not there.
func Metric(t testing.TB, addr, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(Metrics(t, addr), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}
