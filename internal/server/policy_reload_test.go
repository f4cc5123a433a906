package server_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// readOnlyPolicy lets alice connect and read her keys; readWritePolicy
// lets her write them as well.
const (
	readOnlyPolicy = `
rules:
  - principals: {usernames: [alice]}
    brokerResources: [{method: Connect}]
    stateStoreResources: [{method: Read, keyType: Pattern, keys: ["app/*"]}]
`
	readWritePolicy = `
rules:
  - principals: {usernames: [alice]}
    brokerResources: [{method: Connect}]
    stateStoreResources: [{method: ReadWrite, keyType: Pattern, keys: ["app/*"]}]
`
)

// The policy file is read again when it changes, without a SIGHUP; a
// change that does not parse is logged with its line, and the policy in
// force stays.
func TestThePolicyIsReadAgainWhenItChanges(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(readOnlyPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &dsstest.Buffer{}
	s := dsstest.StartServer(t, server.Config{
		Users:          usersFile(t, "alice", "alice-pw"),
		Policy:         policy,
		ReloadInterval: 10 * time.Millisecond,
		LoginDelay:     time.Millisecond,
		Logger:         slog.New(slog.NewTextHandler(logs, nil)),
	})
	alice := dsstest.DialWith(t, s.Addr(), "alice-1", dsstest.Login{Username: "alice", Password: "alice-pw"})
	alice.Subscribe(alice.ResponseTopic)
	notAuthorized(t, "SET under the read-only policy", alice.Set([]string{"app/x", "1"}))

	if err := os.WriteFile(policy, []byte(readWritePolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	dsstest.Eventually(t, "the changed policy is in force", func() bool {
		return string(alice.Set([]string{"app/x", "1"}).Payload) == "+OK\r\n"
	})

	if err := os.WriteFile(policy, []byte("rules:\n  - principals: {usernames: [alice]}\n    brokerResources: [{method: Conect}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dsstest.Eventually(t, "the broken policy is reported", func() bool {
		return strings.Contains(logs.String(), `policy.yaml:3: method \"Conect\"`)
	})
	expect(t, "SET under the policy still in force", alice.Set([]string{"app/x", "2"}), "+OK\r\n", "any")
}
