package thumbs

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// env is a library folder, a state dir, a folder outside both, and a
// migrated database with the library registered.
type env struct {
	ctrl, work          *store.Store
	lib, state, outside string
	libID               int64
	r                   *Renderer
}

func setup(t *testing.T) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{lib: filepath.Join(base, "library"), state: filepath.Join(base, "state"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{e.lib, e.state, e.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.ctrl, e.work, _ = storetest.MustOpenDB(t)
	e.libID = testfactory.Library(t, e.ctrl, &testfactory.LibraryOpts{Name: "lib", Path: e.lib})
	e.r = NewRenderer(e.work, Config{StateDir: e.state, LibraryRoots: pathsafe.Roots{base}})
	return e
}

// put writes data at rel under the library and registers the file.
func (e *env) put(t *testing.T, rel string, data []byte) int64 {
	t.Helper()
	p := filepath.Join(e.lib, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if data != nil {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return e.register(t, rel)
}

func (e *env) register(t *testing.T, rel string) int64 {
	t.Helper()
	id, err := storetest.InsertID(context.Background(), e.ctrl, `INSERT INTO library_files (library_id, relative_path, size_bytes,
		mtime_ns, created_at, updated_at) VALUES (?, ?, 1, 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000') RETURNING id`, e.libID, rel)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (e *env) settings(t *testing.T, kv map[string]string) {
	t.Helper()
	if err := e.ctrl.PutSettings(context.Background(), kv); err != nil {
		t.Fatal(err)
	}
	e.r.mu.Lock()
	e.r.settings = nil
	e.r.mu.Unlock()
}

// admit queues (regenerates) a cover of file in the 256-shard layout.
func (e *env) admit(t *testing.T, file int64, format protocol.ImageFormat) model.Thumbnail {
	t.Helper()
	th, _, err := thumbnails.New(e.ctrl).RegenerateThumbnail(context.Background(), file, format, 1000, 256)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// claim is admit, and the row claimed for the test's own RenderRow.
func (e *env) claim(t *testing.T, file int64, format protocol.ImageFormat) model.Thumbnail {
	t.Helper()
	return claimed(t, e.ctrl, e.admit(t, file, format))
}

// claimed makes th a live claim, as the engine's claim would (running, a
// lease a day long, the next lease_epoch), so that the render's fenced
// cover mark passes. An already running row is claimed anew.
func claimed(tb testing.TB, ctrl *store.Store, th model.Thumbnail) model.Thumbnail {
	tb.Helper()
	ctx := context.Background()
	now := time.Now()
	if _, err := storetest.Exec(ctx, ctrl, `UPDATE thumbnails SET status = 'running', worker_id = 'test', worker_heartbeat_at = ?1,
		lease_expires_at = ?2, lease_epoch = lease_epoch + 1 WHERE id = ?3`,
		protocol.FormatTime(now), protocol.FormatTime(now.Add(24*time.Hour)), th.ID); err != nil {
		tb.Fatal(err)
	}
	got, err := thumbnails.New(ctrl).GetThumbnail(ctx, th.ID)
	if err != nil {
		tb.Fatal(err)
	}
	th.Status, th.Lease, th.LeaseEpoch = got.Status, got.Lease, got.LeaseEpoch
	return th
}

func (e *env) render(t *testing.T, file int64) (Result, error) {
	t.Helper()
	return e.r.RenderRow(context.Background(), e.claim(t, file, protocol.ImageWebP))
}

func mustZip(t testing.TB, files ...fixtures.File) []byte {
	t.Helper()
	b, err := fixtures.Zip(files, zip.Deflate)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRender(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := setup(t)
	t.Run("archive cover lands in its shard", func(t *testing.T) {
		book := mustZip(t,
			fixtures.File{Name: "__MACOSX/._p01.jpg", Data: []byte("junk")},
			fixtures.File{Name: "p10.jpg", Data: mustJPEG(t, 400, 400, 2)},
			fixtures.File{Name: "p2.jpg", Data: mustJPEG(t, 600, 300, 3)},
			fixtures.File{Name: "p1.jpg", Data: mustJPEG(t, 640, 960, 1)},
		)
		id := e.put(t, "series/book.cbz", book)
		th := e.claim(t, id, protocol.ImageWebP)
		res, err := e.r.RenderRow(ctx, th)
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(e.state, "covers", fmt.Sprintf("%03d", id%256), fmt.Sprintf("%d.webp", id))
		if th.OutputRelpath != "covers/"+fmt.Sprintf("%03d/%d.webp", id%256, id) {
			t.Fatalf("output_relpath %q", th.OutputRelpath)
		}
		data, err := os.ReadFile(want)
		if err != nil {
			t.Fatalf("cover not at %s: %v", want, err)
		}
		d := mustDecode(t, data)
		// p1 (640×960) is first in natural order: 320×480.
		if d.W != 320 || d.H != 480 || res.Width != 320 || res.Height != 480 || res.BytesSize != int64(len(data)) {
			t.Fatalf("cover %dx%d, result %+v", d.W, d.H, res)
		}
		if len(data) > 48<<10 || res.Attempts > 2 {
			t.Fatalf("%d bytes in %d attempts", len(data), res.Attempts)
		}
		v, _ := thumbnails.New(e.work).CoverVersionOf(ctx, id)
		if v == 0 || v != res.Version {
			t.Fatalf("cover_updated_at %d, result version %d", v, res.Version)
		}
		res2, err := e.r.RenderRow(ctx, e.claim(t, id, protocol.ImageWebP))
		if err != nil || res2.Version <= res.Version {
			t.Fatalf("re-render version %d after %d (%v): the URL must change", res2.Version, res.Version, err)
		}
		t.Run("front cover page", func(t *testing.T) {
			if _, err := storetest.Exec(ctx, e.ctrl, `INSERT INTO file_metadata (file_id, source, front_cover_page, updated_at)
				VALUES (?, 'comicinfo', 1, '2026-01-01 00:00:00.000')`, id); err != nil {
				t.Fatal(err)
			}
			res, err := e.r.RenderRow(ctx, e.claim(t, id, protocol.ImageWebP))
			if err != nil || res.Width != 320 || res.Height != 160 {
				t.Fatalf("FrontCover=1 (p2, 600×300): %+v %v", res, err)
			}
			if _, err := storetest.Exec(ctx, e.ctrl, `UPDATE file_metadata SET front_cover_page = 99 WHERE file_id = ?`, id); err != nil {
				t.Fatal(err)
			}
			res, err = e.r.RenderRow(ctx, e.claim(t, id, protocol.ImageWebP))
			if err != nil || res.Height != 480 {
				t.Fatalf("invalid FrontCover falls back to the first page: %+v %v", res, err)
			}
		})
	})
	t.Run("loose image as jpeg with settings", func(t *testing.T) {
		e.settings(t, map[string]string{"scan.cover.width": "200", "scan.cover.target_kb": "16"})
		defer e.settings(t, map[string]string{"scan.cover.width": "320", "scan.cover.target_kb": "48"})
		id := e.put(t, "loose/page.png", mustImage(t, fixtures.PNG, 400, 500, 8))
		th := e.claim(t, id, protocol.ImageJPEG)
		res, err := e.r.RenderRow(ctx, th)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(e.state, filepath.FromSlash(th.OutputRelpath)))
		if err != nil || kind(data) != "jpeg" || !strings.HasSuffix(th.OutputRelpath, ".jpg") {
			t.Fatalf("jpeg cover at %s: %v", th.OutputRelpath, err)
		}
		if d := mustDecode(t, data); d.W != 200 || d.H != 250 || len(data) > 16<<10 || res.Width != 200 {
			t.Fatalf("cover %dx%d %d bytes", d.W, d.H, len(data))
		}
	})
	t.Run("errors", func(t *testing.T) {
		e.settings(t, map[string]string{"thumbnail.max_source_mb": "1"})
		defer e.settings(t, map[string]string{"thumbnail.max_source_mb": "64"})
		if err := os.WriteFile(filepath.Join(e.outside, "secret.jpg"), mustJPEG(t, 64, 64, 1), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.outside, "secret.cbz"), mustZip(t, fixtures.File{Name: "a.jpg", Data: mustJPEG(t, 64, 64, 1)}), 0o644); err != nil {
			t.Fatal(err)
		}
		jpg := mustJPEG(t, 600, 900, 4)
		encrypted, err := fixtures.EncryptedZip([]fixtures.File{{Name: "a.jpg", Data: jpg}}, "pw")
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			file func() int64
			code string
		}{
			{"truncated jpeg", func() int64 { return e.put(t, "bad/trunc.jpg", jpg[:len(jpg)/2]) }, protocol.ErrDecodeError},
			{"truncated page in zip", func() int64 {
				return e.put(t, "bad/trunc.cbz", mustZip(t, fixtures.File{Name: "1.jpg", Data: jpg[:len(jpg)/3]}))
			}, protocol.ErrDecodeError},
			{"archive without pages", func() int64 {
				return e.put(t, "bad/empty.cbz", mustZip(t, fixtures.File{Name: "notes.txt", Data: []byte("hi")}))
			}, protocol.ErrDecodeError},
			{"zip bomb entry", func() int64 {
				return e.put(t, "bad/bomb.cbz", mustZip(t, fixtures.File{Name: "1.jpg", Data: make([]byte, 3<<20)}))
			}, protocol.ErrSourceTooLarge},
			{"loose image too large", func() int64 {
				return e.put(t, "bad/huge.png", append(encodePNG(t, fixtures.Picture(8, 8, 1)), make([]byte, 2<<20)...))
			}, protocol.ErrSourceTooLarge},
			{"encrypted", func() int64 { return e.put(t, "bad/enc.cbz", encrypted) }, protocol.ErrArchiveEncrypted},
			{"symlinked page outside", func() int64 {
				link := filepath.Join(e.lib, "bad", "link.jpg")
				must(t, os.Symlink(filepath.Join(e.outside, "secret.jpg"), link))
				return e.register(t, "bad/link.jpg")
			}, protocol.ErrPathViolation},
			{"symlinked archive outside", func() int64 {
				must(t, os.Symlink(filepath.Join(e.outside, "secret.cbz"), filepath.Join(e.lib, "bad", "link.cbz")))
				return e.register(t, "bad/link.cbz")
			}, protocol.ErrPathViolation},
			{"dot-dot path", func() int64 { return e.register(t, "../outside/secret.jpg") }, protocol.ErrPathViolation},
			{"absolute path", func() int64 { return e.register(t, filepath.Join(e.outside, "secret.jpg")) }, protocol.ErrPathViolation},
			{"file deleted", func() int64 { return e.register(t, "bad/never-existed.cbz") }, protocol.ErrSourceMissing},
			{"file marked missing", func() int64 {
				id := e.put(t, "bad/missing.jpg", jpg)
				th := e.claim(t, id, protocol.ImageWebP)
				_, err := storetest.Exec(ctx, e.ctrl, `UPDATE library_files SET is_missing = 1 WHERE id = ?`, id)
				must(t, err)
				_, err = e.r.RenderRow(ctx, th)
				if protocol.CodeOf(err, "") != protocol.ErrSourceMissing {
					t.Fatalf("missing file: %v", err)
				}
				return 0
			}, protocol.ErrSourceMissing},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				id := c.file()
				if id == 0 {
					return
				}
				_, err := e.render(t, id)
				var pe *protocol.Error
				if !errors.As(err, &pe) || pe.Code != c.code {
					t.Fatalf("%v, want %s", err, c.code)
				}
				if _, err := os.Stat(filepath.Join(e.state, filepath.FromSlash(thumbnails.CoverRelPath(id, 256, protocol.ImageWebP)))); err == nil {
					t.Fatal("a cover was written for a failed render")
				}
			})
		}
		t.Run("library outside the library root", func(t *testing.T) {
			r := NewRenderer(e.work, Config{StateDir: e.state, LibraryRoots: pathsafe.Roots{e.outside}})
			id := e.put(t, "ok.jpg", jpg)
			_, err := r.RenderRow(ctx, e.claim(t, id, protocol.ImageWebP))
			if protocol.CodeOf(err, "") != protocol.ErrPathViolation {
				t.Fatalf("%v, want path_violation", err)
			}
		})
		t.Run("output outside covers", func(t *testing.T) {
			id := e.put(t, "ok2.jpg", jpg)
			for _, rel := range []string{"covers/../../outside/x.webp", "elsewhere/1.webp", "covers/1.webp", "/tmp/x.webp"} {
				th := e.claim(t, id, protocol.ImageWebP)
				th.OutputRelpath = rel
				if _, err := e.r.RenderRow(ctx, th); protocol.CodeOf(err, "") != protocol.ErrPathViolation {
					t.Fatalf("output %q: %v, want path_violation", rel, err)
				}
			}
			// A shard folder that is a symlink out of the cache.
			must(t, os.MkdirAll(filepath.Join(e.state, "covers"), 0o755))
			must(t, os.Symlink(e.outside, filepath.Join(e.state, "covers", "evil")))
			th := e.claim(t, id, protocol.ImageWebP)
			th.OutputRelpath = "covers/evil/1.webp"
			if _, err := e.r.RenderRow(ctx, th); protocol.CodeOf(err, "") != protocol.ErrPathViolation {
				t.Fatalf("symlinked shard: %v, want path_violation", err)
			}
			if _, err := os.Stat(filepath.Join(e.outside, "1.webp")); err == nil {
				t.Fatal("cover written outside the cache")
			}
		})
	})
	if s := e.r.Stats(); s.Renders < 4 || s.Encodes < s.Renders {
		t.Fatalf("stats %+v", s)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
