package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dssio/dss/internal/auth"
)

func runWithInput(t *testing.T, in string, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, Stdio{In: strings.NewReader(in), Out: &out, Err: &errOut})
	return code, errOut.String()
}

func TestPasswdWritesAHashReadFromStandardInput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users")
	if code, e := runWithInput(t, "alice-pw\n", "passwd", file, "alice"); code != ExitOK {
		t.Fatalf("passwd alice: exit %d: %s", code, e)
	}
	if code, e := runWithInput(t, "bob-pw", "passwd", file, "bob"); code != ExitOK {
		t.Fatalf("passwd bob: exit %d: %s", code, e)
	}
	u, err := auth.LoadUsers(file)
	if err != nil {
		t.Fatal(err)
	}
	if u.Verify("alice", []byte("alice-pw")) != nil || u.Verify("bob", []byte("bob-pw")) != nil {
		t.Fatal("the passwords written do not verify")
	}
	if code, _ := runWithInput(t, "", "passwd", "--delete", file, "alice"); code != ExitOK {
		t.Fatal("passwd --delete failed")
	}
	if u, _ := auth.LoadUsers(file); u.Len() != 1 {
		t.Fatalf("%d users after deleting one of two", u.Len())
	}
	if code, e := runWithInput(t, "\n", "passwd", file, "carol"); code != ExitError || !strings.Contains(e, "empty") {
		t.Fatalf("an empty password: exit %d: %s", code, e)
	}
	if code, e := runWithInput(t, "pw\n", "passwd", file, "a:b"); code != ExitError || !strings.Contains(e, "':'") {
		t.Fatalf("a name with ':': exit %d: %s", code, e)
	}
}
