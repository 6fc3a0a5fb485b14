package settings

import (
	"strings"
	"testing"
)

func TestTypedKeys(t *testing.T) {
	t.Run("every key is defined once", func(t *testing.T) {
		if len(byKey) != len(definitions) {
			t.Fatalf("%d definitions, %d distinct keys", len(definitions), len(byKey))
		}
		for _, k := range []interface{ String() string }{ScanMaxWorkers, ScanHashMode, ScanCoverRegenerateMissing, ScanExtensions, ScanMissingPurgeAfterDays} {
			if _, ok := Lookup(k.String()); !ok {
				t.Errorf("key %s has no definition", k)
			}
		}
	})
	t.Run("accessors read the defaults by kind", func(t *testing.T) {
		v := Defaults()
		if got := v.Int(ScanCoverWidth); got != 320 {
			t.Errorf("scan.cover.width = %d", got)
		}
		if got := v.Enum(ScanCoverFormat); got != "webp" {
			t.Errorf("scan.cover.format = %q", got)
		}
		if v.Flag(ScanCoverRegenerateMissing) {
			t.Error("scan.cover.regenerate_missing is on by default")
		}
		if ext := v.Extensions(); !ext[".cbz"] || ext[".txt"] {
			t.Errorf("extensions %v", ext)
		}
	})
	t.Run("stored values win, bad ones fall back", func(t *testing.T) {
		v, err := Load(t.Context(), mapSource{"scan.cover.width": "640", "scan.cover.format": "gif", "scan.cover.regenerate_missing": "1"})
		if err != nil {
			t.Fatal(err)
		}
		if v.Int(ScanCoverWidth) != 640 || v.Enum(ScanCoverFormat) != "webp" || !v.Flag(ScanCoverRegenerateMissing) {
			t.Errorf("loaded %d %q %v", v.Int(ScanCoverWidth), v.Enum(ScanCoverFormat), v.Flag(ScanCoverRegenerateMissing))
		}
	})
	t.Run("a snapshot without the key panics", func(t *testing.T) {
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(r.(string), "scan.cover.width") {
				t.Errorf("recovered %v, want a panic naming the key", r)
			}
		}()
		Values{}.Int(ScanCoverWidth)
	})
}

// TestCoverDistance: samebook.cover_distance takes 0 to 16 bits (the
// store's bound on banding); anything else is refused with the key named.
func TestCoverDistance(t *testing.T) {
	if got := Defaults().Int(SameBookCoverDistance); got != 6 {
		t.Fatalf("default %d, want 6", got)
	}
	for _, ok := range []string{"0", "6", "16"} {
		if _, err := Normalize(map[string]string{"samebook.cover_distance": ok}); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"-1", "17", "64", "x", "", "6.5"} {
		_, err := Normalize(map[string]string{"samebook.cover_distance": bad})
		if err == nil || !strings.Contains(err.Error(), "samebook.cover_distance") {
			t.Errorf("%q: %v, want an error naming the key", bad, err)
		}
	}
}
