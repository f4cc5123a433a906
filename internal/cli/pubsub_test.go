package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// dss sub prints what dss pub publishes: QoS, retain, user properties and
// the other MQTT 5 properties, as lines and as JSON.
func TestPubSub(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	addr := s.Addr()
	// A retained message is there for a subscriber that comes later.
	runCLI(t, "", "pub", "--server", addr, "--qos", "1", "--retain", "--user", "unit=celsius", "--user", "unit=kelvin",
		"--content-type", "text/plain", "--response-topic", "r/1", "--correlation-data", "c1", "--expiry", "1h",
		"sensors/line 1/temp", "21.5").expectCode(t, ExitOK)
	sub := startCLI(t, "sub", "--server", addr, "--json", "--qos", "2", "--count", "3", "sensors/#")
	var first struct {
		Topic       string                        `json:"topic"`
		Payload     string                        `json:"payload"`
		Encoding    string                        `json:"encoding"`
		QoS         int                           `json:"qos"`
		Retain      bool                          `json:"retain"`
		ContentType string                        `json:"content_type"`
		Response    string                        `json:"response_topic"`
		Correlation string                        `json:"correlation_data"`
		Expiry      int                           `json:"message_expiry"`
		User        []struct{ Key, Value string } `json:"user_properties"`
	}
	dsstest.Eventually(t, "the retained message", func() bool { return strings.Count(sub.out.String(), "\n") >= 1 })
	line, _, _ := strings.Cut(sub.out.String(), "\n")
	if err := json.Unmarshal([]byte(line), &first); err != nil {
		t.Fatalf("sub --json: %v: %s", err, line)
	}
	if first.Topic != "sensors/line 1/temp" || first.Payload != "21.5" || first.Encoding != "utf8" || first.QoS != 1 || !first.Retain ||
		first.ContentType != "text/plain" || first.Response != "r/1" || first.Correlation != "c1" || first.Expiry == 0 || first.Expiry > 3600 ||
		len(first.User) != 2 || first.User[0].Value != "celsius" || first.User[1].Value != "kelvin" {
		t.Fatalf("sub --json of the retained message: %+v", first)
	}
	runCLI(t, "", "pub", "--server", addr, "--qos", "2", "sensors/x", "-", "--json").expectCode(t, ExitOK)
	runCLI(t, "\xff\x00", "pub", "--server", addr, "sensors/bin", "-").expectCode(t, ExitOK)
	if code := sub.wait(t); code != ExitOK {
		t.Fatalf("sub exited %d: %s", code, sub.err)
	}
	lines := strings.Split(strings.TrimSuffix(sub.out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], `"qos":2`) || !strings.Contains(lines[2], `"encoding":"base64"`) || !strings.Contains(lines[2], `"payload":"/wA="`) {
		t.Fatalf("sub --json lines: %q", lines)
	}

	// Lines: the topic and the payload, escaped.
	plain := startCLI(t, "sub", "--server", addr, "--count", "1", "sensors/line 1/temp")
	plain.wait(t)
	if got := plain.out.String(); got != "sensors/line\\x201/temp 21.5\n" {
		t.Fatalf("sub line: %q", got)
	}
	// An empty retained message deletes the retained one.
	runCLI(t, "", "pub", "--server", addr, "--retain", "sensors/line 1/temp", "").expectCode(t, ExitOK)
}

// A publish the broker refuses exits 2 with the reason code; a bad flag
// says what it wants.
func TestPubRefused(t *testing.T) {
	s := dsstest.StartServer(t, server.Config{})
	r := runCLI(t, "", "pub", "--server", s.Addr(), "--qos", "1", "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/x/command/notify/41", "forged").expectCode(t, ExitError)
	if !strings.Contains(r.err, "refused with reason code 0x87") {
		t.Fatalf("publish under the reserved prefix: %q", r.err)
	}
	for _, args := range [][]string{{"--qos", "3", "t", "m"}, {"--user", "novalue", "t", "m"}, {"t/+", "m"}} {
		if r := runCLI(t, "", append([]string{"pub", "--server", s.Addr()}, args...)...); r.code != ExitError || !strings.Contains(r.err, "want") {
			t.Errorf("pub %v: exit %d, %q", args, r.code, r.err)
		}
	}
}
