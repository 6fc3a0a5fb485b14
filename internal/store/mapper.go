package store

import (
	"strings"
	"unicode"

	"github.com/jmoiron/sqlx"
	"github.com/jmoiron/sqlx/reflectx"
)

// columns maps a struct field to its column: the db tag when the field has
// one (the store's own row structs), otherwise the field's name in snake
// case, which is how the plain types of package model, which carry no
// tags, are read (TestModelFieldsAreColumns holds them to the schema).
var columns = reflectx.NewMapperFunc("db", snakeCase)

// useColumns makes db read rows with the columns mapper.
func useColumns(db *sqlx.DB) *sqlx.DB {
	db.Mapper = columns
	return db
}

// snakeCase turns a Go field name into a column name: LibraryID →
// library_id, MtimeNS → mtime_ns, OutputRelpath → output_relpath.
func snakeCase(name string) string {
	var b strings.Builder
	r := []rune(name)
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if prevLower || (unicode.IsUpper(r[i-1]) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
