package server

import "testing"

func TestGCPercent(t *testing.T) {
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 6400},       // an empty server collects after 64 MiB
		{16 << 20, 400}, // 64 MiB of headroom
		{64 << 20, 100},
		{200 << 20, 32},
		{640 << 20, 10}, // a tenth of the live data
		{4 << 30, 10},   // and never less
	} {
		if got := gcPercent(tt.live); got != tt.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", tt.live>>20, got, tt.want)
		}
	}
}
