package scan

import (
	"testing"

	"github.com/bindery-nas/bindery/protocol"
)

func TestGuessSeries(t *testing.T) {
	cases := []struct {
		rel    string
		name   string
		year   int
		source protocol.MetadataSource
	}{
		{"Batman (2016)/Batman 001.cbz", "Batman", 2016, protocol.MetaFolder},
		{"DC/Batman (2016) [Digital]/x.cbz", "Batman", 2016, protocol.MetaFolder},
		{"Saga/v01.cbz", "Saga", 0, protocol.MetaFolder},
		{"  Spaced   Out  /a.cbz", "Spaced Out", 0, protocol.MetaFolder},
		{"(2016)/a.cbz", "(2016)", 0, protocol.MetaFolder},
		{"Saga v01 #003 (2012).cbz", "Saga", 2012, protocol.MetaFilename},
		{"Batman 001.cbz", "Batman", 0, protocol.MetaFilename},
		{"One Piece - Chapter 1000.cbz", "One Piece", 0, protocol.MetaFilename},
		{"One_Piece_v02.cbz", "One Piece", 0, protocol.MetaFilename},
		{"100 Bullets 001.cbz", "100 Bullets", 0, protocol.MetaFilename},
		{"Vol. 1.cbz", "Vol. 1", 0, protocol.MetaFilename},
		{"Akira Tome 3 [Glenat].cbr", "Akira", 0, protocol.MetaFilename},
		{"Watchmen.cbz", "Watchmen", 0, protocol.MetaFilename},
	}
	for _, c := range cases {
		t.Run(c.rel, func(t *testing.T) {
			g := guessSeries(c.rel)
			if g.name != c.name || g.year != c.year || g.source != c.source {
				t.Fatalf("guessSeries(%q) = %+v, want %q %d %s", c.rel, g, c.name, c.year, c.source)
			}
		})
	}
}

func TestIdentityKey(t *testing.T) {
	same := [][2]string{
		{"Batman", "batman"},
		{"BATMAN ", " batman"},
		{"The  Flash", "the flash"},
		{"Straße", "STRASSE"},
		{"Café", "Cafe\u0301"}, // NFC: precomposed and combining accent
		{"ΣΊΣΥΦΟΣ", "σίσυφος"},
	}
	for _, p := range same {
		if identityKey(p[0]) != identityKey(p[1]) {
			t.Errorf("identityKey(%q)=%q != identityKey(%q)=%q", p[0], identityKey(p[0]), p[1], identityKey(p[1]))
		}
	}
	if identityKey("Batman") == identityKey("Batwoman") {
		t.Error("distinct names share a key")
	}
}
