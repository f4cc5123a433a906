package server_test

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// readmeMosquittoExample returns the README's mosquitto_rr example: the
// indented block that starts with T=statestore/..., as a bash script.
func readmeMosquittoExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n    T=statestore/")
	if !ok {
		t.Fatal("README.md has no mosquitto_rr example (an indented block that starts with T=statestore/)")
	}
	block, _, _ := strings.Cut("    T=statestore/"+rest, "\n\n")
	var script strings.Builder
	for _, line := range strings.Split(block, "\n") {
		script.WriteString(strings.TrimPrefix(line, "    ") + "\n")
	}
	return script.String()
}

// mosquittoRR returns the path of mosquitto_rr: CI installs it (.ci/deps),
// elsewhere the test skips without it.
func mosquittoRR(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("mosquitto_rr")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mosquitto_rr is not installed: .ci/deps installs it")
		}
		t.Skip("mosquitto_rr is not installed (apt-get install mosquitto-clients)")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	return path
}

// runRR runs script in bash with mosquitto_rr pointed at addr.
func runRR(t *testing.T, rr, addr, script string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	wrapper := `mosquitto_rr() { "` + rr + `" -h ` + host + ` -p ` + port + ` -W 5 "$@"; }` + "\n"
	out, err := exec.Command("bash", "-c", wrapper+script).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s\nscript:\n%s", err, out, script)
	}
	return string(out)
}

// The README's mosquitto_rr SET and GET work as written, and a request
// sent the way mosquitto_rr sends it by default (QoS 0, no correlation
// data) is answered with the reason it was refused.
func TestReadmeMosquittoExample(t *testing.T) {
	rr := mosquittoRR(t)
	s := dsstest.StartServer(t, server.Config{})
	script := readmeMosquittoExample(t)
	if got, want := runRR(t, rr, s.Addr(), script), "+OK\r\n\n$5\r\nhello\r\n\n"; got != want {
		t.Fatalf("the README's example printed %q, want %q\nscript:\n%s", got, want, script)
	}
	bare := "mosquitto_rr -t statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke -e my/responses -m $'*2\\r\\n$3\\r\\nGET\\r\\n$8\\r\\ngreeting\\r\\n'\n"
	if got, want := runRR(t, rr, s.Addr(), bare), "-ERR state store requests must be sent with QoS 1 and carry Correlation Data\r\n\n"; got != want {
		t.Fatalf("mosquitto_rr without -q 1 and correlation data printed %q, want %q", got, want)
	}
}

// SCAN from outside: mosquitto_rr, a client that knows nothing of dss,
// sends the bytes of PROTOCOL.md §11 and prints the answer dss gives: a
// page with the matching keys, then nothing for a pattern nothing
// matches, then a bad token refused.
func TestScanThroughMosquittoRR(t *testing.T) {
	rr := mosquittoRR(t)
	s := dsstest.StartServer(t, server.Config{})
	c := dsstest.Dial(t, s.Addr(), "writer")
	for _, k := range []string{"key1", "key2", "other"} {
		expect(t, "SET "+k, c.Set([]string{k, "v"}), "+OK\r\n", "any")
	}
	scan := func(request string) string {
		return runRR(t, rr, s.Addr(), "mosquitto_rr -t statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke "+
			"-e my/responses -q 1 -D publish correlation-data 1 -m $'"+request+"'\n")
	}
	page := scan(`*2\r\n$4\r\nSCAN\r\n$4\r\nkey*\r\n`)
	if page != "*1\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n\n" && page != "*1\r\n*2\r\n$4\r\nkey2\r\n$4\r\nkey1\r\n\n" {
		t.Fatalf("SCAN key* printed %q, want the last page with key1 and key2", page)
	}
	if got, want := scan(`*2\r\n$4\r\nSCAN\r\n$8\r\nnothing*\r\n`), "*1\r\n*0\r\n\n"; got != want {
		t.Fatalf("SCAN nothing* printed %q, want %q", got, want)
	}
	if got := scan(`*3\r\n$4\r\nSCAN\r\n$1\r\n*\r\n$4\r\n1;1;\r\n`); !strings.HasPrefix(got, "-ERR ") {
		t.Fatalf("SCAN with a token dss never made printed %q, want an error", got)
	}
}
