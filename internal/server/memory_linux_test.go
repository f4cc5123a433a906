package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// writeTree writes files (path relative to the root: content) under a new
// directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// The memory limit of the process's control group bounds the
// memory-derived defaults, in cgroup version 2 (unified and hybrid
// layouts) and version 1, with the lowest limit of the group and its
// ancestors winning.
func TestCgroupMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64 // 0: no limit
		from  string
	}{
		{"v2, the service's own limit", map[string]string{
			"proc/self/cgroup":                                    "0::/system.slice/dss.service\n",
			"sys/fs/cgroup/cgroup.controllers":                    "memory\n",
			"sys/fs/cgroup/system.slice/memory.max":               "max\n",
			"sys/fs/cgroup/system.slice/dss.service/memory.max":   "1073741824\n",
			"sys/fs/cgroup/system.slice/dss.service/memory.high":  "536870912\n",
			"sys/fs/cgroup/system.slice/other.service/memory.max": "1024\n",
		}, 1 << 30, "cgroup v2 memory.max of "},
		{"v2, an ancestor's limit is lower", map[string]string{
			"proc/self/cgroup":                                  "0::/system.slice/dss.service\n",
			"sys/fs/cgroup/cgroup.controllers":                  "memory\n",
			"sys/fs/cgroup/system.slice/memory.max":             "268435456\n",
			"sys/fs/cgroup/system.slice/dss.service/memory.max": "max\n",
		}, 256 << 20, "system.slice"},
		{"v2, no limit", map[string]string{
			"proc/self/cgroup":                                  "0::/system.slice/dss.service\n",
			"sys/fs/cgroup/cgroup.controllers":                  "memory\n",
			"sys/fs/cgroup/system.slice/dss.service/memory.max": "max\n",
		}, 0, ""},
		{"v2 in a namespace: the group is the mount's root", map[string]string{
			"proc/self/cgroup":                 "0::/\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/memory.max":         "2147483648\n",
		}, 2 << 30, "cgroup v2"},
		{"v2 in the hybrid layout", map[string]string{
			"proc/self/cgroup":                             "1:name=systemd:/x\n0::/x\n",
			"sys/fs/cgroup/unified/cgroup.controllers":     "",
			"sys/fs/cgroup/unified/x/memory.max":           "1048576\n",
			"sys/fs/cgroup/systemd/x/cgroup.procs":         "",
			"sys/fs/cgroup/unified/x/cgroup.subtree_state": "",
		}, 1 << 20, "cgroup v2"},
		{"v1", map[string]string{
			"proc/self/cgroup":                                      "9:name=systemd:/\n4:memory:/docker/abc\n0::/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":            "9223372036854771712\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "536870912\n",
		}, 512 << 20, "cgroup v1 memory.limit_in_bytes of "},
		{"v1 unlimited", map[string]string{
			"proc/self/cgroup": "4:memory:/process_api/d92f\n",
			"sys/fs/cgroup/memory/process_api/d92f/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0, ""},
		{"v1, the path is not under the mount (a namespace)", map[string]string{
			"proc/self/cgroup":                           "4:memory,cpu:/docker/abc\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "104857600\n",
		}, 100 << 20, "cgroup v1"},
		{"no cgroup file", map[string]string{}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			got, ok := cgroupMemoryLimit(filepath.Join(root, "proc/self/cgroup"), filepath.Join(root, "sys/fs/cgroup"))
			if ok != (tc.want != 0) || got.bytes != tc.want || !strings.Contains(got.source, tc.from) {
				t.Fatalf("cgroupMemoryLimit = %v (ok %v), want %d bytes from %q", got, ok, tc.want, tc.from)
			}
		})
	}
}

// The machine's memory comes from sysinfo(2), not /proc/meminfo, which
// systemd's ProcSubset=pid (the shipped unit) hides.
func TestMachineMemoryWithoutProcMeminfo(t *testing.T) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		t.Fatal(err)
	}
	total := int64(si.Totalram) * max(int64(si.Unit), 1)
	m := readMemoryLimit()
	if m.bytes > total || (m.bytes < total && !strings.HasPrefix(m.source, "cgroup")) {
		t.Fatalf("readMemoryLimit() = %v; sysinfo says %d bytes", m, total)
	}
}
