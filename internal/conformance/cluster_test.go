package conformance

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestConformanceThroughACluster runs the package's tests again, in a
// process of their own (this test binary with DSS_CONFORMANCE_TARGET set),
// against a 3-node cluster whose clients are spread over the nodes: one
// broker across the cluster keeps every statement one node keeps.
func TestConformanceThroughACluster(t *testing.T) {
	if os.Getenv(targetEnv) != "" {
		t.Skip("this run is the cluster's")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestMQTT_", "-test.count=1", "-test.timeout=15m", "-test.v")
	cmd.Env = append(os.Environ(), targetEnv+"=cluster")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the conformance tests through a cluster: %v\n%s", err, out)
	}
	passed := regexp.MustCompile(`(?m)^--- PASS: (TestMQTT_\S+)`).FindAllStringSubmatch(string(out), -1)
	if len(passed) < 30 || strings.Contains(string(out), "--- FAIL") {
		t.Fatalf("%d tests passed through a cluster:\n%s", len(passed), out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
}
