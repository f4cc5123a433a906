package cli

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dssio/dss/internal/broker"
	"github.com/dssio/dss/internal/wire"
)

// validateServe checks the settings of dss serve that parse but cannot
// work, before anything starts. Every flag whose name ends in "listen" is
// an address to listen on.
func validateServe(fs *pflag.FlagSet, st *settings) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err == nil && strings.HasSuffix(f.Name, "listen") {
			if msg := checkListenAddr(f.Value.String()); msg != "" {
				err = st.invalid(f, msg)
			}
		}
	})
	if err != nil {
		return err
	}
	for _, c := range serveChecks {
		f := fs.Lookup(c.flag)
		if f == nil {
			continue
		}
		if msg := c.check(f.Value.String()); msg != "" {
			return st.invalid(f, msg)
		}
	}
	for name, check := range attachChecks {
		if f := fs.Lookup(name); f != nil {
			if msg := check(f.Value.String()); msg != "" {
				return st.invalid(f, msg)
			}
		}
	}
	return nil
}

// serveChecks are the checks of single settings beyond their type.
var serveChecks = []struct {
	flag  string
	check func(value string) string
}{
	{"node-id", func(v string) string {
		if strings.ContainsRune(v, ':') {
			return "may not contain ':', which separates the parts of a version"
		}
		return ""
	}},
	{"max-clock-skew", func(v string) string {
		if d, err := time.ParseDuration(v); err == nil && d < 0 {
			return "want a duration of 0 or more, such as 1m"
		}
		return ""
	}},
	{"snapshot-after", func(v string) string {
		if n, err := parseSize(v); err == nil && n <= 0 {
			return "want a size above 0, such as 64MiB"
		}
		return ""
	}},
	{"max-key-size", func(v string) string {
		n, err := parseSize(v)
		if err == nil && (n < 1 || n > 1<<20 || broker.MaxClientIDSize(int(n)) < 23) {
			return fmt.Sprintf("want 1 to %d bytes: a notification topic holds twice the key and twice the client id, and must fit 65,535 bytes with a client id of 23", (wire.MaxTopicLen-wire.NotifyTopicLen(23, 0))/2)
		}
		return ""
	}},
	{"max-value-size", positiveSize},
	{"max-keys", countOrNoLimit},
	{"max-inflight-per-client", countOrNoLimit},
	{"max-keynotify-per-client", countOrNoLimit},
	{"max-subscriptions-per-client", countOrNoLimit},
	{"max-topic-levels", countOrNoLimit},
	{"max-retained-messages", countOrNoLimit},
	{"max-retained-bytes", sizeOrNoLimit},
	{"max-topic-length", countOrNoLimit},
	{"max-store-bytes", sizeOrNoLimit},
	{"connect-timeout", func(v string) string {
		if d, err := time.ParseDuration(v); err == nil && d <= 0 {
			return "want a duration above 0, such as 10s"
		}
		return ""
	}},
	{"packet-read-timeout", func(v string) string {
		if d, err := time.ParseDuration(v); err == nil && d <= 0 {
			return "want a duration above 0, such as 1m"
		}
		return ""
	}},
	{"http-idle-timeout", func(v string) string {
		if d, err := time.ParseDuration(v); err == nil && d <= 0 {
			return "want a duration above 0, such as 1m"
		}
		return ""
	}},
	{"http-max-connections", func(v string) string {
		if n, err := strconv.Atoi(v); err == nil && n < 1 {
			return "want 1 or more"
		}
		return ""
	}},
	{"max-queued-bytes-per-session", sizeOrNoLimit},
	{"max-queued-bytes", sizeOrNoLimit},
	{"max-outbox-bytes", sizeOrNoLimit},
	{"max-packet-size", func(v string) string {
		if n, err := parseSize(v); err == nil && (n < 1024 || n > 268435455) {
			return "want 1KiB to 268435455 bytes (the protocol's limit), such as 64MiB"
		}
		return ""
	}},
	{"max-keepalive", func(v string) string {
		if d, err := time.ParseDuration(v); err == nil && (d < 0 || d > 65535*time.Second || d%time.Second != 0) {
			return "want 0 (no cap) or whole seconds up to 18h12m15s (65,535 s), such as 60s"
		}
		return ""
	}},
	{"max-qos", func(v string) string {
		if n, err := strconv.Atoi(v); err == nil && (n < 1 || n > 2) {
			return "want 1 or 2 (the state store's requests and responses are QoS 1)"
		}
		return ""
	}},
	{"receive-maximum", func(v string) string {
		if v == "0" {
			return "want 1 to 65535"
		}
		return ""
	}},
	{"read-loops", func(v string) string {
		if n, err := strconv.Atoi(v); err == nil && n < -1 {
			return "want -1 (a goroutine per connection), 0 (one loop per CPU) or a number of loops"
		}
		return ""
	}},
}

// positiveSize checks a number of bytes that must be at least 1.
func positiveSize(v string) string {
	if n, err := parseSize(v); err == nil && n < 1 {
		return "want a size above 0, such as 32MiB"
	}
	return ""
}

// countOrNoLimit checks a bound that -1 turns off. 0 would be taken for
// the default by the server, which is not what one who writes it means.
func countOrNoLimit(v string) string {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && (n == 0 || n < -1) {
		return "want 1 or more, or -1 for no limit"
	}
	return ""
}

// sizeOrNoLimit checks a bound in bytes that -1 turns off (and 0 gives
// its default).
func sizeOrNoLimit(v string) string {
	if n, err := parseSize(v); err == nil && n < -1 {
		return "want a size such as 512MiB, or -1 for no limit"
	}
	return ""
}

// checkListenAddr returns what is wrong with a listener address, or ""
// when it is usable or empty (off).
func checkListenAddr(addr string) string {
	if addr == "" {
		return ""
	}
	const want = "want HOST:PORT, such as 127.0.0.1:1883, [::1]:1883 or :1883 (every interface)"
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return want
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil {
		if _, err := net.LookupPort("tcp", port); err != nil {
			return want
		}
	} else if n > 65535 {
		return want
	}
	return ""
}

// invalid reports a setting whose value cannot work, named as the user
// gave it.
func (st *settings) invalid(f *pflag.Flag, msg string) error {
	return fmt.Errorf("%s: %q: %s", st.where(f), f.Value.String(), msg)
}

// where names a setting the way its value was given.
func (st *settings) where(f *pflag.Flag) string {
	switch st.sources[f.Name] {
	case sourceEnv:
		return "environment variable " + envName(f.Name)
	case sourceFile:
		return fmt.Sprintf("config file %s: %s", st.file, f.Name)
	}
	return "--" + f.Name
}
