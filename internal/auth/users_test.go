package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHashPasswordVerifies(t *testing.T) {
	h, err := HashPassword([]byte("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q is not an argon2id PHC string with the default parameters", h)
	}
	u, err := ParseUsers(strings.NewReader("# a comment\n\nalice:" + h + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Verify("alice", []byte("s3cret")); err != nil {
		t.Fatalf("right password: %v", err)
	}
	for _, c := range []struct{ name, pw string }{{"alice", "wrong"}, {"alice", ""}, {"bob", "s3cret"}, {"", ""}} {
		if err := u.Verify(c.name, []byte(c.pw)); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("Verify(%q, %q) = %v, want ErrBadCredentials", c.name, c.pw, err)
		}
	}
	// The cached success must not let another password through.
	if err := u.Verify("alice", []byte("s3cret")); err != nil {
		t.Fatalf("right password, again: %v", err)
	}
	if err := u.Verify("alice", []byte("s3cre")); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("wrong password after a cached success: %v", err)
	}
}

func TestParseUsersNamesTheLineAndTheReason(t *testing.T) {
	good, _ := HashPassword([]byte("x"))
	for _, c := range []struct{ file, want string }{
		{"alice\n", "line 1: want NAME:HASH"},
		{"# c\nalice:" + good + "\nbob:plain\n", `line 3: user "bob": not an argon2id hash`},
		{"alice:" + good + "\nalice:" + good + "\n", `line 2: user "alice" appears twice`},
		{"alice:$argon2id$v=19$m=9999999,t=2,p=1$c2FsdHNhbHQ$c2FsdHNhbHRzYWx0c2FsdA\n", "line 1: user \"alice\": argon2id parameters m=9999999"},
		{":" + good + "\n", "line 1: want NAME:HASH"},
	} {
		_, err := ParseUsers(strings.NewReader(c.file))
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%q: err %v, want one containing %q", c.file, err, c.want)
		}
	}
}

func TestSetPasswordKeepsTheOtherLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	if err := SetPassword(path, "alice", []byte("a")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new users file mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append([]byte("# plant 1\n"), data...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := SetPassword(path, "bob", []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := SetPassword(path, "alice", []byte("a2")); err != nil {
		t.Fatal(err)
	}
	u, err := LoadUsers(path)
	if err != nil {
		t.Fatal(err)
	}
	if u.Verify("alice", []byte("a2")) != nil || u.Verify("bob", []byte("b")) != nil || u.Verify("alice", []byte("a")) == nil {
		t.Fatal("passwords after the rewrite are not the last ones set")
	}
	data, _ = os.ReadFile(path)
	if !strings.HasPrefix(string(data), "# plant 1\nalice:") {
		t.Fatalf("comment or order lost:\n%s", data)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v changed, want 0640 kept", st.Mode().Perm())
	}
	if err := DeleteUser(path, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := DeleteUser(path, "alice"); err == nil || !strings.Contains(err.Error(), `no user "alice"`) {
		t.Fatalf("deleting a missing user: %v", err)
	}
	u, _ = LoadUsers(path)
	if u.Len() != 1 || u.Verify("bob", []byte("b")) != nil {
		t.Fatal("deleting alice lost bob")
	}
	for _, bad := range []string{"", "a:b", "x\ny", " x", "#x"} {
		if err := SetPassword(path, bad, []byte("p")); err == nil {
			t.Fatalf("user name %q accepted", bad)
		}
	}
	if err := SetPassword(path, "carol", nil); err == nil {
		t.Fatal("an empty password was accepted")
	}
}

func TestManyLoginsOfOneUserAtOnceCostOneHash(t *testing.T) {
	h, _ := HashPassword([]byte("pw"))
	u, err := ParseUsers(strings.NewReader("alice:" + h + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	before := hashesComputed.Load()
	errs := make(chan error, 32)
	for range 32 {
		go func() { errs <- u.Verify("alice", []byte("pw")) }()
	}
	for range 32 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Every one but the first found the first's result.
	if n := hashesComputed.Load() - before; n != 1 {
		t.Fatalf("%d argon2id computations for 32 logins of one user with one password, want 1", n)
	}
	if u.Verify("alice", []byte("wrong")) == nil {
		t.Fatal("a wrong password passed after the cached success")
	}
}
