// Package buildinfo says which build of dss is running: its version, the
// commit it was built from and the Go release that built it. The values
// come from the build information the Go toolchain embeds in every binary
// (runtime/debug.ReadBuildInfo); a release build may set Version and
// Commit with -ldflags "-X github.com/dssio/dss/internal/buildinfo.Version=v1.2.3".
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// Version and Commit, when set at link time, take precedence over what the
// build information says.
var (
	Version string
	Commit  string
)

// Info describes a build.
type Info struct {
	// Version is the module version: a tag such as v1.2.0, a pseudo-version
	// for an untagged commit, or "devel" for a build from a work tree
	// without version control information.
	Version string
	// Commit is the revision the binary was built from, "unknown" when the
	// build did not record one; Modified marks a work tree with changes
	// that were not committed.
	Commit   string
	Modified bool
	// GoVersion is the Go release that built the binary.
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

var (
	once sync.Once
	info Info
)

// Get returns the build of the running binary.
func Get() Info {
	once.Do(func() {
		bi, ok := debug.ReadBuildInfo()
		info = fromBuildInfo(bi, ok)
	})
	return info
}

func fromBuildInfo(bi *debug.BuildInfo, ok bool) Info {
	in := Info{
		Version:   "devel",
		Commit:    "unknown",
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			in.Version = v
		}
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Commit = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if Version != "" {
		in.Version = Version
	}
	if Commit != "" {
		in.Commit = Commit
	}
	return in
}

// ShortCommit returns the first 12 digits of the commit.
func (in Info) ShortCommit() string {
	c := in.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if in.Modified {
		c += "+dirty"
	}
	return c
}

// String is the one-line form that dss --version prints.
func (in Info) String() string {
	return fmt.Sprintf("dss %s (commit %s, %s, %s)", in.Version, in.ShortCommit(), in.GoVersion, in.Platform)
}
