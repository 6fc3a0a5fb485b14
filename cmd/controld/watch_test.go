package main

import (
	"context"
	"path/filepath"
	"testing"
)

// controld runs the change watcher unless --no-watch (BINDERY_NO_WATCH=1)
// says otherwise.
func TestServeWatcherSwitch(t *testing.T) {
	t.Setenv("BINDERY_ADMIN_TOKEN", "")
	for _, c := range []struct {
		env  string
		args []string
		want bool
	}{{"", nil, true}, {"", []string{"--no-watch"}, false}, {"1", nil, false}} {
		t.Setenv("BINDERY_NO_WATCH", c.env)
		m := newTestMain(t, append([]string{"--state-dir", filepath.Join(t.TempDir(), "state")}, c.args...)...)
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := m.Watcher != nil; got != c.want {
			t.Errorf("env %q args %v: watcher running %v, want %v", c.env, c.args, got, c.want)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
