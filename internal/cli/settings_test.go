package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/dssio/dss/internal/dsstest"
	"github.com/dssio/dss/internal/server"
)

// writeConfig writes a configuration file for the test and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dss.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// printed runs dss config print and returns the settings it printed, by
// name, with their comments.
func printed(t *testing.T, args ...string) map[string][2]string {
	t.Helper()
	r := runCLI(t, "", append([]string{"config", "print"}, args...)...).expectCode(t, ExitOK)
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(r.out), &doc); err != nil {
		t.Fatalf("output is not YAML: %v\n%s", err, r.out)
	}
	out := make(map[string][2]string)
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		out[m.Content[i].Value] = [2]string{m.Content[i+1].Value, m.Content[i+1].LineComment}
	}
	return out
}

func TestSettingsPrecedence(t *testing.T) {
	file := writeConfig(t, "listen: 127.0.0.1:1001\nfsync: everysec\nnode-id: from-file\nlog-level: debug\nin-memory: true\n")
	t.Setenv("DSS_NODE_ID", "from-env")
	t.Setenv("DSS_LOG_LEVEL", "warn")
	got := printed(t, "--config", file, "--log-level", "error")
	for name, want := range map[string][2]string{
		"listen":    {"127.0.0.1:1001", "# from the config file"},
		"fsync":     {"everysec", "# from the config file"},
		"in-memory": {"true", "# from the config file"},
		"node-id":   {"from-env", "# from DSS_NODE_ID"},
		"log-level": {"error", "# from --log-level"},
		"data":      {"dss-data", "# default"},
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	if _, ok := got["config"]; ok {
		t.Errorf("config print lists the config flag itself")
	}

	// DSS_CONFIG names the file when --config does not.
	t.Setenv("DSS_CONFIG", file)
	if got := printed(t); got["listen"][0] != "127.0.0.1:1001" {
		t.Errorf("with DSS_CONFIG: listen %q", got["listen"])
	}
}

// An empty listener address or node id is printed as given, with the
// value the server puts in its place in the comment.
func TestConfigPrintNamesTheServersDefaults(t *testing.T) {
	host := server.DefaultNodeID()
	// The files must be there: config print reads them as serve does.
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	if code, e := runWithInput(t, "pw\n", "passwd", users, "alice"); code != ExitOK {
		t.Fatalf("passwd: %s", e)
	}
	cert := dsstest.NewCA(t, "ca").Server("localhost")
	for _, tc := range []struct {
		args []string
		want map[string][2]string
	}{
		{nil, map[string][2]string{
			"listen":     {"", "# default: the server uses 127.0.0.1:1883"},
			"tls-listen": {"", "# default"},
			"node-id":    {"", "# default: the server uses " + host},
		}},
		{[]string{"--users", users}, map[string][2]string{
			"listen": {"", "# default: the server uses :1883"},
		}},
		{[]string{"--users", users, "--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile, "--listen", "127.0.0.1:1"}, map[string][2]string{
			"listen":     {"127.0.0.1:1", "# from --listen"},
			"tls-listen": {"", "# default: the server uses :8883"},
		}},
	} {
		got := printed(t, tc.args...)
		for name, want := range tc.want {
			if got[name] != want {
				t.Errorf("%v: %s printed as %q, want %q", tc.args, name, got[name], want)
			}
		}
	}
}

// The output of dss config print is a configuration file that gives the
// same settings.
func TestConfigPrintRoundTrip(t *testing.T) {
	r := runCLI(t, "", "config", "print", "--listen", "127.0.0.1:1002", "--max-clock-skew", "90s", "--persistence", "flagged").expectCode(t, ExitOK)
	again := runCLI(t, "", "config", "print", "--config", writeConfig(t, r.out)).expectCode(t, ExitOK)
	strip := func(s string) string {
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, "#") {
				lines = append(lines, strings.SplitN(l, " #", 2)[0])
			}
		}
		return strings.Join(lines, "\n")
	}
	if strip(r.out) != strip(again.out) {
		t.Fatalf("first:\n%s\nfrom its own output:\n%s", r.out, again.out)
	}
}

func TestSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		env  [2]string
		args []string
		want string
	}{
		{name: "unknown key", file: "listen: :1\nfsink: always\n",
			want: `line 2: unknown setting "fsink"`},
		{name: "two unknown keys", file: "a: 1\nb: 2\n",
			want: `line 1: unknown setting "a"; line 2: unknown setting "b"`},
		{name: "enum in file", file: "fsync: sometimes\n",
			want: `line 1: fsync: "sometimes" is not one of always, everysec or no`},
		{name: "bool in file", file: "pprof: maybe\n",
			want: `line 1: pprof: "maybe" is not true or false`},
		{name: "mapping in file", file: "http-listen:\n  host: x\n",
			want: `line 2: http-listen: want a value`},
		{name: "list for one value", file: "http-listen: [a, b]\n",
			want: `http-listen: a list where one value is wanted`},
		{name: "not a mapping", file: "- listen\n",
			want: `want a YAML mapping of setting names to values`},
		{name: "TOML", file: "listen = \"127.0.0.1:1884\"\n",
			want: `line 1: want a YAML mapping of setting names to values, one a line (listen: 127.0.0.1:1883)`},
		{name: "bad YAML", file: "listen: [\n",
			want: `config file`},
		{name: "enum in env", env: [2]string{"DSS_LOG_FORMAT", "xml"},
			want: `environment variable DSS_LOG_FORMAT: "xml" is not one of text or json`},
		{name: "duration in env", env: [2]string{"DSS_MAX_CLOCK_SKEW", "5"},
			want: `environment variable DSS_MAX_CLOCK_SKEW: "5": a duration needs a unit: 5s, 5ms or 5m`},
		{name: "int on the command line", args: []string{"--read-loops", "many"},
			want: `--read-loops: "many" is not an integer`},
		{name: "uint on the command line", args: []string{"--max-packet-size", "-1"},
			want: `--max-packet-size: "-1": want a size of 0 or more`},
		{name: "listen address", args: []string{"--http-listen", "1883"},
			want: `--http-listen: "1883": want HOST:PORT`},
		{name: "http address in env", env: [2]string{"DSS_HTTP_LISTEN", "localhost"},
			want: `environment variable DSS_HTTP_LISTEN: "localhost": want HOST:PORT`},
		{name: "node id in file", file: "node-id: a:b\n",
			want: `config file`},
		{name: "negative skew", args: []string{"--max-clock-skew", "-1s"},
			want: `--max-clock-skew: "-1s": want a duration of 0 or more`},
		{name: "snapshot size", args: []string{"--snapshot-after", "0"},
			want: `--snapshot-after: "0": want a size above 0`},
		{name: "read loops", args: []string{"--read-loops", "-2"},
			want: `--read-loops: "-2": want -1`},
		{name: "queued bytes per session", args: []string{"--max-queued-bytes-per-session", "-2"},
			want: `--max-queued-bytes-per-session: "-2": want a size such as 512MiB, or -1 for no limit`},
		{name: "queued bytes in file", file: "max-queued-bytes: -1048576\n",
			want: `max-queued-bytes: "-1048576": want a size such as 512MiB, or -1 for no limit`},
		{name: "keys bound of zero", args: []string{"--max-keys", "0"},
			want: `--max-keys: "0": want 1 or more, or -1 for no limit`},
		{name: "inflight bound below -1", env: [2]string{"DSS_MAX_INFLIGHT_PER_CLIENT", "-5"},
			want: `environment variable DSS_MAX_INFLIGHT_PER_CLIENT: "-5": want 1 or more, or -1 for no limit`},
		{name: "keynotify bound in file", file: "max-keynotify-per-client: -2\n",
			want: `max-keynotify-per-client: "-2": want 1 or more, or -1 for no limit`},
		{name: "subscriptions bound of zero", args: []string{"--max-subscriptions-per-client", "0"},
			want: `--max-subscriptions-per-client: "0": want 1 or more, or -1 for no limit`},
		{name: "store bytes below -1", args: []string{"--max-store-bytes", "-7"},
			want: `--max-store-bytes: "-7": want a size such as 512MiB, or -1 for no limit`},
		{name: "negative connect timeout", args: []string{"--connect-timeout", "-1s"},
			want: `--connect-timeout: "-1s": want a duration above 0`},
		{name: "zero connect timeout", args: []string{"--connect-timeout", "0s"},
			want: `--connect-timeout: "0s": want a duration above 0`},
		{name: "missing file", args: []string{"--config", "/nonexistent/dss.yaml"},
			want: `config file: open /nonexistent/dss.yaml`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append(args, "--config", writeConfig(t, tc.file))
			}
			if tc.env[0] != "" {
				t.Setenv(tc.env[0], tc.env[1])
			}
			// dss serve and dss config print refuse the same settings
			// with the same words, before anything starts.
			// (A serve that wrongly starts stops at once: its context is
			// done.)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			for _, cmd := range [][]string{{"serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0"}, {"config", "print"}} {
				var out, errOut dsstest.Buffer
				code := Run(ctx, append(cmd, args...), Stdio{In: strings.NewReader(""), Out: &out, Err: &errOut})
				r := cliResult{code: code, out: out.String(), err: errOut.String()}
				r.expectCode(t, ExitError)
				if !strings.Contains(r.err, tc.want) || r.out != "" {
					t.Errorf("%v: stderr %q, want it to contain %q; stdout %q", cmd, r.err, tc.want, r.out)
				}
			}
		})
	}
}

func TestServeHelpListsDefaults(t *testing.T) {
	r := runCLI(t, "", "serve", "--help").expectCode(t, ExitOK)
	for _, want := range []string{
		`--listen string`,
		`--fsync string`, `(default "always")`,
		`--data string`, `(default "dss-data")`,
		`--max-clock-skew duration`, `(default 1m0s)`,
		`--config string`, `DSS_CONFIG`,
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("dss serve --help lacks %q:\n%s", want, r.out)
		}
	}
}

func TestConfigPrintMasksSecrets(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	fs := cmd.Flags()
	fs.String("admin-password", "", "")
	fs.String("peer-key", "", "")
	markSecret(fs, "peer-key")
	fs.String("listen", "", "")
	fs.String("auth-token", "", "")
	fs.String("admin-token-file", "", "")
	if err := fs.Parse([]string{"--admin-password", "hunter2", "--peer-key", "k", "--listen", ":1", "--admin-token-file", "/etc/dss/token"}); err != nil {
		t.Fatal(err)
	}
	st, err := resolveSettings(cmd)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range configEntries(fs, st) {
		got[e.flag.Name] = e.node().Value
	}
	want := map[string]string{"admin-password": masked, "peer-key": masked, "listen": ":1", "auth-token": "", "admin-token-file": "/etc/dss/token"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s printed as %q, want %q", k, got[k], v)
		}
	}
}

// A flag added to dss serve is a setting of the file and the environment
// with no code of its own.
func TestSettingsCoverEveryFlag(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	var list []string
	cmd.Flags().StringSlice("peers", nil, "")
	cmd.Flags().Int("new-limit", 5, "")
	addConfigFlag(cmd)
	if err := cmd.Flags().Parse([]string{"--config", writeConfig(t, "peers: [a=1, b=2]\nnew-limit: 7\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveSettings(cmd); err != nil {
		t.Fatal(err)
	}
	list, _ = cmd.Flags().GetStringSlice("peers")
	n, _ := cmd.Flags().GetInt("new-limit")
	if strings.Join(list, ",") != "a=1,b=2" || n != 7 {
		t.Fatalf("peers %q new-limit %d", list, n)
	}
	t.Setenv("DSS_PEERS", "c=3")
	cmd = &cobra.Command{Use: "x"}
	cmd.Flags().StringSlice("peers", nil, "")
	if _, err := resolveSettings(cmd); err != nil {
		t.Fatal(err)
	}
	if list, _ = cmd.Flags().GetStringSlice("peers"); strings.Join(list, ",") != "c=3" {
		t.Fatalf("peers from the environment %q", list)
	}
}

// dss config print fails, with serve's message, wherever serve would
// refuse to start.
func TestConfigPrintRefusesWhatServeRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:1883"}, "no authentication is configured"},
		{[]string{"--in-memory", "--cluster-listen", "127.0.0.1:7946", "--peers", "n1=127.0.0.1:7946"}, "not --in-memory"},
		{[]string{"--users", filepath.Join(t.TempDir(), "missing")}, "no such file"},
		{[]string{"--policy", "p.yaml"}, "only authentication establishes"},
		{[]string{"--cluster-listen", "10.0.0.1:7946", "--peers", "n1=10.0.0.1:7946"}, "secret"},
	} {
		r := runCLI(t, "", append([]string{"config", "print"}, tc.args...)...)
		if r.code != ExitError || !strings.Contains(r.err, tc.want) {
			t.Errorf("config print %v: exit %d, stderr %q; want exit 2 and %q", tc.args, r.code, r.err, tc.want)
		}
		s := runCLI(t, "", append([]string{"serve", "--data", t.TempDir()}, tc.args...)...)
		if s.code != ExitError || !strings.Contains(s.err, tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q; want exit 2 and %q", tc.args, s.code, s.err, tc.want)
		}
	}
}
