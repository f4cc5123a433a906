// Package deploy_test checks the deployment files: the container image's
// Dockerfile, the 3-node compose file and the systemd unit. No container
// engine runs where the tests run, so the files are checked for what they
// must hold, and every dss command line in them is run through
// dss config print, which checks the settings as dss serve does.
package deploy_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/dssio/dss/internal/cli"
	"github.com/dssio/dss/internal/dsstest"
)

// checkSettings runs dss config print with args and env, and fails the
// test when dss serve would refuse them.
func checkSettings(t *testing.T, what string, args []string, env map[string]string) {
	t.Helper()
	args, env = standIns(t, args, env)
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errOut dsstest.Buffer
	code := cli.Run(context.Background(), append([]string{"config", "print"}, args...), cli.Stdio{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != 0 {
		t.Fatalf("%s: dss serve would refuse these settings: %s", what, errOut.String())
	}
}

// standIns replaces the files a deployment mounts at run time (the users
// file, the cluster secret), which dss config print reads as dss serve
// does, with files of the same kind made for the test.
func standIns(t *testing.T, args []string, env map[string]string) ([]string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	makers := map[string]func(path string){
		"users": func(path string) {
			var out, errOut dsstest.Buffer
			if cli.Run(context.Background(), []string{"passwd", path, "admin"}, cli.Stdio{In: strings.NewReader("pw\n"), Out: &out, Err: &errOut}) != 0 {
				t.Fatalf("dss passwd: %s", errOut.String())
			}
		},
		"cluster-secret-file": func(path string) {
			if err := os.WriteFile(path, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
	}
	standIn := func(flag, value string) string {
		mk, ok := makers[flag]
		if _, err := os.Stat(value); !ok || err == nil {
			return value
		}
		path := filepath.Join(dir, flag)
		mk(path)
		return path
	}
	args = slices.Clone(args)
	for i := 0; i+1 < len(args); i++ {
		if flag, ok := strings.CutPrefix(args[i], "--"); ok {
			args[i+1] = standIn(flag, args[i+1])
		}
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(k, "DSS_")), "_", "-")
		out[k] = standIn(flag, v)
	}
	return args, out
}

// serveHasFlag reports whether dss serve has the flag.
func serveHasFlag(name string) bool {
	var out, errOut dsstest.Buffer
	cli.Run(context.Background(), []string{"serve", "--help"}, cli.Stdio{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return strings.Contains(out.String(), "--"+name+" ")
}

func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var froms, users []string
	env := map[string]string{}
	var healthcheck, volume, entrypoint string
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(string(b), "\\\n", " ")))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		word, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch word {
		case "FROM":
			froms = append(froms, rest)
		case "USER":
			users = append(users, rest)
		case "ENV":
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
		case "HEALTHCHECK":
			healthcheck = rest
		case "VOLUME":
			volume = rest
		case "ENTRYPOINT":
			entrypoint = rest
		}
	}
	if len(froms) < 2 {
		t.Errorf("not a multi-stage build: %q", froms)
	}
	final := froms[len(froms)-1]
	if final != "scratch" && !strings.HasPrefix(final, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %q: want scratch or distroless static", final)
	}
	if len(users) == 0 || users[len(users)-1] == "root" || strings.HasPrefix(users[len(users)-1], "0") {
		t.Errorf("the server runs as root: USER %q", users)
	}
	if !strings.Contains(string(b), "CGO_ENABLED=0") {
		t.Error("the binary is not built static (CGO_ENABLED=0)")
	}
	if volume != "/data" || env["DSS_DATA"] != "/data" {
		t.Errorf("VOLUME %q, DSS_DATA %q: want the data in the volume /data", volume, env["DSS_DATA"])
	}
	if !strings.Contains(healthcheck, `"dss", "ready"`) && !strings.Contains(healthcheck, `/dss", "ready"`) {
		t.Errorf("HEALTHCHECK %q: want dss ready", healthcheck)
	}
	if !strings.Contains(entrypoint, "dss") {
		t.Errorf("ENTRYPOINT %q", entrypoint)
	}
	// The image's settings, with the users file it asks for.
	env["DSS_USERS"] = "/etc/dss/users"
	checkSettings(t, "Dockerfile ENV", nil, env)
}

type composeFile struct {
	Services map[string]struct {
		Hostname    string            `yaml:"hostname"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		Volumes     []string          `yaml:"volumes"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

func TestComposeCluster(t *testing.T) {
	b, err := os.ReadFile("compose/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(b, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	if len(cf.Services) != 3 {
		t.Fatalf("%d services, want 3 nodes", len(cf.Services))
	}
	clustered := serveHasFlag("peers")
	published := map[string]string{}
	peers := ""
	for name, s := range cf.Services {
		flags := map[string]string{}
		for i := 1; i+1 < len(s.Command); i += 2 {
			flags[strings.TrimPrefix(s.Command[i], "--")] = s.Command[i+1]
		}
		if s.Command[0] != "serve" || flags["node-id"] != name || s.Hostname != name {
			t.Errorf("%s: command %q, hostname %q: want serve --node-id %s on host %s", name, s.Command, s.Hostname, name, name)
		}
		_, port, _ := strings.Cut(flags["cluster-listen"], ":")
		if !strings.Contains(s.Environment["DSS_PEERS"], name+"="+name+":"+port) {
			t.Errorf("%s: DSS_PEERS %q does not name it at %s:%s", name, s.Environment["DSS_PEERS"], name, port)
		}
		if peers != "" && s.Environment["DSS_PEERS"] != peers {
			t.Errorf("%s: DSS_PEERS %q, another node has %q", name, s.Environment["DSS_PEERS"], peers)
		}
		peers = s.Environment["DSS_PEERS"]
		for _, p := range s.Ports {
			host, _, _ := strings.Cut(p, ":")
			if other, ok := published[host]; ok {
				t.Errorf("port %s published by %s and %s", host, other, name)
			}
			published[host] = name
		}
		dataVolume := ""
		for _, v := range s.Volumes {
			if src, dst, _ := strings.Cut(v, ":"); dst == "/data" {
				dataVolume = src
			}
		}
		if _, ok := cf.Volumes[dataVolume]; !ok {
			t.Errorf("%s: /data is not a named volume of its own (%q)", name, s.Volumes)
		}
		if s.Environment["DSS_CLUSTER_SECRET_FILE"] == "" || !slices.ContainsFunc(s.Volumes, func(v string) bool {
			return strings.HasSuffix(v, ":"+s.Environment["DSS_CLUSTER_SECRET_FILE"]+":ro")
		}) {
			t.Errorf("%s: no cluster secret file mounted (DSS_CLUSTER_SECRET_FILE %q, volumes %q): a cluster listener beyond loopback needs one", name, s.Environment["DSS_CLUSTER_SECRET_FILE"], s.Volumes)
		}
		if !slices.Contains(s.Healthcheck.Test, "ready") {
			t.Errorf("%s: health check %q: want dss ready", name, s.Healthcheck.Test)
		}
		args, env := s.Command[1:], s.Environment
		if !clustered {
			// Until dss serve has the cluster flags, check the rest.
			t.Logf("dss serve has no --peers: %s checked without --cluster-listen and DSS_PEERS", name)
			args = slices.DeleteFunc(slices.Clone(args), func(a string) bool {
				return a == "--cluster-listen" || a == flags["cluster-listen"]
			})
			env = maps(env, "DSS_PEERS")
		}
		checkSettings(t, "compose "+name, args, env)
	}
	if n := len(strings.Split(peers, ",")); n != 3 {
		t.Errorf("DSS_PEERS %q: want the 3 nodes", peers)
	}
}

// maps returns m without the keys drop.
func maps(m map[string]string, drop ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if !slices.Contains(drop, k) {
			out[k] = v
		}
	}
	return out
}

func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("systemd/dss.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	for _, want := range []string{
		"User=dss", "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes",
		"PrivateTmp=yes", "PrivateDevices=yes", "CapabilityBoundingSet=\n", "StateDirectory=dss",
		"RestrictAddressFamilies=", "SystemCallFilter=@system-service", "MemoryDenyWriteExecute=yes",
		"KillSignal=SIGTERM",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("the unit lacks %q", want)
		}
	}
	start := regexp.MustCompile(`(?m)^ExecStart=(\S+) (.*)$`).FindStringSubmatch(unit)
	if start == nil {
		t.Fatal("no ExecStart")
	}
	args := strings.Fields(start[2])
	if args[0] != "serve" {
		t.Fatalf("ExecStart runs %q", args)
	}
	// The settings of the unit with the example configuration file it
	// names.
	for i, a := range args {
		if a == "/etc/dss/dss.yaml" {
			args[i] = "systemd/dss.yaml"
		}
	}
	checkSettings(t, "ExecStart", args[1:], nil)

	// systemd's own check, where systemd is installed.
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit was checked for its options only")
	}
	// verify wants the program to exist: any executable will do.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dss.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, start[1], self)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", path).CombinedOutput(); err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
