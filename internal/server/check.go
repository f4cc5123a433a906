package server

import (
	"io"
	"log/slog"
)

// Check reports the first setting of cfg that New would refuse, without
// opening, binding or starting anything: the settings themselves
// (Validate, after the defaults), a listener beyond loopback without
// authentication, the users, policy and TLS files (read and parsed as at
// start), and a cluster node's settings (a secret for a listener beyond
// loopback). What only starting can tell (a port taken, a damaged data
// directory) it does not check. dss config print runs it, so that it
// fails where dss serve would.
func Check(cfg Config) error {
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	sec, err := cfg.loadSecurity()
	if err != nil {
		return err
	}
	if err := cfg.checkListeners(cfg.Listen, sec.tlsListen(&cfg), cfg.WSListen, cfg.WSSListen, cfg.Logger); err != nil {
		return err
	}
	if cfg.Cluster.Listen != "" {
		if err := clusterConfig(cfg).Check(); err != nil {
			return err
		}
	}
	return nil
}
