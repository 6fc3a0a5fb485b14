package layout

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

		// Rule 2: generic folders (volume, chapter, tome, season, extras)
		// are skipped for the folder above them.
		{"One Piece/Volume 01/chapter 001.cbz", "One Piece", 0, protocol.MetaFolder},
		{"One Piece (1997)/Vol. 2/One Piece c010.cbz", "One Piece", 1997, protocol.MetaFolder},
		{"Berserk/v03/Berserk v03 c020.cbz", "Berserk", 0, protocol.MetaFolder},
		{"Berserk/Vol 01 - The Black Swordsman/001.cbz", "Berserk", 0, protocol.MetaFolder},
		{"Naruto/Chapter 12/page.cbz", "Naruto", 0, protocol.MetaFolder},
		{"Naruto/Chapter 12.5/page.cbz", "Naruto", 0, protocol.MetaFolder},
		{"Astérix/Tome 3/Astérix T03.cbz", "Astérix", 0, protocol.MetaFolder},
		{"Les Légendaires/T12/x.cbr", "Les Légendaires", 0, protocol.MetaFolder},
		{"Les Légendaires/Saison 2/Tome 1/x.cbr", "Les Légendaires", 0, protocol.MetaFolder},
		{"ワンピース/第1巻/01.cbz", "ワンピース", 0, protocol.MetaFolder},
		{"進撃の巨人/第０２巻/x.zip", "進撃の巨人", 0, protocol.MetaFolder},
		{"鬼滅の刃/05巻/x.cbz", "鬼滅の刃", 0, protocol.MetaFolder},
		{"The Walking Dead/Season 2/TWD 013.cbz", "The Walking Dead", 0, protocol.MetaFolder},
		{"Hellboy/S01/x.cbz", "Hellboy", 0, protocol.MetaFolder},
		{"Saga (2012) [Image]/Extras/Saga Sketchbook.cbz", "Saga", 2012, protocol.MetaFolder},
		{"Saga/Specials/x.cbz", "Saga", 0, protocol.MetaFolder},
		{"Dragon Ball/01/x.cbz", "Dragon Ball", 0, protocol.MetaFolder},
		{"Dragon Ball/Volume 01 (1984)/x.cbz", "Dragon Ball", 0, protocol.MetaFolder},
		{"Blame!/Book 2/x.cbz", "Blame!", 0, protocol.MetaFolder},
		{"Marvel/Amazing Spider-Man (1963)/ASM 300.cbz", "Amazing Spider-Man", 1963, protocol.MetaFolder},
		{"Manga/Yotsuba&!/Yotsuba v01.cbz", "Yotsuba&!", 0, protocol.MetaFolder},
		{"Comics/2000 AD/Prog 1000.cbz", "2000 AD", 0, protocol.MetaFolder},
		{"Bakuman/Volume 001-010/x.cbz", "Bakuman", 0, protocol.MetaFolder},
		{"Vinland Saga/Omake/x.cbz", "Vinland Saga", 0, protocol.MetaFolder},

		// Rule 3: the file name, at the root or under generic folders only.
		{"Volume 01/One Piece v01 (2003) [Digital].cbz", "One Piece", 2003, protocol.MetaFilename},
		{"One Piece v01 (2003) [Digital].cbz", "One Piece", 2003, protocol.MetaFilename},
		{"Extras/Saga Sketchbook (2013).cbz", "Saga Sketchbook", 2013, protocol.MetaFilename},
		{"Batman #12.5.cbz", "Batman", 0, protocol.MetaFilename},
		{"Batman - #12.5 (2017).cbz", "Batman", 2017, protocol.MetaFilename},
		{"Spider-Man 2099 001 (1992).cbz", "Spider-Man 2099", 1992, protocol.MetaFilename},
		{"Berserk - c354 (v40) [Scans].cbz", "Berserk", 0, protocol.MetaFilename},
		{"Astérix - Tome 12 - Astérix et Cléopâtre.cbz", "Astérix", 0, protocol.MetaFilename},
		{"Tintin T05 - Le Lotus bleu.cbr", "Tintin", 0, protocol.MetaFilename},
		{"Blacksad Chapitre 3.cbz", "Blacksad", 0, protocol.MetaFilename},
		{"ワンピース 第01巻.zip", "ワンピース", 0, protocol.MetaFilename},
		{"進撃の巨人 第10話.cbz", "進撃の巨人", 0, protocol.MetaFilename},
		{"Invincible Issue 7.cbz", "Invincible", 0, protocol.MetaFilename},
		{"Y The Last Man no. 8.cbz", "Y The Last Man", 0, protocol.MetaFilename},
		{"[Group] Chainsaw Man - Vol. 11 [1080].cbz", "Chainsaw Man", 0, protocol.MetaFilename},
		{"Chapter 5.cbz", "Chapter 5", 0, protocol.MetaFilename},
	}
	for _, c := range cases {
		t.Run(c.rel, func(t *testing.T) {
			g := GuessSeries(c.rel)
			if g.Name != c.name || g.Year != c.year || g.Source != c.source {
				t.Fatalf("GuessSeries(%q) = %+v, want %q %d %s", c.rel, g, c.name, c.year, c.source)
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
		if IdentityKey(p[0]) != IdentityKey(p[1]) {
			t.Errorf("IdentityKey(%q)=%q != IdentityKey(%q)=%q", p[0], IdentityKey(p[0]), p[1], IdentityKey(p[1]))
		}
	}
	if IdentityKey("Batman") == IdentityKey("Batwoman") {
		t.Error("distinct names share a key")
	}
}
