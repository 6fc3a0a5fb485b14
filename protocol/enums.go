// Package protocol is the shared contract between controld, workerd and any
// third party that writes rows with plain SQL: enum values, error codes, job
// payloads, lease timing, cursor encodings and the workerd write whitelist.
// It performs no I/O.
package protocol

import "fmt"

// enum is the common shape of the protocol's string enums. Values are the
// lowercase strings stored in the database; parsing never case-folds, so an
// uppercase value from a third party is an error rather than a silent fix.
type enum interface{ ~string }

func parseEnum[T enum](what, s string, legal []T) (T, error) {
	for _, v := range legal {
		if string(v) == s {
			return v, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("invalid %s %q: want one of %v", what, s, legal)
}

type JobKind string

const (
	JobKindScan      JobKind = "scan"
	JobKindHash      JobKind = "hash"
	JobKindDelete    JobKind = "delete"
	JobKindThumbnail JobKind = "thumbnail"
)

var JobKinds = []JobKind{JobKindScan, JobKindHash, JobKindDelete, JobKindThumbnail}

func ParseJobKind(s string) (JobKind, error) { return parseEnum("job kind", s, JobKinds) }

type JobStatus string

const (
	JobPending   JobStatus = "pending"
	JobRunning   JobStatus = "running"
	JobCompleted JobStatus = "completed"
	JobFailed    JobStatus = "failed"
	JobCancelled JobStatus = "cancelled"
	JobRetryable JobStatus = "retryable"
)

var JobStatuses = []JobStatus{JobPending, JobRunning, JobCompleted, JobFailed, JobCancelled, JobRetryable}

func ParseJobStatus(s string) (JobStatus, error) { return parseEnum("job status", s, JobStatuses) }

// Terminal reports whether no further transition is allowed.
func (s JobStatus) Terminal() bool {
	return s == JobCompleted || s == JobFailed || s == JobCancelled
}

type Priority string

const (
	PriorityHigh   Priority = "high"
	PriorityNormal Priority = "normal"
)

var Priorities = []Priority{PriorityHigh, PriorityNormal}

func ParsePriority(s string) (Priority, error) { return parseEnum("priority", s, Priorities) }

type ScanSessionStatus string

const (
	ScanRunning   ScanSessionStatus = "running"
	ScanSucceeded ScanSessionStatus = "succeeded"
	ScanFailed    ScanSessionStatus = "failed"
)

var ScanSessionStatuses = []ScanSessionStatus{ScanRunning, ScanSucceeded, ScanFailed}

func ParseScanSessionStatus(s string) (ScanSessionStatus, error) {
	return parseEnum("scan session status", s, ScanSessionStatuses)
}

type HashAlgorithm string

const (
	HashBLAKE3 HashAlgorithm = "blake3"
	HashSHA256 HashAlgorithm = "sha256"
)

var HashAlgorithms = []HashAlgorithm{HashBLAKE3, HashSHA256}

func ParseHashAlgorithm(s string) (HashAlgorithm, error) {
	return parseEnum("hash algorithm", s, HashAlgorithms)
}

// HexLen is the length of the algorithm's digest in hex characters.
func (a HashAlgorithm) HexLen() int { return 64 }

type FileFormat string

const (
	FormatZip      FileFormat = "zip"
	FormatRar      FileFormat = "rar"
	FormatSevenZip FileFormat = "7z"
	FormatImage    FileFormat = "image"
	// FormatFolder is a folder of page images read as one book.
	FormatFolder FileFormat = "folder"
	// FormatVideo is a video file, probed by ffprobe (video_probes).
	FormatVideo FileFormat = "video"
)

var FileFormats = []FileFormat{FormatZip, FormatRar, FormatSevenZip, FormatImage, FormatFolder, FormatVideo}

// MediaType is the kind of cover render a file of format f needs.
func (f FileFormat) MediaType() MediaType {
	if f == FormatVideo {
		return MediaVideo
	}
	return MediaImage
}

func ParseFileFormat(s string) (FileFormat, error) { return parseEnum("file format", s, FileFormats) }

type ThumbnailStatus string

const (
	ThumbPending ThumbnailStatus = "pending"
	ThumbRunning ThumbnailStatus = "running"
	ThumbReady   ThumbnailStatus = "ready"
	ThumbFailed  ThumbnailStatus = "failed"
)

var ThumbnailStatuses = []ThumbnailStatus{ThumbPending, ThumbRunning, ThumbReady, ThumbFailed}

func ParseThumbnailStatus(s string) (ThumbnailStatus, error) {
	return parseEnum("thumbnail status", s, ThumbnailStatuses)
}

// ThumbnailTask is what a thumbnail row asks of workerd (thumbnails.task):
// render the cover, or only hash the cover already cached (a cover
// rendered before covers had hashes; rendered when its file is gone).
type ThumbnailTask string

const (
	TaskRender ThumbnailTask = "render"
	TaskHash   ThumbnailTask = "hash"
)

var ThumbnailTasks = []ThumbnailTask{TaskRender, TaskHash}

func ParseThumbnailTask(s string) (ThumbnailTask, error) {
	return parseEnum("thumbnail task", s, ThumbnailTasks)
}

type MediaType string

const (
	MediaImage MediaType = "image"
	MediaVideo MediaType = "video"
)

var MediaTypes = []MediaType{MediaImage, MediaVideo}

func ParseMediaType(s string) (MediaType, error) { return parseEnum("media type", s, MediaTypes) }

// LibraryMedia is what a library indexes (libraries.media).
type LibraryMedia string

const (
	LibraryComics      LibraryMedia = "comics"
	LibraryComicsVideo LibraryMedia = "comics+video"
)

var LibraryMedias = []LibraryMedia{LibraryComics, LibraryComicsVideo}

func ParseLibraryMedia(s string) (LibraryMedia, error) {
	return parseEnum("library media", s, LibraryMedias)
}

// WatchMode is how controld's watcher follows a library (libraries.watch).
type WatchMode string

const (
	WatchAuto    WatchMode = "auto"
	WatchInotify WatchMode = "inotify"
	WatchPoll    WatchMode = "poll"
	WatchOff     WatchMode = "off"
)

var WatchModes = []WatchMode{WatchAuto, WatchInotify, WatchPoll, WatchOff}

func ParseWatchMode(s string) (WatchMode, error) { return parseEnum("watch mode", s, WatchModes) }

// Video reports whether the library indexes video files.
func (m LibraryMedia) Video() bool { return m != LibraryComics }

type ImageFormat string

const (
	ImageJPEG ImageFormat = "jpeg"
	ImageWebP ImageFormat = "webp"
)

var ImageFormats = []ImageFormat{ImageJPEG, ImageWebP}

func ParseImageFormat(s string) (ImageFormat, error) {
	return parseEnum("image format", s, ImageFormats)
}

// Ext is the cache file extension of the format.
func (f ImageFormat) Ext() string {
	if f == ImageJPEG {
		return "jpg"
	}
	return "webp"
}

type CleanupStatus string

const (
	CleanupPending   CleanupStatus = "pending"
	CleanupRunning   CleanupStatus = "running"
	CleanupCompleted CleanupStatus = "completed"
	CleanupFailed    CleanupStatus = "failed"
)

var CleanupStatuses = []CleanupStatus{CleanupPending, CleanupRunning, CleanupCompleted, CleanupFailed}

func ParseCleanupStatus(s string) (CleanupStatus, error) {
	return parseEnum("cleanup status", s, CleanupStatuses)
}

type CheckpointMode string

const (
	CheckpointPassive  CheckpointMode = "passive"
	CheckpointRestart  CheckpointMode = "restart"
	CheckpointTruncate CheckpointMode = "truncate"
)

var CheckpointModes = []CheckpointMode{CheckpointPassive, CheckpointRestart, CheckpointTruncate}

func ParseCheckpointMode(s string) (CheckpointMode, error) {
	return parseEnum("checkpoint mode", s, CheckpointModes)
}

type WALStatus string

const (
	WALPending   WALStatus = "pending"
	WALRunning   WALStatus = "running"
	WALRetryable WALStatus = "retryable"
	WALCompleted WALStatus = "completed"
	WALFailed    WALStatus = "failed"
)

var WALStatuses = []WALStatus{WALPending, WALRunning, WALRetryable, WALCompleted, WALFailed}

func ParseWALStatus(s string) (WALStatus, error) { return parseEnum("wal status", s, WALStatuses) }

// FileRole is library_files.role (Bindery): what a row is to the library.
type FileRole string

const (
	// RoleBook is a file that is a book: an archive or a loose image.
	RoleBook FileRole = "book"
	// RoleFolder is a folder of page images that is one book; its
	// relative_path ends in '/'. It is never hashed.
	RoleFolder FileRole = "folder"
	// RolePage is an image inside a folder book: hashed, never a book.
	RolePage FileRole = "page"
	// RoleSidecar is series cover art (cover, folder, poster or series.*)
	// beside archives: hashed, never a book.
	RoleSidecar FileRole = "sidecar"
)

var FileRoles = []FileRole{RoleBook, RoleFolder, RolePage, RoleSidecar}

func ParseFileRole(s string) (FileRole, error) { return parseEnum("file role", s, FileRoles) }

// IsBook reports whether rows of this role are books of a series.
func (r FileRole) IsBook() bool { return r == RoleBook || r == RoleFolder }

type MetadataSource string

const (
	MetaComicInfo MetadataSource = "comicinfo"
	MetaFolder    MetadataSource = "folder"
	MetaFilename  MetadataSource = "filename"
)

var MetadataSources = []MetadataSource{MetaComicInfo, MetaFolder, MetaFilename}

// Manga is ComicInfo's <Manga>: file_metadata.manga (NULL: unknown).
type Manga string

const (
	MangaNo          Manga = "no"
	MangaYes         Manga = "yes"
	MangaRightToLeft Manga = "yes_rtl" // ComicInfo YesAndRightToLeft
)

var Mangas = []Manga{MangaNo, MangaYes, MangaRightToLeft}

// RightToLeft reports whether pages are read right to left.
func (m Manga) RightToLeft() bool { return m == MangaRightToLeft }
