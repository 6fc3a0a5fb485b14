package web_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/web"
)

// videoFile is a generated video of a test library and the "Video"
// details the file dialog must show for it, in order.
type videoFile struct {
	rel  string
	kind fixtures.VideoKind
	want []string // "Label: value"
}

// writeVideos puts three real videos in lib/Video (after the comics in
// path order): h264 + AAC, VP9 without sound, and a portrait phone clip
// (stored landscape, rotated for display).
func writeVideos(t *testing.T, lib string) []videoFile {
	t.Helper()
	vs := []videoFile{
		{"Video/Episode 01.mp4", fixtures.VideoMP4, []string{"Container: mp4", "Duration: 0:04", "Resolution: 320×240",
			"Video codec: h264", "Audio codec: aac"}},
		{"Video/Phone.mov", fixtures.VideoRotated, []string{"Container: mp4", "Duration: 0:04", "Resolution: 240×320 (rotated 270°)",
			"Video codec: h264", "Audio codec: aac"}},
		{"Video/Trailer.webm", fixtures.VideoWebM, []string{"Container: webm", "Duration: 0:04", "Resolution: 320×240",
			"Video codec: vp9", "Audio codec: none"}},
	}
	if err := os.MkdirAll(filepath.Join(lib, "Video"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		if err := fixtures.Video(filepath.Join(lib, filepath.FromSlash(v.rel)), v.kind, 100+i); err != nil {
			t.Fatal(err)
		}
	}
	return vs
}

// videoIDs maps the relative paths of the library's video files to their ids.
func videoIDs(t *testing.T, e *env) map[string]string {
	t.Helper()
	_, page := e.call(t, "GET", "/files?library_id=1&format=video&limit=100", nil)
	ids := map[string]string{}
	for _, it := range page["items"].([]any) {
		f := it.(map[string]any)
		ids[f["relative_path"].(string)] = fmt.Sprint(f["id"])
	}
	return ids
}

// checkVideoDetails opens each video's card on the browse page (already
// open, covers loaded) and compares its dialog with what ffprobe found
// through the real scan: a "Video" section, no page count.
func checkVideoDetails(t *testing.T, ctx context.Context, e *env, vs []videoFile) {
	ids := videoIDs(t, e)
	if len(ids) != len(vs) {
		t.Fatalf("the API lists videos %v, want %d", ids, len(vs))
	}
	for i, v := range vs {
		id := ids[v.rel]
		card := `#file-grid .card[data-file-id="` + id + `"]`
		meta := eval[string](t, ctx, `document.querySelector('`+card+` .meta').textContent`)
		if !strings.HasPrefix(meta, "VIDEO · ") || strings.Contains(meta, " p") {
			t.Errorf("%s: card says %q, want the format and size, no pages", v.rel, meta)
		}
		if !eval[bool](t, ctx, `(() => { const i = document.querySelector('`+card+` img'); return i && i.naturalWidth > 0; })()`) {
			t.Errorf("%s: no cover shown", v.rel)
		}
		steps := []chromedp.Action[chromedp.Void]{clickText(card+" button", "Details"), waitJS(`document.querySelector('dialog #file-video dl')`)}
		if i == 0 {
			steps = append(steps, e.shot("22b-video-details"))
		}
		run(t, ctx, "details of "+v.rel, steps...)
		got := eval[[]string](t, ctx, `[...document.querySelectorAll('dialog #file-video dt')].map((dt) => dt.textContent + ': ' + dt.nextElementSibling.textContent)`)
		if strings.Join(got, "\n") != strings.Join(v.want, "\n") {
			t.Errorf("%s: video details\n%s\nwant\n%s", v.rel, strings.Join(got, "\n"), strings.Join(v.want, "\n"))
		}
		main := eval[[]string](t, ctx, `[...document.querySelectorAll('dialog > div > dl.kv > dt')].map((dt) => dt.textContent + ': ' + dt.nextElementSibling.textContent)`)
		if !contains(main, "Format: video") || !contains(main, "Cover: ready") || strings.Contains(strings.Join(main, "\n"), "Pages:") {
			t.Errorf("%s: file details %v, want format video, cover ready, no pages", v.rel, main)
		}
		run(t, ctx, "close", chromedp.Click(chromedp.CSS("dialog button[type=submit]")), waitJS(`!document.querySelector('dialog')`))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkComicsOnly switches library 1 to comics only on the libraries page,
// scans it through workerd and finds its videos missing, and the comics not.
func checkComicsOnly(t *testing.T, ctx context.Context, e *env, vs []videoFile) {
	row := `#libraries tr[data-library-id="1"]`
	_, scans := e.call(t, "GET", "/scans?library_id=1&limit=1", nil)
	before := scans["items"].([]any)[0].(map[string]any)["id"]
	run(t, ctx, "switch", page("libraries"),
		waitJS(`document.querySelector('`+row+` select.media').value === 'comics+video'`),
		setValue(row+" select.media", "comics"),
		waitJS(`document.querySelector('`+row+` .msg').textContent.startsWith('Comics only')`),
		clickText(row+" button", "Scan now"),
		waitJS(`/^scan /.test(document.querySelector('`+row+` .msg').textContent)`))
	waitAPI(t, e, "a scan of comics only", func() bool {
		_, s := e.call(t, "GET", "/scans?library_id=1&limit=1", nil)
		last := s["items"].([]any)[0].(map[string]any)
		return last["id"] != before && last["status"] == "succeeded"
	})
	// The row is redrawn from the API when the job ends: the videos are
	// missing, the media is kept.
	run(t, ctx, "row redrawn", waitJS(fmt.Sprintf(`document.querySelectorAll('%s td.num')[1].textContent === '%d' &&
		document.querySelector('%s select.media').value === 'comics'`, row, len(vs), row)))
	_, f := e.call(t, "GET", "/files?library_id=1&format=video&limit=100", nil)
	for _, it := range f["items"].([]any) {
		if it.(map[string]any)["is_missing"] != true {
			t.Errorf("after a scan of comics only, %v is still present", it.(map[string]any)["relative_path"])
		}
	}
	run(t, ctx, "browse", page("browse"), waitJS(`document.querySelectorAll('#file-grid .card').length > 0`))
	ids := videoIDs(t, e)
	for _, v := range vs {
		if !eval[bool](t, ctx, `(document.querySelector('#file-grid .card[data-file-id="`+ids[v.rel]+`"] .badges') || {}).textContent?.includes('missing')`) {
			t.Errorf("%s: no missing badge after a scan of comics only", v.rel)
		}
	}
	if n := eval[int](t, ctx, `[...document.querySelectorAll('#file-grid .card')].filter((c) => !c.querySelector('.meta').textContent.startsWith('VIDEO') && c.textContent.includes('missing')).length`); n != 0 {
		t.Errorf("%d comics marked missing after a scan of comics only", n)
	}
}

// checkMediaSwitch drives the libraries page's media control: library
// 1 (comics + video, the default) switched and switched back, a library
// added as comics only, and a switch the API refuses (another client
// deleted that library) showing the API's error and the saved value.
func checkMediaSwitch(t *testing.T, ctx context.Context, e *env) {
	row := func(id string) string { return `#libraries tr[data-library-id="` + id + `"]` }
	media := func(id string) string {
		_, lib := e.call(t, "GET", "/libraries/"+id, nil)
		return fmt.Sprint(lib["media"])
	}
	if got := eval[string](t, ctx, `document.querySelector('`+row("1")+` select.media option:checked').textContent`); got != "comics + video" {
		t.Errorf("a new library shows media %q, want comics + video", got)
	}
	run(t, ctx, "comics only", setValue(row("1")+" select.media", "comics"),
		waitJS(`document.querySelector('`+row("1")+` .msg').textContent.startsWith('Comics only')`))
	if got := media("1"); got != "comics" {
		t.Errorf("after the switch the API says media %s", got)
	}
	run(t, ctx, "comics and video", setValue(row("1")+" select.media", "comics+video"),
		waitJS(`document.querySelector('`+row("1")+` .msg').textContent.startsWith('Comics and video')`))
	if got := media("1"); got != "comics+video" {
		t.Errorf("after switching back the API says media %s", got)
	}

	clips := filepath.Join(e.Root, "clips")
	if err := os.MkdirAll(clips, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "add comics only", fill("#lib-name", "Clips"), fill("#lib-path", clips), setValue("#lib-media", "comics"),
		chromedp.Click(chromedp.CSS("#add-library button[type=submit]")),
		waitJS(`document.querySelectorAll('#libraries tr[data-library-id]').length === 2`))
	id := eval[string](t, ctx, `document.querySelector('#libraries tr[data-library-id]').dataset.libraryId`)
	if got := media(id); got != "comics" {
		t.Errorf("library added as comics only has media %s", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('`+row(id)+` select.media').value + ' ' + document.getElementById('lib-media').value`); got != "comics comics+video" {
		t.Errorf("row and reset form show %q, want comics comics+video", got)
	}
	if code, _ := e.call(t, "DELETE", "/libraries/"+id, nil); code != 204 {
		t.Fatalf("delete library %s: %d", id, code)
	}
	run(t, ctx, "refused", setValue(row(id)+" select.media", "comics+video"),
		waitJS(`document.querySelector('`+row(id)+` .msg').textContent.endsWith('not found (library_not_found)')`),
		waitJS(`!document.querySelector('`+row(id)+` select.media').disabled`),
		e.shot("04b-libraries-media-refused"))
	if got := eval[string](t, ctx, `document.querySelector('`+row(id)+` select.media').value`); got != "comics" {
		t.Errorf("after a refusal the select shows %s, want the saved comics", got)
	}
}

// TestVideoFormatters checks the dashboard's duration and resolution
// formatters in the browser, on values no short test video reaches.
func TestVideoFormatters(t *testing.T) {
	hs := httptest.NewServer(web.Handler())
	t.Cleanup(hs.Close)
	ctx := browser(t)
	run(t, ctx, "open", chromedp.Navigate(hs.URL+"/"))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`import('/js/ui.js').then((ui) => [
		...[0, 499, 4000, 59499, 59500, 1440000, 3599000, 3600000, 14400000, 36061000, null].map((ms) => ui.fmtDuration(ms)),
		...[{ width: 1920, height: 1080, rotation: 0 }, { width: 1080, height: 1920, rotation: 90 },
			{ width: 1920, height: 1080, rotation: 180 }, { width: 240, height: 320, rotation: 270 },
			{ width: null, height: null, rotation: 0 }].map((v) => ui.fmtResolution(v)),
	])`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0:00", "0:00", "0:04", "0:59", "1:00", "24:00", "59:59", "1:00:00", "4:00:00", "10:01:01", "–",
		"1920×1080", "1080×1920 (rotated 90°)", "1920×1080 (rotated 180°)", "240×320 (rotated 270°)", "none (no video stream)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("formatted\n%q\nwant\n%q", got, want)
	}
}
