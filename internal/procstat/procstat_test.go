package procstat

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

func TestReadMeasuresAServerProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	// The server here is a child that spins until it is killed: its CPU
	// time must grow between readings.
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpinHelper$")
	cmd.Env = append(os.Environ(), "PROCSTAT_SPIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r0, err := Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !r0.ServerOK {
		t.Fatalf("reading %+v has no server figures", r0)
	}
	r1 := r0
	for deadline := time.Now().Add(30 * time.Second); r1.Server-r0.Server < 100*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("the server spun for 30s and its CPU time grew by %v", r1.Server-r0.Server)
		}
		time.Sleep(20 * time.Millisecond)
		if r1, err = Read(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	if r1.ServerRSS < 1<<20 {
		t.Errorf("a running Go program resident in %d bytes", r1.ServerRSS)
	}
	if !r1.At.After(r0.At) {
		t.Errorf("readings at %v then %v", r0.At, r1.At)
	}
}

func TestSpinHelper(t *testing.T) {
	if os.Getenv("PROCSTAT_SPIN") == "" {
		t.Skip("run by TestReadMeasuresAServerProcess")
	}
	//lint:ignore SA5002 the helper process spins for the CPU it uses
	for {
	}
}

func TestReadCountsItsOwnCPU(t *testing.T) {
	r0, err := Read(0)
	if err != nil {
		t.Fatal(err)
	}
	r1 := r0
	for deadline := time.Now().Add(30 * time.Second); r1.Self-r0.Self < 20*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatalf("30s of spinning added %v of CPU time", r1.Self-r0.Self)
		}
		for start := time.Now(); time.Since(start) < time.Millisecond; {
		}
		r1, _ = Read(0)
	}
	if r1.ServerOK {
		t.Error("server figures without a server")
	}
}

func TestReadRefusesAMissingProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(cmd.Process.Pid); err == nil {
		t.Errorf("reading process %d, which has exited, gave no error", cmd.Process.Pid)
	}
}

func TestReadOfAnotherProcessOutsideLinuxIsUnsupported(t *testing.T) {
	if runtime.GOOS == "linux" {
		t.Skip("Linux reads /proc")
	}
	r, err := Read(os.Getpid())
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Read of a running process: %v, want errors.ErrUnsupported", err)
	}
	if r.ServerOK || r.At.IsZero() {
		t.Errorf("reading %+v: no server figures, and when it was taken", r)
	}
}
