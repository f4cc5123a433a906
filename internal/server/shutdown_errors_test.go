package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A server stopped after a journal failure gets the failure from the
// engine and again from the journal's Close; shutdown reports it once.
// (Failing the real journal needs a failing disk: the journal's file is its
// own, and nothing injects a writer into it from here.)
func TestShutdownReportsAJournalFailureOnce(t *testing.T) {
	failed := fmt.Errorf("journal: %w", errors.New("write j-000001: no space left on device"))
	closeErr := errors.New("close j-000001: bad file descriptor")
	other := errors.New("http: server closed badly")
	for _, tt := range []struct {
		name      string
		journal   error
		want      []string
		wantTimes int
	}{
		{"the same error", failed, nil, 1},
		{"joined with the file's close", errors.Join(failed, closeErr), []string{closeErr.Error()}, 1},
		{"nested joins", errors.Join(errors.Join(failed, nil), closeErr), []string{closeErr.Error()}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := errors.Join(failed, withoutRepeat(tt.journal, failed), other)
			msg := err.Error()
			if n := strings.Count(msg, failed.Error()); n != tt.wantTimes {
				t.Fatalf("the journal's error appears %d times in %q", n, msg)
			}
			for _, w := range append(tt.want, other.Error()) {
				if !strings.Contains(msg, w) {
					t.Fatalf("%q lost %q", msg, w)
				}
			}
			if !errors.Is(err, failed) {
				t.Fatal("the error lost its identity")
			}
		})
	}
	if err := withoutRepeat(closeErr, failed); err != closeErr {
		t.Fatalf("an unrelated error was changed: %v", err)
	}
	if err := withoutRepeat(failed, nil); err != failed {
		t.Fatalf("nothing seen, yet the error was changed: %v", err)
	}
}
