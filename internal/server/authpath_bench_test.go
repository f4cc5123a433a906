package server_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"github.com/dssio/dss/internal/bench"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// benchPolicy grants the load generator's user its keys among a few
// other rules, as a deployment's policy would.
const benchPolicy = `
rules:
  - principals: {usernames: [alice, bob]}
    brokerResources: [{method: Connect}]
    stateStoreResources:
      - {method: ReadWrite, keyType: Pattern, keys: ["app/{principal.username}/*", "shared-lock"]}
  - principals: {clientIds: ["line-*"]}
    brokerResources: [{method: Connect}]
    stateStoreResources:
      - {method: Read, keyType: String, keys: ["config"]}
  - principals: {usernames: [bench]}
    brokerResources: [{method: Connect}]
    stateStoreResources:
      - {method: ReadWrite, keyType: Pattern, keys: ["app/{principal.username}/*", "bench:*"]}
`

// BenchmarkRequestPathAuthorized is BenchmarkRequestPath through
// authenticated connections: without a policy, with benchPolicy, and
// with the policy over TLS. Compare cpu-µs/op of "users" and "policy"
// for the cost of authorization (dss bench with --server-pid measures the
// same against a separate server process: scripts/bench.sh --only
// security).
func BenchmarkRequestPathAuthorized(b *testing.B) {
	policy := filepath.Join(b.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(benchPolicy), 0o600); err != nil {
		b.Fatal(err)
	}
	users := filepath.Join(b.TempDir(), "users")
	if err := authSetPassword(users, "bench", "bench-pw"); err != nil {
		b.Fatal(err)
	}
	ca := dsstest.NewCA(b, "bench")
	cert := ca.Server("server")
	for _, mode := range []struct {
		name string
		cfg  server.Config
		tls  bool
	}{
		{"users", server.Config{Users: users}, false},
		{"policy", server.Config{Users: users, Policy: policy}, false},
		{"policy+tls", server.Config{Users: users, Policy: policy, TLSCert: cert.CertFile, TLSKey: cert.KeyFile, TLSListen: "127.0.0.1:0"}, true},
	} {
		s := dsstest.StartServer(b, mode.cfg)
		addr := s.Addr()
		var tcfg *tls.Config
		if mode.tls {
			addr, tcfg = s.TLSAddr(), ca.ClientTLS()
		}
		for _, op := range []string{"set", "get"} {
			b.Run(mode.name+"/"+op, func(b *testing.B) {
				runRequestBench(b, op, bench.Config{
					Server: addr, Clients: 64,
					Username: "bench", Password: []byte("bench-pw"), TLS: tcfg,
				})
			})
		}
	}
}
