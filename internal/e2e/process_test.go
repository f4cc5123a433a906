package e2e_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dssio/dss/internal/dsstest"
)

// dssBinary is the dss binary built once for the package's tests.
var dssBinary string

// raceBinary is dss built with the race detector, once, for the tests
// that run it (raceDSS): a data race in the server is invisible to a
// plain binary.
var raceBinary struct {
	once sync.Once
	path string
	err  error
}

// raceDSS returns the path of dss built with -race, building it at the
// first call.
func raceDSS(t testing.TB) string {
	t.Helper()
	if os.Getenv("DSS_E2E_BIN") != "" {
		return dssBinary // the binary given, however it was built
	}
	raceBinary.once.Do(func() {
		raceBinary.path = dssBinary + "-race"
		build := exec.Command("go", "build", "-race", "-o", raceBinary.path, "github.com/dssio/dss/cmd/dss")
		out, err := build.CombinedOutput()
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

func TestMain(m *testing.M) {
	if runtime.GOOS == "windows" {
		fmt.Println("e2e: skipped: the tests stop dss processes with SIGTERM and SIGHUP, which Windows cannot send")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "dss-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dssBinary = filepath.Join(dir, "dss")
	if bin := os.Getenv("DSS_E2E_BIN"); bin != "" {
		// A dss built elsewhere: another commit's, to see a test fail
		// there.
		dssBinary = bin
	} else {
		build := exec.Command("go", "build", "-o", dssBinary, "github.com/dssio/dss/cmd/dss")
		build.Stdout, build.Stderr = os.Stdout, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building dss:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// process is a dss server running as a child process.
type process struct {
	t    testing.TB
	cmd  *exec.Cmd
	addr string
	out  *dsstest.Buffer
	done chan struct{}
	err  error // set when done is closed
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startDSS runs `dss serve` with args on addr and waits until it accepts
// connections. The process is killed when the test ends.
func startDSS(t testing.TB, addr string, args ...string) *process {
	t.Helper()
	p, ok := tryStartDSS(t, addr, args...)
	if !ok {
		t.Fatalf("dss exited at start: %v\n%s", p.err, p.out)
	}
	return p
}

// anyPort has the server pick a free loopback port, which startDSS and
// tryStartDSS read from its start-up line into process.addr: a port that
// was free a moment ago (freeAddr) may be taken by another process before
// the server binds it, most of all across a restart.
const anyPort = "127.0.0.1:0"

// serving matches the start-up line and the MQTT address in it.
var serving = regexp.MustCompile(`msg="dss serving" .*mqtt=(\S+)`)

// tryStartDSS runs `dss serve` with args on addr and waits until it
// accepts connections (true) or exits (false).
func tryStartDSS(t testing.TB, addr string, args ...string) (*process, bool) {
	t.Helper()
	return tryStartBinary(t, dssBinary, addr, args...)
}

// tryStartBinary is tryStartDSS with the dss binary bin.
func tryStartBinary(t testing.TB, bin, addr string, args ...string) (*process, bool) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", addr}, args...)...)
	// A race ends the process at once, so that the test sees it.
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1")
	p := runProcess(t, addr, cmd)
	deadline := time.Now().Add(time.Minute)
	for {
		if addr == anyPort {
			if m := serving.FindStringSubmatch(p.out.String()); m != nil {
				p.addr = m[1]
			}
		}
		if p.addr != anyPort {
			if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
				c.Close()
				return p, true
			}
		}
		select {
		case <-p.done:
			return p, false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("dss did not listen on %s:\n%s", addr, p.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runProcess starts cmd, a dss server that is to listen on addr, with
// its output collected in process.out. It is killed when the test ends.
func runProcess(t testing.TB, addr string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{t: t, cmd: cmd, addr: addr, out: &dsstest.Buffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if strings.Contains(p.out.String(), raceReport) {
			t.Errorf("the race detector reported a data race in dss:\n%s", p.out)
		}
	})
	return p
}

// runDSS runs a dss command to its end and returns its combined output
// and exit status.
func runDSS(t testing.TB, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(dssBinary, args...).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("dss %v: %v", args, err)
	}
	if ee != nil {
		return string(out), ee.ExitCode()
	}
	return string(out), 0
}

// kill ends the process with SIGKILL, as a crash or power loss would.
func (p *process) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// terminate sends SIGTERM and returns the exit status.
func (p *process) terminate() int {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		// The goroutine dump says where the shutdown waits.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
		p.t.Fatalf("dss did not stop within 30s of SIGTERM; its output and goroutines after SIGQUIT:\n%s", p.out)
	}
	return p.cmd.ProcessState.ExitCode()
}
