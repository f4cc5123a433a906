package auth

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Errors of authentication. The broker answers ErrBadCredentials with
// CONNACK 0x86 and the others with 0x87; an unknown user and a wrong
// password get the same answer, so that names cannot be probed.
var (
	// ErrBadCredentials: the user is unknown or the password wrong.
	ErrBadCredentials = errors.New("bad user name or password")
	// ErrNoCredentials: neither a password nor a client certificate,
	// and anonymous clients are not allowed.
	ErrNoCredentials = errors.New("no credentials: a user name and password or a client certificate is required")
)

// Users is one reading of a users file: names and argon2id hashes, one
// per line as NAME:HASH, like mosquitto_passwd's files. Lines that are
// empty or start with '#' are ignored. Safe for concurrent use.
type Users struct {
	hashes map[string]argonHash
	lines  map[string]string // the hash text by name, to tell a changed password
	// verified caches, per name, a MAC of the hash and the last password
	// that matched it, under a key of this process: a client that
	// reconnects does not pay for argon2id again, and the cache holds
	// nothing a password could be recovered from without the key.
	mu       sync.Mutex
	verified map[string][sha256.Size]byte // guarded by mu
	// checking holds the computation under way for a name and password
	// (by their MAC), so that many connections of one user at once (a
	// reconnect storm) cost one argon2id, the others sharing its
	// outcome. Logins of the same name with other passwords (guesses)
	// compute their own and do not wait for it: a lock per name made a
	// correct login wait behind every guess of its name.
	checking map[checkKey]*check // guarded by mu
	macKey   [32]byte
}

// checkKey names a computation: a user and the MAC of a password.
type checkKey struct {
	name string
	mac  [sha256.Size]byte
}

// check is a computation under way; ok is set before done is closed.
type check struct {
	done chan struct{}
	ok   bool
}

// ParseUsers reads a users file. An error names the line and the reason.
func ParseUsers(r io.Reader) (*Users, error) {
	u := &Users{
		hashes:   make(map[string]argonHash),
		lines:    make(map[string]string),
		verified: make(map[string][sha256.Size]byte),
		checking: make(map[checkKey]*check),
	}
	if _, err := rand.Read(u.macKey[:]); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, hash, ok := strings.Cut(line, ":")
		if !ok || name == "" {
			return nil, &FileError{Line: n, Reason: "want NAME:HASH"}
		}
		if _, dup := u.hashes[name]; dup {
			return nil, &FileError{Line: n, Reason: fmt.Sprintf("user %q appears twice", name)}
		}
		h, err := parseArgonHash(hash)
		if err != nil {
			return nil, &FileError{Line: n, Reason: fmt.Sprintf("user %q: %v", name, err)}
		}
		u.hashes[name], u.lines[name] = h, hash
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("auth: users file: %w", err)
	}
	return u, nil
}

// LoadUsers reads the users file at path.
func LoadUsers(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	defer f.Close()
	u, err := ParseUsers(f)
	var fe *FileError
	if errors.As(err, &fe) {
		fe.File = path
	}
	return u, err
}

// Len returns the number of users.
func (u *Users) Len() int { return len(u.hashes) }

// Verify checks name's password. It returns ErrBadCredentials for an
// unknown name or a wrong password.
func (u *Users) Verify(name string, password []byte) error {
	return u.verify(name, password, false)
}

// verify is Verify for a login from an address with recent failures
// (suspect) or without: its computation waits behind those of the
// others (see hashSlots).
func (u *Users) verify(name string, password []byte, suspect bool) error {
	h, ok := u.hashes[name]
	if !ok {
		// Take the time a known name takes, so that the answer's delay
		// does not tell which names exist (and a slot, as it costs the
		// same).
		verifySlots.acquire(suspect)
		dummy.matches(password)
		verifySlots.release()
		return ErrBadCredentials
	}
	mac := u.mac(name, password)
	if u.cached(name, mac) {
		return nil
	}
	key := checkKey{name: name, mac: mac}
	u.mu.Lock()
	if c := u.checking[key]; c != nil {
		u.mu.Unlock()
		<-c.done
		if !c.ok {
			return ErrBadCredentials
		}
		return nil
	}
	c := &check{done: make(chan struct{})}
	u.checking[key] = c
	u.mu.Unlock()

	verifySlots.acquire(suspect)
	c.ok = h.matches(password)
	verifySlots.release()
	u.mu.Lock()
	if c.ok {
		u.verified[name] = mac
	}
	delete(u.checking, key)
	u.mu.Unlock()
	close(c.done)
	if !c.ok {
		return ErrBadCredentials
	}
	return nil
}

// cached reports whether mac is that of name's last verified password.
func (u *Users) cached(name string, mac [sha256.Size]byte) bool {
	u.mu.Lock()
	cached, hit := u.verified[name]
	u.mu.Unlock()
	return hit && hmac.Equal(cached[:], mac[:])
}

// Hash returns the text of name's hash, and whether name is a user.
func (u *Users) Hash(name string) (string, bool) {
	h, ok := u.lines[name]
	return h, ok
}

func (u *Users) mac(name string, password []byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, u.macKey[:])
	m.Write([]byte(u.lines[name]))
	m.Write([]byte{0})
	m.Write(password)
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

// dummy is verified against for unknown names.
var dummy = func() argonHash {
	h, _ := parseArgonHash("$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$Yo0ahiMs3UjaPDtAz8mIiJCd8i3P7THNxtUuWTMvdPM")
	return h
}()

// FileError is a users or policy file that does not parse: the line and
// the reason.
type FileError struct {
	File   string
	Line   int
	Reason string
}

func (e *FileError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
}

// ValidUserName reports why name cannot be a user's name, or nil.
func ValidUserName(name string) error {
	switch {
	case name == "":
		return errors.New("the user name is empty")
	case strings.ContainsAny(name, ":\r\n"):
		return fmt.Errorf("user name %q: ':' and line breaks are not allowed", name)
	case strings.TrimSpace(name) != name || name[0] == '#':
		return fmt.Errorf("user name %q: may not start with '#' or start or end with spaces", name)
	}
	return nil
}

// SetPassword writes name's password into the users file at path,
// replacing its line or adding one, and creates the file (mode 0600) if
// need be. Other lines, comments included, stay as they are. The file is
// replaced whole, so that a server reading it never sees half of it.
func SetPassword(path, name string, password []byte) error {
	if err := ValidUserName(name); err != nil {
		return err
	}
	if len(password) == 0 {
		return errors.New("the password is empty")
	}
	hash, err := HashPassword(password)
	if err != nil {
		return err
	}
	return rewriteUsers(path, name, name+":"+hash, true)
}

// DeleteUser removes name from the users file at path.
func DeleteUser(path, name string) error {
	return rewriteUsers(path, name, "", false)
}

func rewriteUsers(path, name, replacement string, create bool) error {
	old, err := os.ReadFile(path)
	mode := os.FileMode(0o600)
	switch {
	case errors.Is(err, os.ErrNotExist) && create:
	case err != nil:
		return fmt.Errorf("users file: %w", err)
	default:
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
	}
	var out bytes.Buffer
	found := false
	for _, line := range strings.SplitAfter(string(old), "\n") {
		if line == "" {
			continue
		}
		if n, _, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && n == name {
			found = true
			if replacement != "" {
				out.WriteString(replacement + "\n")
			}
			continue
		}
		out.WriteString(line)
		if !strings.HasSuffix(line, "\n") {
			out.WriteByte('\n')
		}
	}
	if !found {
		if replacement == "" {
			return fmt.Errorf("users file %s: no user %q", path, name)
		}
		out.WriteString(replacement + "\n")
	}
	return writeFileAtomic(path, out.Bytes(), mode)
}

// writeFileAtomic replaces path with data through a temporary file in
// the same directory.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*")
	if err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("users file: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("users file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("users file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("users file: %w", err)
	}
	return nil
}
