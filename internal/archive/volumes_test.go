package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// volumeSet writes a three-volume stored RAR of version 4 or 5 under the
// given names into a new folder and returns the folder.
func volumeSet(t *testing.T, v5 bool, pages []fixtures.File, names ...string) string {
	t.Helper()
	vols := fixtures.RAR4Volumes(pages, len(names))
	if v5 {
		vols = fixtures.RAR5Volumes(pages, len(names))
	}
	dir := t.TempDir()
	for i, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), vols[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestVolumeSets(t *testing.T) {
	pages := methodPages(t)
	for _, tc := range []struct {
		name  string
		v5    bool
		names []string
	}{
		{"rar4 new naming", false, []string{"Book.part1.rar", "Book.part2.rar", "Book.part3.rar"}},
		{"rar5 new naming", true, []string{"Book.part01.rar", "Book.part02.rar", "Book.part03.rar"}},
		{"rar5 cbr", true, []string{"Saga 12.part1.cbr", "Saga 12.part2.cbr", "Saga 12.part3.cbr"}},
		{"rar4 old naming", false, []string{"Book.rar", "Book.r00", "Book.r01"}},
		{"rar5 old naming with digits", true, []string{"Batman 12.rar", "Batman 12.r00", "Batman 12.r01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := volumeSet(t, tc.v5, pages, tc.names...)
			first := filepath.Join(dir, tc.names[0])
			if got := ReadVolumeRole(first); got != FirstVolume {
				t.Errorf("first volume role %d", got)
			}
			a, err := Open(first)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if len(a.Pages()) != len(pages) {
				t.Fatalf("%d pages, want %d", len(a.Pages()), len(pages))
			}
			for i, e := range a.Pages() { // pages 3 and 5 span two volumes
				data, err := a.ReadEntry(e, 1<<20)
				if err != nil || !bytes.Equal(data, pages[i].Data) {
					t.Fatalf("page %s: %v (%d bytes, want %d)", e.Name, err, len(data), len(pages[i].Data))
				}
			}
			for _, later := range tc.names[1:] {
				if _, err := Open(filepath.Join(dir, later)); protocol.CodeOf(err, "") != protocol.ErrArchiveIncomplete {
					t.Errorf("later volume %s opened alone: %v, want archive_incomplete", later, err)
				}
			}
		})
	}
}

func TestVolumeMissing(t *testing.T) {
	pages := methodPages(t)
	names := []string{"Book.part1.rar", "Book.part2.rar", "Book.part3.rar"}
	for _, v5 := range []bool{false, true} {
		for _, gone := range names[1:] {
			t.Run(gone, func(t *testing.T) {
				dir := volumeSet(t, v5, pages, names...)
				if err := os.Remove(filepath.Join(dir, gone)); err != nil {
					t.Fatal(err)
				}
				err := readAll(filepath.Join(dir, names[0]))
				if protocol.CodeOf(err, "") != protocol.ErrArchiveIncomplete || !strings.Contains(err.Error(), "volume "+gone+" is missing") {
					t.Fatalf("got %v, want archive_incomplete naming %s", err, gone)
				}
			})
		}
	}
	t.Run("unreadable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads a file whatever its mode")
		}
		dir := volumeSet(t, true, pages, names...)
		if err := os.Chmod(filepath.Join(dir, names[1]), 0); err != nil {
			t.Fatal(err)
		}
		err := readAll(filepath.Join(dir, names[0]))
		if protocol.CodeOf(err, "") != protocol.ErrArchiveIncomplete || !strings.Contains(err.Error(), "unreadable") {
			t.Fatalf("got %v, want archive_incomplete: unreadable", err)
		}
	})
	t.Run("symlinked volume", func(t *testing.T) {
		dir := volumeSet(t, true, pages, names...)
		outside := filepath.Join(t.TempDir(), "elsewhere.rar")
		if err := os.Rename(filepath.Join(dir, names[1]), outside); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(dir, names[1])); err != nil {
			t.Fatal(err)
		}
		if err := readAll(filepath.Join(dir, names[0])); protocol.CodeOf(err, "") != protocol.ErrArchiveIncomplete {
			t.Fatalf("got %v, want archive_incomplete (a volume is never read through a symlink)", err)
		}
	})
	t.Run("given alone", func(t *testing.T) {
		vols := fixtures.RAR5Volumes(pages, 3)
		a, err := OpenReaderAt(bytes.NewReader(vols[0]), int64(len(vols[0])), "x.rar")
		if err == nil {
			err = readPages(a)
		}
		if protocol.CodeOf(err, "") != protocol.ErrArchiveIncomplete {
			t.Fatalf("got %v, want archive_incomplete", err)
		}
	})
}

// rar2Style rewrites a generated RAR4 volume the way RAR 2.x wrote its
// sets: the main header flags only "volume" (no first-volume or naming
// flag) and no end block, so nothing says whether another volume follows.
func rar2Style(vol []byte) []byte {
	const main = 7 // after the marker block
	out := bytes.Clone(vol[:len(vol)-7])
	binary.LittleEndian.PutUint16(out[main+3:], 0x0001)
	size := int(binary.LittleEndian.Uint16(out[main+5:]))
	binary.LittleEndian.PutUint16(out[main:], uint16(crc32.ChecksumIEEE(out[main+2:main+size])))
	return out
}

// TestRar2VolumeMissing: a RAR 2.x set without a middle or its last
// volume is archive_incomplete naming it, although rardecode takes the
// absent volume for the end of the archive.
func TestRar2VolumeMissing(t *testing.T) {
	pages := methodPages(t)
	names := []string{"Book.rar", "Book.r00", "Book.r01", "Book.r02"}
	vols := fixtures.RAR4Volumes(pages, len(names))
	for _, gone := range []string{"", "Book.r00", "Book.r01", "Book.r02"} {
		t.Run("without "+gone, func(t *testing.T) {
			dir := t.TempDir()
			for i, name := range names {
				if name != gone {
					if err := os.WriteFile(filepath.Join(dir, name), rar2Style(vols[i]), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := ReadVolumeRole(filepath.Join(dir, names[0])); got != SomeVolume {
				t.Fatalf("role %d, want SomeVolume", got)
			}
			err := readAll(filepath.Join(dir, names[0]))
			if gone == "" {
				a := mustOpen(t, filepath.Join(dir, names[0]))
				if err != nil || len(a.Pages()) != len(pages) {
					t.Fatalf("complete set: %d pages, %v", len(a.Pages()), err)
				}
				return
			}
			if protocol.CodeOf(err, "") != protocol.ErrArchiveIncomplete || !strings.Contains(err.Error(), "volume "+gone+" is missing") {
				t.Fatalf("got %v, want archive_incomplete naming %s", err, gone)
			}
		})
	}
}

// readAll opens path and reads every page: the error of the first step
// that fails.
func readAll(path string) error {
	a, err := Open(path)
	if err != nil {
		return err
	}
	defer a.Close()
	return readPages(a)
}

func readPages(a Archive) error {
	for _, e := range a.Pages() {
		if _, err := a.ReadEntry(e, 1<<20); err != nil {
			return err
		}
	}
	return nil
}

func TestVolumeRoles(t *testing.T) {
	pages := methodPages(t)
	for _, v5 := range []bool{false, true} {
		vols := fixtures.RAR4Volumes(pages, 3)
		single := fixtures.RAR4(pages)
		if v5 {
			vols, single = fixtures.RAR5Volumes(pages, 3), fixtures.RAR5(pages)
		}
		if got := volumeRoleOf(single); got != NotVolume {
			t.Errorf("v5=%v single archive: %d", v5, got)
		}
		later := SomeVolume // RAR4 flags the first volume only: a name decides
		if v5 {
			later = LaterVolume
		}
		for i, want := range []VolumeRole{FirstVolume, later, later} {
			if got := volumeRoleOf(vols[i]); got != want {
				t.Errorf("v5=%v volume %d: %d, want %d", v5, i+1, got, want)
			}
		}
	}
	for _, head := range [][]byte{nil, []byte("Rar!\x1a\x07\x01\x00\x00"), []byte("PK\x03\x04"), magicRar5} {
		if got := volumeRoleOf(head); got != NotVolume {
			t.Errorf("%q: %d, want NotVolume", head, got)
		}
	}
	if got := ReadVolumeRole(filepath.Join(t.TempDir(), "absent.rar")); got != NotVolume {
		t.Errorf("absent file: %d", got)
	}
	var missing *missingVolume
	if !errors.As(&missingVolume{name: "x", err: os.ErrNotExist}, &missing) || !errors.Is(missing, os.ErrNotExist) {
		t.Error("a missing volume must match fs.ErrNotExist (rardecode then tries the old naming)")
	}
}
