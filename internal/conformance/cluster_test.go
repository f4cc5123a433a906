package conformance

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestConformanceThroughACluster runs the package's statements again, in
// processes of their own (this test binary with DSS_CONFORMANCE_TARGET
// set), against 3-node clusters whose clients are spread over the nodes:
// one broker across the cluster keeps every statement one node keeps. The
// statements are split over a few processes that run at once, beside the
// run over WebSocket: each mostly waits for its cluster's election.
func TestConformanceThroughACluster(t *testing.T) {
	if os.Getenv(targetEnv) != "" {
		t.Skip("this run is the cluster's")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	t.Parallel()
	list, err := exec.Command(os.Args[0], "-test.list", "^TestMQTT_").Output()
	if err != nil {
		t.Fatalf("listing the tests: %v", err)
	}
	all := strings.Fields(string(list))
	if len(all) < 30 {
		t.Fatalf("only %d statements listed: %q", len(all), all)
	}
	const shards = 3
	for shard := range shards {
		var names []string
		for i, name := range all {
			if i%shards == shard {
				names = append(names, name)
			}
		}
		t.Run(fmt.Sprint(shard), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run", "^("+strings.Join(names, "|")+")$", "-test.count=1", "-test.timeout=15m", "-test.v")
			cmd.Env = append(os.Environ(), targetEnv+"=cluster")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the conformance tests through a cluster: %v\n%s", err, out)
			}
			for _, name := range names {
				if !strings.Contains(string(out), "--- PASS: "+name+" ") {
					t.Errorf("%s did not pass through a cluster", name)
				}
			}
			if testing.Verbose() {
				t.Logf("%s", out)
			}
		})
	}
}
