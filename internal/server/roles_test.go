package server_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// protocolTests are the tests of the state store protocol that start
// their server with start or startServer: a single node by default, a
// node of a 3-node cluster under DSS_TEST_TARGET.
var protocolTests = []string{
	"TestBadRequestsHarmNobody", "TestBinarySafeKeysAndValues", "TestEmptyValueExists",
	"TestEveryErrorText", "TestFencingTokenOnMissingKeyDeletes", "TestFencingTokens",
	"TestForbiddenResponseTopicDisconnects", "TestKeyNotify", "TestKeyNotifyBinaryKey",
	"TestKeyNotifyTwiceAndStop", "TestLargeValue", "TestLeasedLockWaitsForItsDeletionWithoutSubscribing",
	"TestLowerCaseVerbsAndOptions", "TestNotificationTakesTheSubscriptionsQoS",
	"TestNotificationTopicsAreTheServers", "TestNotificationWithoutSubscription",
	"TestNotificationsInApplyOrder", "TestNotificationsReachOnlyTheRegisteringConnection",
	"TestOrdinaryPublishSubscribe", "TestReconnectWithTheSameClientID",
	"TestRegistrationsEndWithTheConnection", "TestRequestIsAcknowledgedWithSuccess",
	"TestRequestsThatBreakTheTransportRules", "TestRequestsWithoutTimestampOnGetDelVDel",
	"TestResponseEnvelope", "TestResponsesFollowSubscriptionChanges", "TestResponsesFollowSubscriptions",
	"TestSessionTakeoverKeepsTheNewRegistrations", "TestSetGetDel", "TestSetNEX", "TestSetNX",
	"TestSetOptionsInAnyOrder", "TestSeveralWatchers", "TestTheArticlesExamplePayloads",
	"TestTimestampAheadWithinSkewIsAccepted", "TestTimestampBehindTakesTheServerClock",
	"TestTimestampOnlyWhenAVersionExists", "TestUnsupportedProtocolVersion", "TestVDel",
	"TestVersionsIncreaseAndExceedTheRequest",
	"TestPatternNotifications", "TestPatternRegistrationsEndWithTheConnection",
	"TestScanBytes", "TestScanLeavesOutExpiredKeys", "TestScanPatternsAndBinaryKeys",
	"TestKeyInfo",
}

// TestProtocolThroughEveryClusterRole runs the protocol tests again
// against the leader of a 3-node cluster and against a follower, each in
// processes of their own (this test binary, with DSS_TEST_TARGET set): a
// request through any node is answered exactly as by a single node. The
// tests of a role are split over a few processes that run at once: each
// mostly waits for its cluster's election.
func TestProtocolThroughEveryClusterRole(t *testing.T) {
	if os.Getenv(targetEnv) != "" {
		t.Skip("this run is one of them")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	const shards = 3
	for _, role := range []string{"leader", "follower"} {
		for shard := range shards {
			var names []string
			for i, name := range protocolTests {
				if i%shards == shard {
					names = append(names, name)
				}
			}
			t.Run(fmt.Sprintf("%s/%d", role, shard), func(t *testing.T) {
				t.Parallel()
				run := "^(" + strings.Join(names, "|") + ")$"
				cmd := exec.Command(os.Args[0], "-test.run", run, "-test.count=1", "-test.timeout=15m", "-test.v")
				cmd.Env = append(os.Environ(), targetEnv+"="+role, "DSS_TEST_RETRY_UNAVAILABLE=1")
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("the protocol tests through a cluster's %s: %v\n%s", role, err, out)
				}
				for _, name := range names {
					if !strings.Contains(string(out), "--- PASS: "+name+" ") {
						t.Errorf("%s did not pass through a cluster's %s", name, role)
					}
				}
				if testing.Verbose() {
					t.Logf("%s", out)
				}
			})
		}
	}
}
