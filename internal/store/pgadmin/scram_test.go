package pgadmin

import (
	"database/sql"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/pgtest"
)

// TestScramVerifier: the verifier computed here is the one PostgreSQL
// computes for the same password and salt, and passwords SASLprep may
// change are left to the server.
func TestScramVerifier(t *testing.T) {
	for _, pw := range []string{"pencil", "\x7f", "tab\there", "naïve", "ｐａｓｓ"} {
		if v, ok := scramVerifier(pw); ok != (pw == "pencil") || ok != strings.HasPrefix(v, "SCRAM-SHA-256$4096:") {
			t.Errorf("scramVerifier(%q) = %q, %v", pw, v, ok)
		}
	}
	if a, _ := scramVerifier("pencil"); a == func() string { b, _ := scramVerifier("pencil"); return b }() {
		t.Error("two verifiers of one password share their salt")
	}
	if os.Getenv("BINDERY_TEST_DB") != "postgres" {
		t.Skip("the comparison with PostgreSQL's own: run with BINDERY_TEST_DB=postgres")
	}
	db, err := sql.Open("pgx", pgtest.Shared(t).DSN("postgres", pgtest.Superuser))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one session, for SET
	role := fmt.Sprintf("scram_%d", os.Getpid())
	for _, q := range []string{"SET password_encryption = 'scram-sha-256'", "CREATE ROLE " + role} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	defer db.Exec("DROP ROLE " + role)
	for _, pw := range []string{"pencil", `it's "quoted"; DROP ROLE x`, " spaced out ", "~!@#$%^&*()_+`{}|:<>?"} {
		var alter, server string
		if err := db.QueryRow(`SELECT format('ALTER ROLE %I PASSWORD %L', $1::text, $2::text)`, role, pw).Scan(&alter); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(alter); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT rolpassword FROM pg_authid WHERE rolname = $1`, role).Scan(&server); err != nil {
			t.Fatal(err)
		}
		var iterations int
		var salt64, rest string
		if _, err := fmt.Sscanf(strings.ReplaceAll(server, "$", " "), "SCRAM-SHA-256 %d:%s %s", &iterations, &salt64, &rest); err != nil {
			t.Fatalf("PostgreSQL's verifier %q: %v", server, err)
		}
		salt, err := base64.StdEncoding.DecodeString(salt64)
		if err != nil {
			t.Fatal(err)
		}
		if ours := scramVerifierWith(pw, salt, iterations); ours != server {
			t.Errorf("password %q: ours %s, PostgreSQL's %s", pw, ours, server)
		}
	}
}
