package server_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// TestClientStringsAreCutInTheLog: a login refused with a user name of
// 65,535 bytes and a client id of 16,000 bytes is logged with both cut
// to a few hundred bytes, saying how long they were. The whole user name
// was logged.
func TestClientStringsAreCutInTheLog(t *testing.T) {
	logs := &dsstest.Buffer{}
	s := dsstest.StartServer(t, server.Config{Users: usersFile(t, "alice", "alice-pw"), LoginDelay: time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	name := strings.Repeat("n", 65535) // the most a CONNECT carries
	id := strings.Repeat("é", 8000)    // 16,000 bytes: a client id may be as long
	refusedWith(t, s.Addr(), id, dsstest.Login{Username: name, Password: "x"}, 0x86)
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "login refused") {
			line = l
		}
	}
	switch {
	case line == "":
		t.Fatalf("no line for the refused login:\n%.2000s", logs)
	case len(line) > 4096:
		t.Fatalf("the line for the refused login is %d bytes long", len(line))
	case !strings.Contains(line, "(65535 bytes)") || !strings.Contains(line, "(16000 bytes)"):
		t.Fatalf("the line does not say how long the user name and client id were: %.1000s", line)
	}
}
