package comicinfo

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/encoding/unicode"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
)

func setup(t *testing.T, doc string) *ComicInfo {
	t.Helper()
	ci, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return ci
}

func TestParse(t *testing.T) {
	t.Run("generated document round-trips", func(t *testing.T) {
		in := fixtures.ComicInfo{
			Series: "Astérix & Obélix", Number: "12.5", Title: "Größe <1>", Publisher: "Dargaud", Volume: 3, Year: 1961, Month: 10,
			Genre: "Humour", Tags: "gaul, romans", AgeRating: "Everyone", LanguageISO: "fr", Writer: "Goscinny", Penciller: "Uderzo",
			Summary: "Ils sont fous", Web: "https://example.org/a?b=1&c=2", FrontCover: 2,
		}
		ci := setup(t, string(in.XML()))
		want := ComicInfo{
			Series: in.Series, Number: in.Number, Title: in.Title, Publisher: in.Publisher, Volume: 3, Year: 1961, Month: 10,
			Genre: in.Genre, Tags: in.Tags, AgeRating: in.AgeRating, LanguageISO: "fr", Writer: "Goscinny", Penciller: "Uderzo",
			Summary: in.Summary, Web: in.Web, FrontCoverPage: 2,
		}
		if *ci != want {
			t.Fatalf("got %+v\nwant %+v", *ci, want)
		}
	})
	t.Run("tolerant", func(t *testing.T) {
		ci := setup(t, "\ufeff<?xml version=\"1.0\"?>\n<ComicInfo><Unknown><Deep>x</Deep></Unknown><Series>  Saga </Series>"+
			"<Year>twenty</Year><Month>13</Month><Volume>-1</Volume><Number>1a</Number><Summary>a&nbsp;b</Summary></ComicInfo>")
		if ci.Series != "Saga" || ci.Year != 0 || ci.Month != 0 || ci.Volume != 0 || ci.Number != "1a" || ci.FrontCoverPage != -1 || ci.Summary != "a\u00a0b" {
			t.Fatalf("%+v", *ci)
		}
		if ci := setup(t, "<ComicInfo><Year>2016.0</Year></ComicInfo>"); ci.Year != 2016 {
			t.Fatalf("year %d", ci.Year)
		}
	})
	t.Run("manga and count", func(t *testing.T) {
		for doc, want := range map[string][2]any{
			"<Manga>YesAndRightToLeft</Manga><Count>12</Count>":                  {"yes_rtl", 12},
			"<Manga>yes</Manga><Count>12.0</Count>":                              {"yes", 12},
			"<Manga>No</Manga><Count>-1</Count>":                                 {"no", 0},
			"<Manga>Unknown</Manga><Count>abc</Count>":                           {"", 0},
			"<Manga>Maybe</Manga><Count>1000000000000000000000000000000</Count>": {"", 0},
			"<Manga></Manga><Count></Count>":                                     {"", 0},
			"<Count>1/2</Count>":                                                 {"", 0},
		} {
			ci := setup(t, "<ComicInfo>"+doc+"</ComicInfo>")
			if ci.Manga != want[0] || ci.Count != want[1] {
				t.Errorf("%s: manga %q count %d, want %v", doc, ci.Manga, ci.Count, want)
			}
		}
	})
	t.Run("front cover", func(t *testing.T) {
		ci := setup(t, `<ComicInfo><Pages><Page Image="0" Type="Story"/><Page Image="3" Type="frontcover"/><Page Image="5" Type="FrontCover"/></Pages></ComicInfo>`)
		if ci.FrontCoverPage != 3 {
			t.Fatalf("front cover %d", ci.FrontCoverPage)
		}
		if ci := setup(t, `<ComicInfo><Pages><Page Image="x" Type="FrontCover"/></Pages></ComicInfo>`); ci.FrontCoverPage != -1 {
			t.Fatalf("bad image index gave %d", ci.FrontCoverPage)
		}
	})
	t.Run("encodings", func(t *testing.T) {
		utf16, err := unicode.UTF16(unicode.LittleEndian, unicode.UseBOM).NewEncoder().String(`<?xml version="1.0" encoding="utf-16"?><ComicInfo><Series>Übermäßig</Series></ComicInfo>`)
		if err != nil {
			t.Fatal(err)
		}
		if ci := setup(t, utf16); ci.Series != "Übermäßig" {
			t.Fatalf("utf-16 series %q", ci.Series)
		}
		latin1 := "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><ComicInfo><Series>\xdcber</Series></ComicInfo>"
		if ci := setup(t, latin1); ci.Series != "Über" {
			t.Fatalf("latin-1 series %q", ci.Series)
		}
	})
}

func TestRefused(t *testing.T) {
	laughs := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">` +
		`<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><ComicInfo><Series>&lol3;</Series></ComicInfo>`
	external := `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><ComicInfo><Series>&xxe;</Series></ComicInfo>`
	cases := map[string]struct {
		doc  string
		want error
	}{
		"billion laughs":    {laughs, ErrDoctype},
		"external entity":   {external, ErrDoctype},
		"deep nesting":      {"<ComicInfo>" + strings.Repeat("<a>", 10000) + strings.Repeat("</a>", 10000) + "</ComicInfo>", ErrTooDeep},
		"oversized":         {"<ComicInfo><Summary>" + strings.Repeat("x", MaxSize) + "</Summary></ComicInfo>", ErrTooLarge},
		"empty":             {"", ErrNotXML},
		"other root":        {"<html><Series>x</Series></html>", ErrNotXML},
		"two roots":         {"<ComicInfo/><ComicInfo/>", ErrNotXML},
		"undefined entity":  {"<ComicInfo><Series>&bogus;</Series></ComicInfo>", nil},
		"truncated":         {"<ComicInfo><Series>Sa", nil},
		"unknown charset":   {`<?xml version="1.0" encoding="ebcdic"?><ComicInfo/>`, nil},
		"not xml at all":    {"\x00\x01\x02 binary", nil},
		"mismatched closer": {"<ComicInfo><Series>x</Title></ComicInfo>", nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			ci, err := Parse([]byte(c.doc))
			if err == nil || ci != nil {
				t.Fatalf("accepted: %+v", ci)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

// TestKavitaFixtures parses the ComicInfo.xml chosen from real archives.
func TestKavitaFixtures(t *testing.T) {
	dir := testutil.SharedFixture(t, "kavita")
	cases := map[string]ComicInfo{
		"Umlaut.zip": {Series: "Belladonna", Title: "Belladonna", Year: 2016, Month: 5, Writer: "Guéro Anne, Guéro Gérard",
			Penciller: "Alary Pierre", Publisher: "Bee Dee", Genre: "Adventure, Historical", LanguageISO: "en", FrontCoverPage: -1},
		"ComicInfo_duplicateInfos.zip": {Series: "BTOOOM!", Title: "Cool chatper name here 2", Volume: 2, Year: 2013,
			Genre: "Action, Drama, Ecchi", Writer: "Junya Inoue", LanguageISO: "en",
			Web: "https://www.comixology.com/BTOOOM/digital-comic/450184", FrontCoverPage: -1},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := archive.Open(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			data, ok, err := a.ComicInfo()
			if err != nil || !ok {
				t.Fatalf("ComicInfo: %v %v", ok, err)
			}
			ci, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(ci.Summary, want.Summary) || ci.Summary == "" {
				t.Fatalf("summary %q", ci.Summary)
			}
			ci.Summary = ""
			if *ci != want {
				t.Fatalf("got %+v\nwant %+v", *ci, want)
			}
		})
	}
}

func FuzzComicInfo(f *testing.F) {
	f.Add(fixtures.ComicInfo{Series: "Saga", Number: "1", Year: 2012, FrontCover: 1}.XML())
	f.Add([]byte("\ufeff<ComicInfo><Year>x</Year><Pages><Page Image=\"0\" Type=\"FrontCover\"/></Pages></ComicInfo>"))
	f.Add([]byte(`<!DOCTYPE a [<!ENTITY a "b">]><ComicInfo/>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ci, err := Parse(data)
		if (ci == nil) == (err == nil) {
			t.Fatalf("ci=%v err=%v", ci, err)
		}
		if ci != nil && (ci.Month < 0 || ci.Month > 12 || ci.Year < 0 || ci.FrontCoverPage < -1) {
			t.Fatalf("out of range: %+v", *ci)
		}
	})
}
