package cli

import (
	"github.com/spf13/pflag"

	"github.com/dssio/dss/internal/server"
)

// addWebFlags adds the flags of MQTT over WebSocket to dss serve's: with
// --http-listen, --ws-listen turns the web console on (docs/console.md).
func addWebFlags(f *pflag.FlagSet, cfg *server.Config) {
	f.StringVar(&cfg.WSListen, "ws-listen", "", "MQTT over WebSocket listener address HOST:PORT (subprotocol mqtt, any path; the web console connects to it); loopback only until authentication is configured; empty turns it off")
	f.StringVar(&cfg.WSSListen, "wss-listen", "", "MQTT over WebSocket over TLS listener address HOST:PORT, with the certificate of --tls-cert and --tls-key; empty turns it off")
	f.StringSliceVar(&cfg.WSOrigins, "ws-origins", nil, "origins (scheme://host[:port], * and ? wildcards) of other web pages that may open WebSocket connections; pages of the listener's own host always may")
}
