package server

import "testing"

func TestGCPercent(t *testing.T) {
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{16 << 20, 100}, // small heaps keep Go's default
		{64 << 20, 50},  // 32 MiB of headroom
		{320 << 20, 10}, // a tenth of the live data
		{4 << 30, 10},   // and never less
		{200 << 20, 16}, // 32 MiB over 200 MiB
	} {
		if got := gcPercent(tt.live); got != tt.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", tt.live>>20, got, tt.want)
		}
	}
}
