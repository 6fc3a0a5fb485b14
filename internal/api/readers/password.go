package readers

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"golang.org/x/crypto/argon2"
)

// Passwords are hashed with argon2id (RFC 9106) at OWASP's recommended
// cost (19 MiB, two passes, one lane) and stored as PHC strings, which
// carry their parameters so that a later cost change still verifies old
// hashes.
const (
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
	// passwordMin and passwordMax bound a password's bytes: long enough
	// to resist guessing, short enough that hashing stays cheap.
	passwordMin = 8
	passwordMax = 256
)

// HashPassword is the PHC string of password under a fresh salt.
func HashPassword(password string) string {
	salt := make([]byte, argonSaltLen)
	rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		enc.EncodeToString(salt), enc.EncodeToString(key))
}

var errBadHash = errors.New("not an argon2id PHC string")

// checkPassword reports whether password matches the PHC hash, comparing
// in constant time.
func checkPassword(hash, password string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var v int
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m > 1<<20 || t > 16 || p == 0 {
		return false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	key, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(key) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}

// dummyHash is checked against when the user does not exist, so that an
// unknown name costs the same time as a wrong password.
var dummyHash = HashPassword("bindery-no-such-user")

// ValidPassword refuses a missing password and one of a length outside
// passwordMin to passwordMax bytes (invalid_field, naming password).
func ValidPassword(p *string) error {
	switch {
	case p == nil:
		return httpx.Fieldf("password", "required")
	case len(*p) < passwordMin || len(*p) > passwordMax:
		return httpx.Fieldf("password", "must be %d to %d bytes", passwordMin, passwordMax)
	}
	return nil
}
