package linearize

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	flagRounds = flag.Int("linearize.rounds", 0, "fault rounds per test (default: a few, or hundreds with DSS_LONG=1)")
	flagSeed   = flag.Uint64("linearize.seed", 0, "seed of the faults and requests (default: from the clock; printed)")
	flagBin    = flag.String("linearize.bin", "", "the dss binary to test (default: built from this module)")
	flagOut    = flag.String("linearize.out", filepath.Join(os.TempDir(), "dss-linearize"), "directory for the visualisations of failing histories and the nodes' logs")
)

// dssBinary is the dss binary built once for the package's tests.
var dssBinary string

// raceBinary is dss built with the race detector, once, for the tests
// that run it.
var raceBinary struct {
	once sync.Once
	path string
	err  error
}

// raceDSS returns the path of dss built with -race, building it at the
// first call: a data race in a node is invisible to a plain binary.
func raceDSS(t testing.TB) string {
	t.Helper()
	raceBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "dss-linearize-race")
		if err != nil {
			raceBinary.err = err
			return
		}
		raceBinary.path = filepath.Join(dir, "dss")
		out, err := exec.Command("go", "build", "-race", "-o", raceBinary.path, "github.com/dssio/dss/cmd/dss").CombinedOutput()
		if err != nil {
			raceBinary.err = fmt.Errorf("building dss with -race: %v\n%s", err, out)
		}
	})
	if raceBinary.err != nil {
		t.Fatal(raceBinary.err)
	}
	return raceBinary.path
}

// raceReport is what a binary built with -race prints for a data race.
const raceReport = "WARNING: DATA RACE"

// clusterSupport is empty when the binary's serve command accepts the
// cluster flags, and otherwise says which it lacks.
var clusterSupport string

func TestMain(m *testing.M) {
	flag.Parse()
	if runtime.GOOS == "windows" {
		fmt.Println("linearize: skipped: the faults pause dss processes with SIGSTOP and SIGCONT, which Windows does not have")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "dss-linearize-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dssBinary = *flagBin
	if dssBinary == "" {
		dssBinary = filepath.Join(dir, "dss")
		build := exec.Command("go", "build", "-o", dssBinary, "github.com/dssio/dss/cmd/dss")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building dss:", err)
			os.Exit(1)
		}
	}
	clusterSupport = detectCluster(dssBinary)
	code := m.Run()
	os.RemoveAll(dir)
	if raceBinary.path != "" {
		os.RemoveAll(filepath.Dir(raceBinary.path))
	}
	os.Exit(code)
}

// detectCluster asks the binary's serve command for its flags.
func detectCluster(bin string) string {
	out, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("dss serve --help failed: %v\n%s", err, out)
	}
	var lacks []string
	for _, f := range []string{"--node-id", "--cluster-listen", "--peers"} {
		if !strings.Contains(string(out), f+" ") {
			lacks = append(lacks, f)
		}
	}
	if len(lacks) > 0 {
		return "this dss serve has no " + strings.Join(lacks, ", ")
	}
	return ""
}

// seed returns the seed of a test run, and logs it so that a failure can
// be replayed.
func seed(t *testing.T) uint64 {
	s := *flagSeed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -linearize.seed=%d)", s, s)
	return s
}
