package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/argon2"
)

// The argon2id parameters of new hashes: OWASP's minimum (19 MiB, two
// passes, one lane). A login costs tens of milliseconds; Users caches a
// successful one so that a reconnecting client does not pay again.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024 // KiB
	argonThreads = 1
	argonSaltLen = 16
	argonKeyLen  = 32
)

// Bounds on the parameters read from a hash, so that a hash written by
// hand cannot make one login take the machine.
const (
	maxArgonMemory = 1 << 20 // KiB: 1 GiB
	maxArgonTime   = 64
)

// errMalformedHash is the reason a users file line's hash is refused.
var errMalformedHash = errors.New("not an argon2id hash ($argon2id$v=19$m=...,t=...,p=...$salt$hash); write it with dss passwd")

// HashPassword returns the argon2id hash of password in the PHC string
// format: $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>, base64 without
// padding.
func HashPassword(password []byte) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("auth: salt: %w", err)
	}
	key := argon2.IDKey(password, salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// argonHash is a parsed PHC argon2id string.
type argonHash struct {
	memory  uint32
	time    uint32
	threads uint8
	salt    []byte
	key     []byte
}

func parseArgonHash(s string) (argonHash, error) {
	var h argonHash
	parts := strings.Split(s, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return h, errMalformedHash
	}
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if !ok || err != nil {
			return h, errMalformedHash
		}
		switch k {
		case "m":
			h.memory = uint32(n)
		case "t":
			h.time = uint32(n)
		case "p":
			if n > 255 {
				return h, errMalformedHash
			}
			h.threads = uint8(n)
		default:
			return h, errMalformedHash
		}
	}
	if h.memory == 0 || h.time == 0 || h.threads == 0 || h.memory > maxArgonMemory || h.time > maxArgonTime {
		return h, fmt.Errorf("argon2id parameters m=%d,t=%d,p=%d out of range (m up to %d KiB, t up to %d)", h.memory, h.time, h.threads, maxArgonMemory, maxArgonTime)
	}
	var err error
	if h.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil || len(h.salt) < 8 {
		return h, errMalformedHash
	}
	if h.key, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(h.key) < 16 {
		return h, errMalformedHash
	}
	return h, nil
}

// hashesComputed counts argon2id computations, for the tests of the
// cache that spares them.
var hashesComputed atomic.Int64

// matches reports whether password hashes to h, in constant time.
func (h *argonHash) matches(password []byte) bool {
	hashesComputed.Add(1)
	key := argon2.IDKey(password, h.salt, h.time, h.memory, h.threads, uint32(len(h.key)))
	return subtle.ConstantTimeCompare(key, h.key) == 1
}
