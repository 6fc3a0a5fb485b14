package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sampleMountinfo = `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:40 / /mnt/nas rw,relatime shared:20 - nfs4 nas:/export rw,vers=4.2
31 22 0:41 / /mnt/smb rw,relatime shared:21 - cifs //nas/comics rw
32 22 0:42 / /mnt/ssh\040box rw,relatime shared:22 - fuse.sshfs me@box:/c rw
33 30 8:2 / /mnt/nas/local rw,relatime shared:23 - ext4 /dev/sdb1 rw
34 22 0:43 / /mnt/smb3 rw,relatime - smb3 //nas/x rw
`

func TestMountOf(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"/libraries/comics":     "ext4",
		"/mnt/nas/comics":       "nfs4",
		"/mnt/nas":              "nfs4",
		"/mnt/nas/local/comics": "ext4", // a local disk mounted inside the share
		"/mnt/nasty":            "ext4",
		"/mnt/smb/Batman":       "cifs",
		"/mnt/ssh box/x":        "fuse.sshfs",
		"/mnt/smb3/y":           "smb3",
	}
	for p, want := range cases {
		got, err := mountOf(strings.NewReader(sampleMountinfo), p)
		if err != nil || got != want {
			t.Errorf("mountOf(%s) = %q, %v; want %q", p, got, err, want)
		}
	}
	for _, typ := range []string{"nfs4", "cifs", "fuse.sshfs", "smb3"} {
		if !networkTypes[typ] {
			t.Errorf("%s is not taken for a network mount", typ)
		}
	}
	if _, err := mountOf(strings.NewReader("garbage\n"), "/x"); err == nil {
		t.Error("a mount table without the path's mount was accepted")
	}
	if typ, err := fsTypeOf(t.TempDir()); err != nil || typ == "" {
		t.Errorf("this machine's temp dir: %q, %v", typ, err)
	}
}

func TestMaxUserWatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	os.WriteFile(good, []byte("8192\n"), 0o644)
	os.WriteFile(bad, []byte("lots"), 0o644)
	if n, err := maxUserWatches(good); err != nil || n != 8192 {
		t.Errorf("good: %d, %v", n, err)
	}
	if _, err := maxUserWatches(bad); err == nil {
		t.Error("a limit that is no number was accepted")
	}
	if _, err := maxUserWatches(filepath.Join(dir, "absent")); err == nil {
		t.Error("an absent limit file was accepted")
	}
}

// A folder holding a file that still grows is not ready; once nothing
// changed for the settle time it is, once.
func TestSettlerWaitsForStillFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "A"), 0o755)
	s := newSettler(root, 2*time.Second)
	now := time.Now()
	s.touch("A", now)
	f := filepath.Join(root, "A", "book.cbz")
	for i := range 5 {
		now = now.Add(time.Second)
		os.WriteFile(f, make([]byte, (i+1)*1000), 0o644)
		if got := s.ready(now); len(got) != 0 {
			t.Fatalf("step %d: %v ready while the file grows", i, got)
		}
	}
	if got := s.ready(now.Add(time.Second)); len(got) != 0 {
		t.Fatalf("ready after 1 s of quiet: %v", got)
	}
	if got := s.ready(now.Add(2 * time.Second)); len(got) != 1 || got[0] != "A" {
		t.Fatalf("ready after the settle time: %v", got)
	}
	if got := s.ready(now.Add(10 * time.Second)); len(got) != 0 || s.pending() != 0 {
		t.Fatalf("a settled folder came back without a change: %v", got)
	}
}
