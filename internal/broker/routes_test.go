package broker

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/mochi-mqtt/server/v2/packets"
)

func TestOwnRouteKeepsItsTopicInline(t *testing.T) {
	sub := packets.Subscription{Filter: "f", Qos: 1}
	for _, id := range []string{"c", strings.Repeat("x", 46), strings.Repeat("y", 47)} {
		buf := []byte("clients/" + id + "/services/statestore/_any_/command/invoke/response")
		topic := unsafe.String(unsafe.SliceData(buf), len(buf))
		want := strings.Clone(topic)
		o := newOwnRoute(topic, 7, sub)
		buf[0] = '!' // the request's memory is reused
		if o.topic != want || o.gen != 7 || o.sub.Filter != "f" {
			t.Fatalf("route %q gen %d sub %+v, want %q", o.topic, o.gen, o.sub, want)
		}
		start := uintptr(unsafe.Pointer(&o.inline))
		p := uintptr(unsafe.Pointer(unsafe.StringData(o.topic)))
		inline := p >= start && p < start+uintptr(len(o.inline))
		if fits := len(want) <= len(o.inline); inline != fits {
			t.Errorf("topic of %d bytes inline: %v, want %v", len(want), inline, fits)
		}
	}
	if off := unsafe.Offsetof(ownRoute{}.inline) + unsafe.Sizeof(ownRoute{}.inline); off > 128 {
		t.Errorf("the inline topic ends at byte %d, beyond the two lines a read loop prefetches", off)
	}
}
