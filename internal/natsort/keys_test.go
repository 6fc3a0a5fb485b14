package natsort

import (
	"slices"
	"strings"
	"testing"
)

func TestSeriesKey(t *testing.T) {
	names := []string{"Batman 2", "batman 10", "The Boys", "Café Noir", "cafe noir 2", "Les Légendaires", "Lucifer",
		"A Man and His Cat", "Astérix", "L'Arabe du futur", "Zot!", "2000 AD", "100 Bullets"}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(SeriesKey(a), SeriesKey(b)) })
	want := []string{"100 Bullets", "2000 AD", "L'Arabe du futur", "Astérix", "Batman 2", "batman 10", "The Boys",
		"Café Noir", "cafe noir 2", "Les Légendaires", "Lucifer", "A Man and His Cat", "Zot!"}
	if !slices.Equal(names, want) {
		t.Fatalf("series order\n got %q\nwant %q", names, want)
	}
	if SeriesKey("The") != Key("the") {
		t.Fatal("a name that is only an article keeps it")
	}
	if SeriesKey("Straße") == "" || SeriesKey("Café") != SeriesKey("CAFE") {
		t.Fatal("case and accents must not matter")
	}
}

func TestBookKey(t *testing.T) {
	type book struct {
		number string
		volume int64
		hasVol bool
		path   string
	}
	books := []book{
		{"13", 0, false, "x/b13.cbz"},
		{"12.5", 0, false, "x/b12.5.cbz"},
		{"12", 0, false, "x/b12.cbz"},
		{"½", 0, false, "x/half.cbz"},
		{"-1", 0, false, "x/minus.cbz"},
		{"2", 2, true, "x/v2-2.cbz"},
		{"2", 1, true, "x/v1-2.cbz"},
		{"abc", 0, false, "x/Batman 10.cbz"},
		{"", 0, false, "x/Batman 2.cbz"},
		{"1e40", 0, false, "x/Batman 3.cbz"},
	}
	slices.SortFunc(books, func(a, b book) int {
		return strings.Compare(BookKey(a.number, a.volume, a.hasVol, a.path), BookKey(b.number, b.volume, b.hasVol, b.path))
	})
	var got []string
	for _, b := range books {
		got = append(got, b.path)
	}
	want := []string{"x/minus.cbz", "x/half.cbz", "x/v1-2.cbz", "x/v2-2.cbz", "x/b12.cbz", "x/b12.5.cbz", "x/b13.cbz",
		"x/Batman 2.cbz", "x/Batman 3.cbz", "x/Batman 10.cbz"}
	if !slices.Equal(got, want) {
		t.Fatalf("book order\n got %q\nwant %q", got, want)
	}
}

func TestParseNumber(t *testing.T) {
	good := map[string]float64{"12": 12, "12.5": 12.5, "-1": -1, "½": 0.5, "1/2": 0.5, " 7 ": 7, "12a": 12, "0": 0}
	for s, want := range good {
		if v, ok := ParseNumber(s); !ok || v != want {
			t.Errorf("ParseNumber(%q) = %v %v, want %v", s, v, ok, want)
		}
	}
	for _, s := range []string{"abc", "", "1/0", "10^30", "1e30", "NaN", "Inf", "12ab", "a"} {
		if v, ok := ParseNumber(s); ok {
			t.Errorf("ParseNumber(%q) = %v, want no number", s, v)
		}
	}
}
