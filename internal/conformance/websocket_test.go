package conformance

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
)

// TestEveryStatementOverWebSocket runs every other test of this package
// again with the clients connected over MQTT over WebSocket
// (DSS_TEST_TRANSPORT=ws), in a process of its own: MQTT 5's normative
// statements hold over a WebSocket as over TCP.
func TestEveryStatementOverWebSocket(t *testing.T) {
	if dsstest.OverWebSocket() {
		t.Skip("this run is the one over WebSocket")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	t.Parallel()
	list, err := exec.Command(os.Args[0], "-test.list", "^Test").Output()
	if err != nil {
		t.Fatalf("listing the tests: %v", err)
	}
	var names []string
	for _, name := range strings.Fields(string(list)) {
		// Not the tests that run the package again themselves.
		if strings.HasPrefix(name, "Test") && name != t.Name() && name != "TestConformanceThroughACluster" {
			names = append(names, name)
		}
	}
	if len(names) < 20 {
		t.Fatalf("only %d tests listed: %q", len(names), names)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^("+strings.Join(names, "|")+")$", "-test.count=1", "-test.timeout=10m", "-test.v")
	cmd.Env = append(os.Environ(), dsstest.TransportEnv+"=ws")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the conformance tests over WebSocket: %v\n%s", err, out)
	}
	for _, name := range names {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass over WebSocket", name)
		}
	}
}
