package model

import (
	"strconv"

	"github.com/bindery-nas/bindery/protocol"
)

// File is one library file as the admin API shows it: the library_files
// row with its series name and the state of its cover.
type File struct {
	ID           int64
	LibraryID    int64
	RelativePath string
	SortKey      string
	PathKey      string
	Role         protocol.FileRole
	// Volumes counts the volumes of a multi-volume RAR book; nil otherwise.
	Volumes              *int64
	SizeBytes            int64
	MtimeNS              int64
	Format               *string
	TotalPages           *int64
	SeriesID             *int64
	SeriesName           *string
	IsMissing            bool
	MissingSince         *protocol.Time
	HashAlgorithm        *string
	ContentHash          []byte
	AnalysisErrorCode    *string
	AnalysisErrorMessage *string
	AnalyzedAt           *protocol.Time
	CoverUpdatedAt       *int64
	// CoverStatus is the status of the file's newest thumbnail row; nil
	// when no cover was ever requested.
	CoverStatus *string
	// CoverErrorCode and CoverErrorMessage say why the newest thumbnail
	// row failed; nil unless it did.
	CoverErrorCode    *string
	CoverErrorMessage *string
	// CoverThumbnailID is the newest ready thumbnail row of the file, nil
	// when none is ready (an older cover stays servable while a new one
	// renders).
	CoverThumbnailID *int64
	CreatedAt        protocol.Time
	UpdatedAt        protocol.Time
}

// CoverVersion is the ?v= of the file's cover URL, "" when no cover is
// ready.
func (f File) CoverVersion() string {
	if f.CoverThumbnailID == nil {
		return ""
	}
	return CoverVersion(f.CoverUpdatedAt, *f.CoverThumbnailID)
}

// CoverVersion is cover_updated_at, or "t<thumbnail id>" when workerd did
// not set it; either changes whenever a new cover is rendered.
func CoverVersion(updatedAt *int64, thumbID int64) string {
	if updatedAt != nil {
		return strconv.FormatInt(*updatedAt, 10)
	}
	return "t" + strconv.FormatInt(thumbID, 10)
}

// FileMetadata is a row of file_metadata: what ComicInfo.xml (or, without
// it, the folder or file name) says about one file.
type FileMetadata struct {
	FileID         int64
	Source         string
	Series         *string
	Number         *string
	Volume         *int64
	Title          *string
	Year           *int64
	Month          *int64
	Publisher      *string
	Genre          *string
	Tags           *string
	AgeRating      *string
	LanguageISO    *string
	Writer         *string
	Penciller      *string
	Summary        *string
	Web            *string
	FrontCoverPage *int64
	Manga          *string // protocol.Manga
	SeriesCount    *int64  // ComicInfo <Count>
	UpdatedAt      protocol.Time
}

// VideoProbe is a row of video_probes: what ffprobe said of a video file.
type VideoProbe struct {
	FileID     int64
	Container  string
	DurationMS int64
	Width      *int64
	Height     *int64
	VideoCodec *string
	AudioCodec *string
	// Rotation is the display rotation, clockwise degrees; Width and
	// Height are already the displayed size.
	Rotation int64
	ProbedAt protocol.Time
}
