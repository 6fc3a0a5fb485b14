package settings

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets for the settings value parsers (PATCH /settings passes the
// client's text straight to Normalize). Run one at a time:
//
//	go test ./internal/settings -run '^$' -fuzz '^FuzzValidate$' -fuzztime 5m
//
// Property: no panic; an accepted value is normalized (validating it again
// returns it unchanged), lies in the definition's domain, and is what Load
// would read back from the table; a refused change set names its key.

func FuzzValidate(f *testing.F) {
	for i, d := range Definitions() {
		f.Add(uint8(i), d.Default)
	}
	for _, v := range []string{"", " ", "-1", "0", "64", "65", "9223372036854775808", "1e3", "0x10", " 42 ",
		"full", "FULL", "webp ", ".cbz, .CBR", ".cbz,,.zip", "cbz", ".", "./..", ".c\x00z", "., ,", "\u00a0.cbz"} {
		f.Add(uint8(0), v)
		f.Add(uint8(3), v)
		f.Add(uint8(20), v)
	}
	defs := Definitions()
	f.Fuzz(func(t *testing.T, which uint8, v string) {
		d := defs[int(which)%len(defs)]
		norm, err := d.Validate(v)
		if err != nil {
			if norm != "" {
				t.Fatalf("%s: refused %q but returned %q", d.Key, v, norm)
			}
			if !strings.Contains(err.Error(), d.Key) {
				t.Fatalf("%s: error %q does not name the key", d.Key, err)
			}
			return
		}
		again, err := d.Validate(norm)
		if err != nil || again != norm {
			t.Fatalf("%s: %q normalized to %q, which validates to %q, %v", d.Key, v, norm, again, err)
		}
		checkDomain(t, d, norm)
		vals, err := Load(t.Context(), mapSource{d.Key: v})
		if err != nil || vals.Text(d) != norm {
			t.Fatalf("%s: Load read %q as %q, %v; want %q", d.Key, v, vals.Text(d), err, norm)
		}
	})
}

func checkDomain(t *testing.T, d Definition, norm string) {
	t.Helper()
	switch d.Kind {
	case "int":
		n, err := strconv.ParseInt(norm, 10, 64)
		if err != nil || n < d.Min || n > d.Max || strconv.FormatInt(n, 10) != norm {
			t.Fatalf("%s: accepted %q outside [%d, %d]", d.Key, norm, d.Min, d.Max)
		}
	case "enum":
		for _, e := range d.Enum {
			if e == norm {
				return
			}
		}
		t.Fatalf("%s: accepted %q, not one of %v", d.Key, norm, d.Enum)
	case "list":
		for _, ext := range strings.Split(norm, ",") {
			if len(ext) < 2 || ext[0] != '.' || ext != strings.ToLower(ext) || strings.ContainsAny(ext, "/\\ \x00") {
				t.Fatalf("%s: accepted extension %q", d.Key, ext)
			}
		}
	default:
		t.Fatalf("%s: unknown kind %q accepted a value", d.Key, d.Kind)
	}
}

func FuzzNormalize(f *testing.F) {
	f.Add("scan.max_workers", "4", "scan.hash.mode", "off")
	f.Add("scan.max_workers", "65", "hash.algorithm", "blake3")
	f.Add("nope", "1", "scan.extensions", ".cbz")
	f.Add("scan.extensions", ".cbz", "scan.extensions ", ".cbz")
	f.Add("SCAN.MAX_WORKERS", "1", "", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		in := map[string]string{k1: v1, k2: v2}
		out, err := Normalize(in)
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InvalidError", err)
			}
			if _, known := in[ie.Key]; !known {
				t.Fatalf("error names key %q, not one of the input", ie.Key)
			}
			if out != nil {
				t.Fatalf("refused set returned %v", out)
			}
			return
		}
		if len(out) != len(in) {
			t.Fatalf("normalized %d keys into %d", len(in), len(out))
		}
		for k, v := range in {
			d, ok := Lookup(k)
			if !ok {
				t.Fatalf("unknown key %q accepted", k)
			}
			want, err := d.Validate(v)
			if err != nil || out[k] != want {
				t.Fatalf("%s: Normalize gave %q, Validate %q, %v", k, out[k], want, err)
			}
		}
	})
}

// mapSource is a Source over a map: what the store would return.
type mapSource map[string]string

func (m mapSource) Settings(context.Context) (map[string]string, error) { return m, nil }
