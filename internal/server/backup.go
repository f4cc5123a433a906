package server

import (
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dssio/dss/internal/journal"
)

// SnapshotPath is where the HTTP listener serves a backup: a consistent
// copy of the store, streamed while the server serves (dss snapshot save).
//
// HTTP rather than the MQTT listener: a backup is one long stream of the
// whole store, which HTTP carries with TCP's own back-pressure, one request
// and no framing of our own, and any HTTP client (curl) can fetch it; over
// MQTT it would be thousands of publishes with flow control to get right.
const SnapshotPath = "/v1/snapshot"

// serveSnapshot streams a backup of the store.
func (s *Server) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	cw := &countingWriter{w: w}
	w.Header().Set("Content-Type", "application/octet-stream")
	bw := journal.NewBackupWriter(cw)
	err := s.node.Backup(r.Context(), bw)
	keys, changes, size := bw.Written()
	if err != nil {
		s.log.Warn("backup failed", "remote", r.RemoteAddr, "bytes", size, "err", err)
		if cw.n == 0 {
			http.Error(w, "backup failed: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		// Part of it is sent: end the stream so that the client does not
		// take it for a whole backup (it has no footer).
		panic(http.ErrAbortHandler)
	}
	s.log.Info("backup streamed", "remote", r.RemoteAddr, "keys", keys, "changes", changes,
		"bytes", size, "took", time.Since(start).Round(time.Millisecond))
}

// countingWriter counts the bytes that reached the response.
type countingWriter struct {
	w http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// adminOnly guards the endpoints that read the whole store (the backup),
// and is the one place that decides who may: with an admin token
// configured, a request must carry it (Authorization: Bearer TOKEN);
// without one, only clients on this machine (loopback) are served.
func (s *Server) adminOnly(h http.HandlerFunc) http.HandlerFunc {
	token := []byte(s.cfg.AdminToken)
	return func(w http.ResponseWriter, r *http.Request) {
		if len(token) > 0 {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), token) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="dss"`)
				http.Error(w, "this endpoint needs the admin token (Authorization: Bearer)", http.StatusUnauthorized)
				return
			}
		} else if !fromLoopback(r) {
			http.Error(w, "this endpoint serves clients on the server's machine only, unless the server has an admin token (--admin-token-file)", http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

// fromLoopback reports whether r came from this machine.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ErrAdminToken reports an admin token that cannot be used.
var ErrAdminToken = errors.New("server: the admin token must be at least 16 characters")
