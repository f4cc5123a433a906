package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "github.com/dssio/dss", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	in := fromBuildInfo(bi, true)
	if in.Version != "v1.2.3" || in.Commit != "0123456789abcdef0123" || !in.Modified || in.GoVersion != "go1.99.1" {
		t.Fatalf("info %+v", in)
	}
	if got, want := in.ShortCommit(), "0123456789ab+dirty"; got != want {
		t.Fatalf("short commit %q, want %q", got, want)
	}
	if s := in.String(); !strings.HasPrefix(s, "dss v1.2.3 (commit 0123456789ab+dirty, go1.99.1, ") {
		t.Fatalf("String() = %q", s)
	}
}

func TestDevelBuild(t *testing.T) {
	in := fromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true)
	if in.Version != "devel" || in.Commit != "unknown" || in.GoVersion == "" {
		t.Fatalf("info %+v", in)
	}
	if in := fromBuildInfo(nil, false); in.Version != "devel" {
		t.Fatalf("without build info: %+v", in)
	}
}

func TestLinkTimeValuesWin(t *testing.T) {
	Version, Commit = "v9.9.9", "feedface"
	defer func() { Version, Commit = "", "" }()
	in := fromBuildInfo(&debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}}, true)
	if in.Version != "v9.9.9" || in.Commit != "feedface" {
		t.Fatalf("info %+v", in)
	}
}
