package server_test

import (
	"crypto/tls"
	"path/filepath"
	"testing"

	"github.com/dssio/dss/internal/bench"
	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// benchPolicyFile grants the load generator's user its keys among a few
// other rules, as a deployment's policy would; scripts/bench.sh's security
// scenario uses the same file.
const benchPolicyFile = "testdata/bench-policy.yaml"

// BenchmarkRequestPathAuthorized is BenchmarkRequestPath through
// authenticated connections: without a policy, with benchPolicyFile, and
// with the policy over TLS. Compare cpu-µs/op of "users" and "policy"
// for the cost of authorization (dss bench with --server-pid measures the
// same against a separate server process: scripts/bench.sh --only
// security).
func BenchmarkRequestPathAuthorized(b *testing.B) {
	policy, err := filepath.Abs(benchPolicyFile)
	if err != nil {
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
