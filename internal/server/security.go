package server

import (
	"context"
	"crypto/tls"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/dssio/dss/internal/auth"
	"github.com/dssio/dss/internal/certs"
)

// security is what the server authenticates with, read from the files
// of its Config, and read again by Reload.
type security struct {
	authority *auth.Authority // nil: no authentication
	certs     *certs.Store    // nil: no TLS
	users     *watchedFile    // nil without a users file
	policy    *watchedFile    // nil without a policy
	certFiles []*watchedFile
}

// loadSecurity reads the users file and the TLS files.
func (c *Config) loadSecurity() (*security, error) {
	sec := &security{}
	var users *auth.Users
	if c.Users != "" {
		u, err := auth.LoadUsers(c.Users)
		if err != nil {
			return nil, err
		}
		users, sec.users = u, newWatchedFile(c.Users)
	}
	var policy *auth.Policy
	if c.Policy != "" {
		p, err := auth.LoadPolicy(c.Policy)
		if err != nil {
			return nil, err
		}
		policy, sec.policy = p, newWatchedFile(c.Policy)
	}
	if c.TLSCert != "" {
		mode := certs.NoClientCert
		switch {
		case c.TLSClientCA != "" && (c.Users != "" || c.AllowAnonymous):
			mode = certs.VerifyClientCert
		case c.TLSClientCA != "":
			mode = certs.RequireClientCert
		}
		st, err := certs.Load(certs.Files{Cert: c.TLSCert, Key: c.TLSKey, ClientCA: c.TLSClientCA}, mode)
		if err != nil {
			return nil, err
		}
		sec.certs = st
		for _, p := range st.Paths() {
			sec.certFiles = append(sec.certFiles, newWatchedFile(p))
		}
	}
	sec.authority = auth.NewAuthority(auth.Options{
		Users:          users,
		ClientCerts:    c.TLSClientCA != "",
		AllowAnonymous: c.AllowAnonymous,
		Policy:         policy,
	})
	return sec, nil
}

// tlsListen returns the address of the TLS listener, "" for none.
func (sec *security) tlsListen(c *Config) string {
	if sec.certs == nil {
		return ""
	}
	return c.TLSListen
}

// tlsConfig returns the TLS listener's configuration, nil for none.
func (sec *security) tlsConfig() *tls.Config {
	if sec.certs == nil {
		return nil
	}
	return sec.certs.ServerConfig()
}

// describe says how clients authenticate, for the start-up line.
func (sec *security) describe(c *Config) string {
	var ways []string
	if c.Users != "" {
		ways = append(ways, "users")
	}
	if c.TLSClientCA != "" {
		ways = append(ways, "client certificates")
	}
	if len(ways) == 0 {
		return "none"
	}
	if c.AllowAnonymous {
		ways = append(ways, "anonymous")
	}
	if c.Policy != "" {
		ways = append(ways, "policy "+c.Policy)
	}
	return strings.Join(ways, ", ")
}

// Reload reads the users file, the policy and the TLS certificate, key
// and client CA again and puts them in force; it is what SIGHUP does.
// Connections already made keep going, except those that hold what is
// no longer granted (see broker.Reauthorize). A file that fails to read
// or parse leaves its previous reading in force; the error names the
// file, the line and the reason.
func (s *Server) Reload() error {
	return s.reload(true)
}

// reload reads the files again: all of them with force, otherwise those
// that changed on disk since they were last read.
func (s *Server) reload(force bool) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	sec := s.sec
	var errs []error
	reauthorize := false
	if sec.certs != nil && changed(sec.certFiles, force) {
		if err := sec.certs.Reload(); err != nil {
			s.log.Error("TLS certificate not reloaded; the previous one stays in force", "err", err)
			errs = append(errs, err)
		} else {
			s.log.Info("TLS certificate reloaded", "cert", s.cfg.TLSCert, "expires", sec.certs.Leaf().NotAfter)
		}
	}
	if sec.users != nil && changed([]*watchedFile{sec.users}, force) {
		u, err := auth.LoadUsers(s.cfg.Users)
		if err != nil {
			s.log.Error("users file not reloaded; the previous one stays in force", "err", err)
			errs = append(errs, err)
		} else {
			sec.authority.SetUsers(u)
			s.log.Info("users file reloaded", "file", s.cfg.Users, "users", u.Len())
			reauthorize = true
		}
	}
	if sec.policy != nil && changed([]*watchedFile{sec.policy}, force) {
		p, err := auth.LoadPolicy(s.cfg.Policy)
		if err != nil {
			s.log.Error("policy not reloaded; the previous one stays in force", "err", err)
			errs = append(errs, err)
		} else {
			sec.authority.SetPolicy(p)
			s.log.Info("policy reloaded", "file", s.cfg.Policy)
			reauthorize = true
		}
	}
	if reauthorize {
		s.broker.Reauthorize()
	}
	return errors.Join(errs...)
}

// watchReloads checks the files for changes every interval until ctx
// ends.
func (s *Server) watchReloads(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.reload(false)
		}
	}
}

// watchedFile notices when a file is replaced or changed: a different
// size, modification time or file (an editor's rename, a Kubernetes
// secret's symbolic link moving to a new directory). Polling the file's
// status does it on every file system, where change notifications miss
// renames of the directories above.
type watchedFile struct {
	path string
	last os.FileInfo
	// settling is set when a change was seen and the file has not been
	// read since: it is read once it looks the same twice in a row, so
	// that a file written in place is not read half written.
	settling bool
}

func newWatchedFile(path string) *watchedFile {
	w := &watchedFile{path: path}
	w.last, _ = os.Stat(path)
	return w
}

// changed reports whether any of files changed and then stayed the same
// for one look (or force), and records their present state.
func changed(files []*watchedFile, force bool) bool {
	ready, moving := force, false
	for _, f := range files {
		st, err := os.Stat(f.path)
		if err != nil {
			moving = true // being replaced; look again next time
			continue
		}
		switch {
		case f.last == nil || !os.SameFile(f.last, st) || st.Size() != f.last.Size() || !st.ModTime().Equal(f.last.ModTime()):
			f.settling, moving = true, true
		case f.settling:
			ready = true
		}
		f.last = st
	}
	if force || (ready && !moving) {
		for _, f := range files {
			f.settling = false
		}
		return true
	}
	return false
}
