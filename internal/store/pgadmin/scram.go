package pgadmin

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// PostgreSQL's defaults for a SCRAM-SHA-256 verifier (scram_iterations,
// SCRAM_DEFAULT_SALT_LEN).
const (
	scramIterations = 4096
	scramSaltLen    = 16
)

// scramVerifier is what PostgreSQL stores for password under
// scram-sha-256 (RFC 5802 and 7677), computed here as psql's \password
// computes it, so that the password itself never travels to the server,
// whose statement log (log_statement = ddl) would keep it. PostgreSQL takes
// a string in this form as already hashed.
//
// Clients log in with the password normalised by SASLprep, which is the
// identity on printable ASCII only, so other passwords are left to the
// server to hash (ok false) rather than risk a verifier no client matches.
func scramVerifier(password string) (v string, ok bool) {
	for i := 0; i < len(password); i++ {
		if password[i] < 0x20 || password[i] > 0x7e {
			return "", false
		}
	}
	salt := make([]byte, scramSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", false
	}
	return scramVerifierWith(password, salt, scramIterations), true
}

func scramVerifierWith(password string, salt []byte, iterations int) string {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		panic(err) // only for a key length or iteration count out of range, both constant
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(mac(salted, "Server Key")))
}
