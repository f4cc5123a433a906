package auth

import "testing"

// BenchmarkGrants is what authorization adds to a state store request and
// to a publish: the check of the key (or topic) against the grants of the
// connection, compiled at connect. A request costs the server about 10 µs
// of CPU; the check must stay far below 5% of it (500 ns).
func BenchmarkGrants(b *testing.B) {
	g := mustPolicyB(b, vendorPolicy).Grants(&Principal{ClientID: "line-1-7", Username: "alice"})
	pattern, literal, denied := []byte("app/alice/settings/7"), []byte("shared-lock"), []byte("app/bob/x")
	b.Run("read-pattern", func(b *testing.B) {
		for b.Loop() {
			g.Read(pattern)
		}
	})
	b.Run("write-literal", func(b *testing.B) {
		for b.Loop() {
			g.Write(literal)
		}
	})
	b.Run("write-denied", func(b *testing.B) {
		for b.Loop() {
			g.Write(denied)
		}
	})
	b.Run("publish", func(b *testing.B) {
		for b.Loop() {
			g.Publish("telemetry/line-1-7/temperature")
		}
	})
	iso := NewIsolation("line-1-7")
	b.Run("isolation-own-response-topic", func(b *testing.B) {
		for b.Loop() {
			iso.Class("clients/line-1-7/services/statestore/_any_/command/invoke/response")
		}
	})
}

func mustPolicyB(b *testing.B, text string) *Policy {
	p, err := ParsePolicy([]byte(text))
	if err != nil {
		b.Fatal(err)
	}
	return p
}
