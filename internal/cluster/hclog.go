package cluster

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// raftLogger writes hashicorp/raft's log lines as structured records of
// the node's logger. Raft reports a peer it cannot reach on every
// heartbeat, append and vote (five times a second while a follower is
// down); those lines go to the node's peerHealth, which logs a peer's
// changes of state with a count instead.
type raftLogger struct {
	log    *slog.Logger
	health *peerHealth
	name   string
	args   []any
}

var _ hclog.Logger = (*raftLogger)(nil)

func newRaftLogger(log *slog.Logger, health *peerHealth) hclog.Logger {
	return &raftLogger{log: log, health: health, name: "raft"}
}

// peerFailures are raft's messages about a peer it could not reach, with
// the argument that names the peer. ("failed to contact", a follower
// slower than the leader's lease, stays raft's own line: nothing tells
// when such a peer catches up.)
var peerFailures = map[string]string{
	"failed to heartbeat to":                  "peer",
	"failed to appendEntries to":              "peer",
	"failed to pipeline appendEntries":        "peer",
	"failed to start pipeline replication to": "peer",
	"failed to send snapshot to":              "peer",
	"failed to install snapshot":              "peer",
	"failed to make requestVote RPC":          "target",
}

func (l *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	if key, ok := peerFailures[msg]; ok && l.health != nil {
		var peer, errText string
		for i := 0; i+1 < len(args); i += 2 {
			switch args[i] {
			case key:
				peer = peerName(args[i+1])
			case "error":
				errText = fmt.Sprint(args[i+1])
			}
		}
		l.health.failed(peer, msg, errText)
		return
	}
	if msg == "failed to contact" && l.health != nil && level > hclog.Debug {
		// The lease check's line for a peer known to be unreachable says
		// nothing new; for a peer that is only slow it stays.
		for i := 0; i+1 < len(args); i += 2 {
			if args[i] == "server-id" && l.health.down(peerName(args[i+1])) {
				level = hclog.Debug
			}
		}
	}
	var sl slog.Level
	switch {
	case level >= hclog.Error:
		sl = slog.LevelError
	case level == hclog.Warn:
		sl = slog.LevelWarn
	case level == hclog.Info:
		sl = slog.LevelInfo
	default:
		sl = slog.LevelDebug
	}
	if !l.log.Enabled(context.Background(), sl) {
		return
	}
	attrs := make([]any, 0, len(l.args)+len(args))
	attrs = append(attrs, attrArgs(l.args)...)
	attrs = append(attrs, attrArgs(args)...)
	l.log.Log(context.Background(), sl, msg, attrs...)
}

// attrArgs turns raft's key and value pairs into slog's, with values
// printed as an operator reads them.
func attrArgs(args []any) []any {
	out := make([]any, 0, len(args))
	for i := 0; i+1 < len(args); i += 2 {
		k := fmt.Sprint(args[i])
		switch v := args[i+1].(type) {
		case raft.Server:
			out = append(out, k, string(v.ID)+"@"+string(v.Address))
		case error:
			out = append(out, k, v.Error())
		case hclog.Format:
			out = append(out, k, fmt.Sprintf(v[0].(string), v[1:]...))
		default:
			out = append(out, k, v)
		}
	}
	return out
}

// peerName names the peer of a failure: its id where raft gives one.
func peerName(v any) string {
	switch p := v.(type) {
	case raft.Server:
		return string(p.ID)
	case *raft.Server:
		return string(p.ID)
	case raft.ServerID:
		return string(p)
	case raft.ServerAddress:
		return string(p)
	}
	return fmt.Sprint(v)
}

func (l *raftLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *raftLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *raftLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *raftLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *raftLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *raftLogger) IsTrace() bool { return false }
func (l *raftLogger) IsDebug() bool { return l.log.Enabled(context.Background(), slog.LevelDebug) }
func (l *raftLogger) IsInfo() bool  { return l.log.Enabled(context.Background(), slog.LevelInfo) }
func (l *raftLogger) IsWarn() bool  { return l.log.Enabled(context.Background(), slog.LevelWarn) }
func (l *raftLogger) IsError() bool { return l.log.Enabled(context.Background(), slog.LevelError) }

func (l *raftLogger) ImpliedArgs() []any { return l.args }

func (l *raftLogger) With(args ...any) hclog.Logger {
	c := *l
	c.args = append(append([]any(nil), l.args...), args...)
	return &c
}

func (l *raftLogger) Name() string { return l.name }

func (l *raftLogger) Named(name string) hclog.Logger {
	c := *l
	c.name = l.name + "." + name
	return &c
}

func (l *raftLogger) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	return &c
}

func (l *raftLogger) SetLevel(hclog.Level) {}

func (l *raftLogger) GetLevel() hclog.Level { return hclog.Debug }

func (l *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

func (l *raftLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer { return lineWriter{l} }

// lineWriter logs each line written to it at the level its prefix names
// ("[ERROR]", "[WARN]", ...), for the parts of raft that log through the
// standard library's logger.
type lineWriter struct{ l *raftLogger }

func (w lineWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	level := hclog.Info
	for prefix, lv := range map[string]hclog.Level{"[ERROR]": hclog.Error, "[ERR]": hclog.Error, "[WARN]": hclog.Warn, "[INFO]": hclog.Info, "[DEBUG]": hclog.Debug, "[TRACE]": hclog.Trace} {
		if strings.HasPrefix(line, prefix) {
			level, line = lv, strings.TrimSpace(line[len(prefix):])
			break
		}
	}
	w.l.Log(level, line)
	return len(p), nil
}
