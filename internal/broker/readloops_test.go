package broker

import (
	"runtime"
	"testing"

	mqtt "github.com/dssio/dss/internal/mqtt"
)

func TestReadLoopsDefaultToOnePerCPUWhereTheSystemHasThem(t *testing.T) {
	want := 0
	if mqtt.ReadLoopsAvailable {
		want = runtime.GOMAXPROCS(0)
	}
	if got := readLoops(0); got != want {
		t.Errorf("readLoops(0) = %d on %s, want %d", got, runtime.GOOS, want)
	}
	if got := readLoops(-1); got != 0 {
		t.Errorf("readLoops(-1) = %d, want none", got)
	}
	if got := readLoops(3); got != 3 {
		t.Errorf("readLoops(3) = %d: a number asked for is passed on (and refused with a warning where there are none)", got)
	}
}
