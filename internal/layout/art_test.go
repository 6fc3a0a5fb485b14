package layout

import (
	"slices"
	"testing"
)

func TestIsSidecarName(t *testing.T) {
	for name, want := range map[string]bool{
		"cover.jpg": true, "Cover.JPG": true, "folder.png": true, "poster.webp": true, "SERIES.avif": true,
		"cover 2.jpg": false, "covers.jpg": false, "001.jpg": false, "back cover.jpg": false, ".cover.jpg": false,
	} {
		if got := IsSidecarName(name); got != want {
			t.Errorf("IsSidecarName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestArtFolders(t *testing.T) {
	for rel, want := range map[string][]string{
		"Saga/Saga 001.cbz":                    {"Saga"},
		"One Piece/Volume 01/chapter 001.cbz":  {"One Piece/Volume 01", "One Piece"},
		"Berserk/Vol 01/":                      {"Berserk"},
		"Manga/One Piece/第1巻/Extras/omake.cbz": {"Manga/One Piece/第1巻/Extras", "Manga/One Piece/第1巻", "Manga/One Piece"},
		"Marvel/Batman (2016)/Batman 001.cbz":  {"Marvel/Batman (2016)"},
		"Batman 001.cbz":                       nil,
		"Volume 01/ch 1.cbz":                   {"Volume 01"},
		"Comics/Saga/cover.jpg":                {"Comics/Saga"},
	} {
		if got := ArtFolders(rel); !slices.Equal(got, want) {
			t.Errorf("ArtFolders(%q) = %q, want %q", rel, got, want)
		}
	}
}
