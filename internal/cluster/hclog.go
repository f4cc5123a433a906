package cluster

import (
	"bytes"
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// newHCLogger returns a logger for hashicorp/raft that writes into log.
func newHCLogger(log *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:        "raft",
		Level:       hclog.Info,
		Output:      slogWriter{log},
		DisableTime: true,
	})
}

// slogWriter turns the lines hclog writes into log records of the level
// each line names.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	level := slog.LevelInfo
	for prefix, l := range map[string]slog.Level{"[ERROR]": slog.LevelError, "[WARN]": slog.LevelWarn, "[INFO]": slog.LevelInfo, "[DEBUG]": slog.LevelDebug, "[TRACE]": slog.LevelDebug} {
		if bytes.HasPrefix(line, []byte(prefix)) {
			level = l
			line = bytes.TrimSpace(line[len(prefix):])
			break
		}
	}
	w.log.Log(context.Background(), level, string(line))
	return len(p), nil
}
