package trash

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// Hole 5, on a file system without RENAME_NOREPLACE: a restore falls back
// to a hard link, and when that is refused too (EPERM: workerd does not
// own the file under fs.protected_hardlinks, or the file system has no
// hard links) the copy stays in the trash, restore_conflict, and nothing
// at its path is replaced. The old fallback was a plain rename.

// noRenameNoReplace stands in a file system without RENAME_NOREPLACE for
// the rest of the test.
func noRenameNoReplace(t *testing.T) {
	renameat2 = func(int, string, int, string, uint) error { return unix.EINVAL }
	t.Cleanup(func() { renameat2 = unix.Renameat2 })
}

// TestNoReplaceAsNonOwner runs the fallback as a workerd that does not own
// the trashed file, in a child process with another uid, under the
// kernel's protected_hardlinks: the link is refused, nothing moves.
func TestNoReplaceAsNonOwner(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("BINDERY_NONOWNER_DIR"); dir != "" {
		nonOwnerChild(t, dir)
		return
	}
	if os.Geteuid() != 0 {
		testutil.SkipUnlessCI(t, "running a child under another uid needs root")
		return
	}
	if b, err := os.ReadFile("/proc/sys/fs/protected_hardlinks"); err != nil || string(b) != "1\n" {
		testutil.SkipUnlessCI(t, "fs.protected_hardlinks is not 1 here (%q %v)", b, err)
		return
	}
	// t.TempDir's parent is private to root: the child could not reach it.
	dir, err := os.MkdirTemp("", "bindery-nonowner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "trash.test")
	if data, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(bin, data, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	for _, d := range []string{"lib", "lib/trash"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	trashed := filepath.Join(dir, "lib/trash/b.cbz")
	if err := os.WriteFile(trashed, []byte("trashed copy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(trashed, 4321, 4321); err != nil { // someone else's file
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^TestNoReplaceAsNonOwner$", "-test.v")
	cmd.Env = []string{"BINDERY_NONOWNER_DIR=" + filepath.Join(dir, "lib"), "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "non-owner moves refused") {
		t.Fatalf("the non-owner child failed: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(trashed); err != nil || string(b) != "trashed copy" {
		t.Fatalf("the trash copy moved: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "lib/b.cbz")); err != nil || string(b) != "user's file" {
		t.Fatalf("the file at the path was replaced: %q %v", b, err)
	}
}

// nonOwnerChild is the child of TestNoReplaceAsNonOwner: as uid 65534, a
// move back onto a free path and onto a taken one must both fail and
// leave everything where it was.
func nonOwnerChild(t *testing.T, dir string) {
	noRenameNoReplace(t)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := renameNoReplace(root, "trash/b.cbz", "b.cbz"); !errors.Is(err, unix.EPERM) {
		t.Fatalf("a move back of someone else's file: %v, want EPERM from the link", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.cbz"), []byte("user's file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := renameNoReplace(root, "trash/b.cbz", "b.cbz"); err == nil {
		t.Fatal("a move back onto a taken path succeeded")
	}
	t.Log("non-owner moves refused")
}

// TestRestoreWithoutNoReplace: the restore executor on a file system
// without RENAME_NOREPLACE links the copy back where it can, and never
// replaces a file that took its path.
func TestRestoreWithoutNoReplace(t *testing.T) {
	e := setup(t, map[string]string{"a.cbz": "same", "b/b.cbz": "same", "c/c.cbz": "same"})
	del := e.plan(e.keep("a.cbz"), protocol.ActionTrash)
	if _, err := e.run(del); err != nil {
		t.Fatal(err)
	}
	noRenameNoReplace(t)
	e.write("b/b.cbz", "user", t0)
	restore, err := duplicates.New(e.control).CreateRestore(e.ctx, del.ID, nil)
	e.must(err)
	if _, err := e.run(restore); err != nil {
		t.Fatal(err)
	}
	got := e.outcomes(restore)
	if got["b/b.cbz"] != protocol.OutcomeRestoreConflict || e.read("b/b.cbz") != "user" ||
		got["c/c.cbz"] != protocol.OutcomeRestored || e.read("c/c.cbz") != "same" {
		t.Fatalf("outcomes %v, b holds %q", got, e.read("b/b.cbz"))
	}
	trashB := filepath.Join(protocol.TrashDir, strconv.FormatInt(del.ID, 10), "b/b.cbz")
	if _, err := os.Stat(filepath.Join(e.lib, trashB)); errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the conflicting copy left the trash")
	}
}
