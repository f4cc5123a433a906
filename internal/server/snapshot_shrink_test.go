package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// snapshotSize returns the size of the data directory's snapshot, 0 when
// there is none.
func snapshotSize(dir string) int64 {
	names, _ := filepath.Glob(filepath.Join(dir, "snap-*.snap"))
	var size int64
	for _, n := range names {
		if info, err := os.Stat(n); err == nil {
			size = info.Size()
		}
	}
	return size
}

// TestSnapshotShrinksWhenTheDataShrinks deletes most keys after a large
// snapshot: a smaller snapshot replaces it although the journal grew by
// much less than the old snapshot's size, and a restart serves what is
// left.
func TestSnapshotShrinksWhenTheDataShrinks(t *testing.T) {
	dir := t.TempDir()
	cfg := server.Config{DataDir: dir, SnapshotAfter: 16 << 10}
	s := dsstest.StartServer(t, cfg)
	c := dsstest.Dial(t, s.Addr(), "c")
	value := strings.Repeat("v", 200)
	run := func(n int, cmd func(i int) []byte) {
		var pending []chan *paho.Publish
		for i := 0; i < n; i++ {
			pending = append(pending, c.Send(cmd(i), ts(dsstest.Now())))
			if len(pending) == 100 {
				for _, ch := range pending {
					c.Await(ch)
				}
				pending = pending[:0]
			}
		}
		for _, ch := range pending {
			c.Await(ch)
		}
	}
	const keys = 3000
	run(keys, func(i int) []byte { return dsstest.Cmd("SET", fmt.Sprint("k", i), value) })
	full := int64(keys * 200)
	dsstest.Eventually(t, "a snapshot of most keys", func() bool { return snapshotSize(dir) > full/2 })
	big := snapshotSize(dir)
	run(keys-100, func(i int) []byte { return dsstest.Cmd("DEL", fmt.Sprint("k", i)) })
	dsstest.Eventually(t, "a snapshot of what is left", func() bool {
		size := snapshotSize(dir)
		return size > 0 && size < big/4
	})
	stop(t, s)
	s = dsstest.StartServer(t, cfg)
	c = dsstest.Dial(t, s.Addr(), "c")
	for i := keys - 110; i < keys; i++ {
		want, version := "$-1\r\n", ""
		if i >= keys-100 {
			want, version = fmt.Sprintf("$%d\r\n%s\r\n", len(value), value), "any"
		}
		expect(t, "GET", c.Request(dsstest.Cmd("GET", fmt.Sprint("k", i))), want, version)
	}
}
