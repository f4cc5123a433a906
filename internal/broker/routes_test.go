package broker

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/dssio/dss/internal/mqtt/packets"
)

func TestOwnRouteCopiesItsTopic(t *testing.T) {
	sub := packets.Subscription{Filter: "f", Qos: 1}
	for _, id := range []string{"c", strings.Repeat("x", 46), strings.Repeat("y", 47)} {
		buf := []byte("clients/" + id + "/services/statestore/_any_/command/invoke/response")
		topic := unsafe.String(unsafe.SliceData(buf), len(buf))
		want := strings.Clone(topic)
		o := newOwnRoute(topic, 7, sub)
		buf[0] = '!' // the request's memory is reused
		if o.topic != want || o.version != 7 || o.sub.Filter != "f" {
			t.Fatalf("route %q gen %d sub %+v, want %q", o.topic, o.version, o.sub, want)
		}
	}
}
