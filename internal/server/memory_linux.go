package server

import (
	"bufio"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// readMemoryLimit returns the machine's memory, from sysinfo(2), or the
// limit of the process's control group where that is lower. sysinfo needs
// no file: under systemd's ProcSubset=pid (the shipped unit) /proc/meminfo
// is hidden, while /proc/self/cgroup and /sys/fs/cgroup stay readable.
func readMemoryLimit() memoryLimit {
	m := memoryLimit{fallbackMemory, "assumed: sysinfo(2) failed"}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err == nil && si.Totalram > 0 {
		unit := max(int64(si.Unit), 1)
		m = memoryLimit{int64(si.Totalram) * unit, "the machine's memory (sysinfo)"}
	}
	if c, ok := cgroupMemoryLimit("/proc/self/cgroup", "/sys/fs/cgroup"); ok && c.bytes < m.bytes {
		m = c
	}
	return m
}

// cgroupMemoryLimit returns the lowest memory limit of the control group
// that procCgroup (the process's /proc/self/cgroup) names and of its
// ancestors, under the cgroup file systems at root: version 2
// (memory.max, at root or, in the hybrid layout, at root/unified) or
// version 1 (memory.limit_in_bytes under root/memory). ok is false when
// no limit is set.
func cgroupMemoryLimit(procCgroup, root string) (memoryLimit, bool) {
	f, err := os.Open(procCgroup)
	if err != nil {
		return memoryLimit{}, false
	}
	defer f.Close()
	var v1, v2 string
	hasV2 := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, hasV2 = parts[2], true
		case hasController(parts[1], "memory"):
			v1 = parts[2]
		}
	}
	if v1 != "" {
		// A memory controller of version 1 wins: in the hybrid layout the
		// version 2 tree holds no controllers.
		if l, ok := lowestLimit(filepath.Join(root, "memory"), v1, "memory.limit_in_bytes", "cgroup v1 memory.limit_in_bytes"); ok {
			return l, true
		}
	}
	if hasV2 {
		for _, mount := range []string{root, filepath.Join(root, "unified")} {
			if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err != nil {
				continue
			}
			if l, ok := lowestLimit(mount, v2, "memory.max", "cgroup v2 memory.max"); ok {
				return l, true
			}
		}
	}
	return memoryLimit{}, false
}

// lowestLimit reads file in the group's directory under mount and in
// every ancestor up to mount, and returns the lowest limit. In a cgroup
// namespace, or a container that mounts only its own group, the path
// that /proc/self/cgroup names may not exist under mount: then the
// mount's own directory is the group.
func lowestLimit(mount, group, file, what string) (memoryLimit, bool) {
	dir := filepath.Join(mount, filepath.FromSlash(path.Clean("/"+group)))
	if _, err := os.Stat(dir); err != nil {
		dir = mount
	}
	var best memoryLimit
	found := false
	for {
		if n, ok := readLimit(filepath.Join(dir, file)); ok && (!found || n < best.bytes) {
			best, found = memoryLimit{n, what + " of " + dir}, true
		}
		if dir == mount || len(dir) <= len(mount) {
			break
		}
		dir = filepath.Dir(dir)
	}
	return best, found
}

// readLimit reads a memory limit file: a number of bytes, or "max" (v2)
// or a number near 2^63 (v1) for none.
func readLimit(file string) (int64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false // "max", or v1's page-rounded "unlimited"
	}
	return n, true
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}
