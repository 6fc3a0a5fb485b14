package model

import "github.com/bindery-nas/bindery/protocol"

// Series is a row of series.
type Series struct {
	ID           int64
	LibraryID    int64
	Name         string
	NameKey      string
	Publisher    string
	PublisherKey string
	Year         *int64
	Summary      *string
	FileCount    int64
	SortKey      string
	CreatedAt    protocol.Time
	UpdatedAt    protocol.Time
}

// SeriesDetails are the ComicInfo fields of a series, each taken from the
// first present book in reading order that has it, and the book whose
// cover stands for the series.
type SeriesDetails struct {
	Summary     *string
	Genre       *string
	Tags        *string
	AgeRating   *string
	LanguageISO *string
	Writer      *string
	Manga       *string // protocol.Manga
	// SeriesCount is ComicInfo <Count>, the number of issues of the series.
	SeriesCount *int64
	// CoverFileID is the first present book in reading order with a ready
	// cover.
	CoverFileID *int64
	// FirstBook is the relative path of the first present book in reading
	// order: series art is looked for beside it.
	FirstBook *string
}
