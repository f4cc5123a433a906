package conformance

import (
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/dssio/dss/internal/server"
)

// [MQTT-4.7.1-2] "The single-level wildcard can be used at any level in
// the Topic Filter, including first and last levels. Where it is used, it
// MUST occupy an entire level of the filter", and [MQTT-4.7.1-1] for the
// multi-level one: a filter with a wildcard that is not a level of its
// own gets SUBACK 0x8F (Topic Filter invalid); the other filters of the
// SUBSCRIBE are served and the connection stays.
func TestMQTT_4_7_1_2_WildcardNotAloneInItsLevel(t *testing.T) {
	addr := start(t, server.Config{})
	c, _ := connectOK(t, addr, "w", true, packets.Properties{})
	codes := c.subscribe(1, 0, sub("a+/b", 1), sub("a/+b", 1), sub("+a", 1), sub("a/b#", 1), sub("a/#/b", 1), sub("a/+/b", 1), sub("+", 0), sub("a/#", 1))
	bad := packets.ErrTopicFilterInvalid.Code
	want := []byte{bad, bad, bad, bad, bad, 1, 0, 1}
	if string(codes) != string(want) {
		t.Fatalf("SUBACK %x, want %x", codes, want)
	}
	c.ping()
}
