package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testutil", "testutil.go")); err != nil {
		t.Fatalf("%s is not this module's root: %v", root, err)
	}
}

func TestSharedFixture(t *testing.T) {
	t.Run("absent skips", func(t *testing.T) {
		var skipped bool
		t.Run("inner", func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			SharedFixture(t, "no-such-fixture-set")
			t.Error("SharedFixture returned for an absent set")
		})
		if !skipped {
			t.Fatal("an absent fixture set did not skip")
		}
	})
	t.Run("present", func(t *testing.T) {
		shared := filepath.Join(RepoRoot(t), "..", "shared", "fixtures")
		entries, err := os.ReadDir(shared)
		if err != nil || len(entries) == 0 {
			t.Skip("no shared fixtures on this machine")
		}
		got := SharedFixture(t, entries[0].Name())
		if got != filepath.Join(shared, entries[0].Name()) {
			t.Fatalf("SharedFixture = %s", got)
		}
	})
}
