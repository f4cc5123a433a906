package cli

import (
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/spf13/pflag"
)

// httpEndpoint is --http, the flag of every command that talks to a
// server's HTTP endpoint (its --http-listen): HOST:PORT or
// http://HOST:PORT, from the command line or DSS_HTTP.
type httpEndpoint struct {
	addr  string
	alias string // the flag's old name, "" for none
	old   string // its value
}

// add defines --http with the default def ("" for none), and, for a
// command that named it so before, the deprecated alias (hidden, with its
// own environment variable).
func (h *httpEndpoint) add(fs *pflag.FlagSet, def, alias, aliasEnv string) {
	fs.StringVar(&h.addr, "http", def, "the server's HTTP endpoint, HOST:PORT or http://HOST:PORT (its --http-listen, not the MQTT listener)")
	if alias != "" {
		h.alias = alias
		fs.StringVar(&h.old, alias, "", "deprecated: use --http")
		_ = fs.MarkHidden(alias)
		setEnvName(fs.Lookup(alias), aliasEnv)
	}
}

// url returns the URL of path on the endpoint. A value given under the
// old name counts when --http is not given, with a notice on warn.
func (h *httpEndpoint) url(fs *pflag.FlagSet, warn io.Writer, path string) (string, error) {
	a := h.addr
	if h.alias != "" && fs.Changed(h.alias) && !fs.Changed("http") {
		fmt.Fprintf(warn, "dss: --%s (%s) is deprecated: use --http (DSS_HTTP)\n", h.alias, flagEnvName(fs.Lookup(h.alias)))
		a = h.old
	}
	a = strings.TrimSuffix(strings.TrimSpace(a), "/")
	switch {
	case a == "":
		return "", fmt.Errorf("--http: give the address of the server's HTTP endpoint (its --http-listen), HOST:PORT")
	case strings.HasPrefix(a, "https://"):
		return "", fmt.Errorf("--http %q: the HTTP endpoint serves plain HTTP: write http://HOST:PORT or HOST:PORT", h.addr)
	case strings.HasPrefix(a, "http://"):
		a = strings.TrimPrefix(a, "http://")
	case strings.Contains(a, "://"):
		return "", fmt.Errorf("--http %q: want HOST:PORT or http://HOST:PORT", h.addr)
	}
	if _, _, err := net.SplitHostPort(a); err != nil {
		return "", fmt.Errorf("--http %q: want HOST:PORT or http://HOST:PORT, such as 127.0.0.1:9090", h.addr)
	}
	return "http://" + a + path, nil
}
