package store

import "testing"

func TestNumberPlaceholders(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT 1`:                             `SELECT 1`,
		`SELECT ? , ?`:                         `SELECT $1 , $2`,
		`WHERE a = ?1 OR b = ?1 AND c = ?12`:   `WHERE a = $1 OR b = $1 AND c = $12`,
		`SELECT '?', "a?", ? -- what?` + "\n?": `SELECT '?', "a?", $1 -- what?` + "\n$2",
		`SELECT 'it''s ?', ?`:                  `SELECT 'it''s ?', $1`,
		`SELECT 'unterminated ?`:               `SELECT 'unterminated ?`,
	} {
		if got := numberPlaceholders(in); got != want {
			t.Errorf("numberPlaceholders(%q) = %q, want %q", in, got, want)
		}
	}
}
