// Package settings is the registry of Bindery's key/value settings: each
// key's default, description and validation. Values are stored as text in
// the settings table; a key that was never written takes its default, so a
// new release can add keys without a migration.
package settings

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// Definition describes one setting.
type Definition struct {
	Key         string
	Default     string
	Description string
	// Kind is "int", "enum" or "list", for clients that render forms.
	Kind string
	// Min and Max bound an int setting.
	Min, Max int64
	// Enum lists the legal values of an enum setting.
	Enum []string
}

// Validate normalizes and checks a value given as text.
func (d Definition) Validate(v string) (string, error) {
	v = strings.TrimSpace(v)
	switch d.Kind {
	case "int":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", fmt.Errorf("%s: want an integer, got %q", d.Key, v)
		}
		if n < d.Min || n > d.Max {
			return "", fmt.Errorf("%s: want %d to %d, got %d", d.Key, d.Min, d.Max, n)
		}
		return strconv.FormatInt(n, 10), nil
	case "enum":
		for _, e := range d.Enum {
			if v == e {
				return v, nil
			}
		}
		return "", fmt.Errorf("%s: want one of %s, got %q", d.Key, strings.Join(d.Enum, "|"), v)
	case "list":
		var out []string
		for _, part := range strings.Split(v, ",") {
			part = strings.ToLower(strings.TrimSpace(part))
			if part == "" {
				continue
			}
			if !strings.HasPrefix(part, ".") || len(part) < 2 || strings.ContainsAny(part, "/\\ \x00") {
				return "", fmt.Errorf("%s: %q is not a file extension like .cbz", d.Key, part)
			}
			out = append(out, part)
		}
		if len(out) == 0 {
			return "", fmt.Errorf("%s: want at least one extension", d.Key)
		}
		return strings.Join(out, ","), nil
	}
	return "", fmt.Errorf("%s: unknown kind %q", d.Key, d.Kind)
}

// IntKey, EnumKey, FlagKey and ListKey each name one setting of their kind.
// The only values are the exported variables below: a misspelt key does not
// compile, and an int setting cannot be read as an enum.
type (
	IntKey  struct{ key string }
	EnumKey struct{ key string }
	FlagKey struct{ key string }
	ListKey struct{ key string }
)

func (k IntKey) String() string  { return k.key }
func (k EnumKey) String() string { return k.key }
func (k FlagKey) String() string { return k.key }
func (k ListKey) String() string { return k.key }

// definitions is filled, in declaration order, by the define calls below.
var definitions []Definition

func define(d Definition) string {
	definitions = append(definitions, d)
	return d.Key
}

func defineInt(key string, def, lo, hi int64, desc string) IntKey {
	return IntKey{define(Definition{Key: key, Default: strconv.FormatInt(def, 10), Description: desc, Kind: "int", Min: lo, Max: hi})}
}

func defineEnum(key, def, desc string, values ...string) EnumKey {
	return EnumKey{define(Definition{Key: key, Default: def, Description: desc, Kind: "enum", Enum: values})}
}

// defineFlag is an enum of "0" and "1".
func defineFlag(key string, def bool, desc string) FlagKey {
	d := "0"
	if def {
		d = "1"
	}
	return FlagKey{define(Definition{Key: key, Default: d, Description: desc, Kind: "enum", Enum: []string{"0", "1"}})}
}

// DefaultExtensions are the file types a scan picks up.
// Video files among them are skipped in a library whose media is comics.
const DefaultExtensions = ".cbz,.zip,.cbr,.rar,.cb7,.7z,.jpg,.jpeg,.png,.webp,.gif,.avif,.tif,.tiff," +
	".mp4,.m4v,.mkv,.webm,.avi,.mov,.ts"

// The settings. GET /api/v1/settings lists them with these descriptions.
var (
	ScanMaxWorkers               = defineInt("scan.max_workers", 0, 0, 64, "Parallel archive analyses and small-file hashes; 0 = number of CPUs.")
	ScanHashMode                 = defineEnum("scan.hash.mode", "full", "full: hash files (duplicates, move detection); off: never hash.", "full", "off")
	HashAlgorithm                = defineEnum("hash.algorithm", "blake3", "Content hash algorithm; changing it rehashes lazily.", "blake3", "sha256")
	HashIODepth                  = defineInt("hash.io_depth", 16, 1, 256, "Small files a hash job reads at once, ahead of the hash workers; lower it for a single spinning disk.")
	SameBookCommonPagesMinSeries = defineInt("samebook.common_pages_min_series", 5, 2, 1000000, "A page digest found in books of this many series is a common page (credits, ads), ignored when books are compared.")
	SameBookCoverDistance        = defineInt("samebook.cover_distance", 6, 0, 16, "Two books whose cover hashes differ in at most this many of 64 bits are listed as similar covers (probably another scan of one issue).")
	SameBookContainsPages        = defineInt("samebook.contains_pages", 3, 0, 16, "Extra pages at the start or end (credit pages) with which a book still \"contains\" another; its page-signature candidates are digested.")
	ScanCancelCheckIntervalMS    = defineInt("scan.cancel_check.interval_ms", 500, 50, 60000, "How often a running job checks for a cancel request, in ms.")
	ScanCoverMode                = defineEnum("scan.cover.mode", "scan", "scan: render covers for new/changed files; off: never automatically.", "scan", "off")
	ScanCoverRegenerateMissing   = defineFlag("scan.cover.regenerate_missing", false, "1: a scan also renders covers for unchanged files that have none.")
	ScanCoverWidth               = defineInt("scan.cover.width", 320, 16, 4096, "Cover width in pixels (aspect ratio kept).")
	ScanCoverTargetKB            = defineInt("scan.cover.target_kb", 48, 1, 4096, "Byte budget of one cover, in KiB.")
	ScanCoverQualityStart        = defineInt("scan.cover.quality_start", 85, 1, 100, "First encoder quality tried.")
	ScanCoverQualityMin          = defineInt("scan.cover.quality_min", 40, 1, 100, "Lowest encoder quality tried before giving up on the budget.")
	ScanCoverQualityStep         = defineInt("scan.cover.quality_step", 10, 1, 99, "Quality decrement between attempts.")
	ScanCoverFormat              = defineEnum("scan.cover.format", "webp", "Cover image format.", "webp", "jpeg")
	CoverCacheShardCount         = defineInt("cover.cache.shard_count", 256, 1, 65536, "Cover cache folders (file_id mod shard_count); changing it rebuilds the cache.")
	ThumbnailQueueCapacity       = defineInt("thumbnail.queue.capacity", 10000, 1, 10000000, "Most pending+running thumbnail rows; admission beyond is refused.")
	ThumbnailRenderTimeoutSec    = defineInt("thumbnail.render_timeout_seconds", 600, 1, 86400, "A cover render running longer is cancelled (render_timeout); one that has not stopped two leases later ends workerd, for its supervisor to restart (a render stuck in a library; three make the cover render_crashed).")
	ThumbnailMaxSourceMB         = defineInt("thumbnail.max_source_mb", 64, 1, 4096, "Largest page read to render a cover, in MiB.")
	JobsMaxAttempts              = defineInt("jobs.max_attempts", 5, 1, 100, "Attempts of a scan/hash job before it fails for good.")
	JobsRetentionHours           = defineInt("jobs.retention_hours", 24, 1, 87600, "How long finished jobs are kept (failed ones 7 days at least).")
	WALCheckpointIntervalMin     = defineInt("wal.checkpoint.interval_minutes", 10, 0, 10080, "Period of the passive WAL checkpoint; 0 = never.")
	WALCheckpointTruncateMB      = defineInt("wal.checkpoint.truncate_threshold_mb", 256, 1, 1048576, "WAL size that triggers a truncate checkpoint, in MiB.")
	WALCheckpointMinIntervalSec  = defineInt("wal.checkpoint.min_interval_seconds", 30, 0, 86400, "Least time between two requested checkpoints (force overrides).")
	WALCheckpointMaxRetries      = defineInt("wal.checkpoint.max_retries", 5, 0, 1000, "Busy retries of a checkpoint before it fails.")
	ScanExtensions               = ListKey{define(Definition{Key: "scan.extensions", Default: DefaultExtensions, Kind: "list",
		Description: "Comma-separated file extensions a scan indexes."})}
	IOHashRateLimitMBs        = defineInt("io.hash_rate_limit_mb_s", 0, 0, 100000, "Global hashing read budget shared by all workers, MB/s; 0 = unlimited.")
	IOThumbnailRateLimitMBs   = defineInt("io.thumbnail_rate_limit_mb_s", 0, 0, 100000, "Global cover source read budget, MB/s; 0 = unlimited.")
	CleanupMissingAfterHours  = defineInt("cleanup.missing_after_hours", 168, 1, 87600, "Covers of files missing this long are cleaned up.")
	WatchSettleMS             = defineInt("watch.settle_ms", 2000, 100, 600000, "The watcher requests a scan of a changed folder once its files' sizes and mtimes held still this long, in ms.")
	WatchPollIntervalSeconds  = defineInt("watch.poll_interval_seconds", 30, 1, 86400, "How often a polled library's folder mtimes are read, in seconds.")
	ScanMissingPurgeAfterDays = defineInt("scan.missing.purge_after_days", 30, 0, 3650, "A scan deletes the rows of files missing this many days, once their covers are cleaned up; 0 keeps them.")
	TrashRetentionDays        = defineInt("trash.retention_days", 30, 0, 3650, "Days a delete job's trash is kept before it is purged for good; 0 keeps it.")
	VideoTimeoutSeconds       = defineInt("video.timeout_seconds", 30, 1, 3600, "Wall-clock limit of one ffprobe or ffmpeg run on a video file, in seconds; past it the file is video_timeout.")
	VideoMemoryLimitMB        = defineInt("video.memory_limit_mb", 2048, 0, 1048576, "Address-space limit of one ffprobe or ffmpeg run, in MiB; 0 = none.")
	ReaderWideRatioPercent    = defineInt("ui.reader.wide_ratio_threshold", 100, 50, 1000, "A page is wide (a spread) when its width is more than its height × this / 100.")
	ReaderPageCacheMB         = defineInt("reader.page_cache_mb", 512, 0, 1048576, "Byte budget of the cache of pages shrunk to a reader's ?width=, in MiB; 0 = no cache.")
	DeletePlanTTLHours        = defineInt("delete.plan_ttl_hours", 24, 1, 8760, "How long a duplicate-resolution plan can be executed after it was made.")
)

// byKey is built in init, after every define call has run.
var byKey map[string]Definition

func init() {
	byKey = make(map[string]Definition, len(definitions))
	for _, d := range definitions {
		byKey[d.Key] = d
	}
}

// Definitions returns every setting in key order.
func Definitions() []Definition {
	out := append([]Definition(nil), definitions...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Lookup returns the definition of key.
func Lookup(key string) (Definition, bool) {
	d, ok := byKey[key]
	return d, ok
}

// ErrUnknown is returned for a key that is not in the registry.
var ErrUnknown = errors.New("unknown setting")

// InvalidError names the key whose value was refused.
type InvalidError struct {
	Key string
	Err error
}

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// Normalize validates a whole change set before anything is written: an
// unknown key or a bad value fails the set.
func Normalize(kv map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(kv))
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d, ok := byKey[k]
		if !ok {
			return nil, &InvalidError{Key: k, Err: fmt.Errorf("%w: %s", ErrUnknown, k)}
		}
		v, err := d.Validate(kv[k])
		if err != nil {
			return nil, &InvalidError{Key: k, Err: err}
		}
		out[k] = v
	}
	return out, nil
}

// Source is where stored values come from (the store).
type Source interface {
	Settings(ctx context.Context) (map[string]string, error)
}

// Values is a snapshot of every setting, defaults merged in.
type Values map[string]string

// Load reads the stored settings and merges the defaults. A stored value
// that no longer validates (written by hand) falls back to the default.
func Load(ctx context.Context, src Source) (Values, error) {
	stored, err := src.Settings(ctx)
	if err != nil {
		return nil, err
	}
	v := make(Values, len(definitions))
	for _, d := range definitions {
		v[d.Key] = d.Default
		if raw, ok := stored[d.Key]; ok {
			if norm, err := d.Validate(raw); err == nil {
				v[d.Key] = norm
			}
		}
	}
	return v, nil
}

// Defaults is a snapshot with every default.
func Defaults() Values {
	v := make(Values, len(definitions))
	for _, d := range definitions {
		v[d.Key] = d.Default
	}
	return v
}

// get reads key; a snapshot lacking it (one built by hand) is a bug.
func (v Values) get(key string) string {
	s, ok := v[key]
	if !ok {
		panic("settings: " + key + " is not in this snapshot (use Load or Defaults)")
	}
	return s
}

// Int reads an int setting.
func (v Values) Int(k IntKey) int64 {
	n, _ := strconv.ParseInt(v.get(k.key), 10, 64)
	return n
}

// Enum reads an enum setting.
func (v Values) Enum(k EnumKey) string { return v.get(k.key) }

// Flag reads a 0/1 setting.
func (v Values) Flag(k FlagKey) bool { return v.get(k.key) == "1" }

// Text reads any setting as its stored text, for listing them all.
func (v Values) Text(d Definition) string { return v.get(d.Key) }

// Workers reads scan.max_workers with 0 meaning the number of CPUs.
func (v Values) Workers() int {
	if n := v.Int(ScanMaxWorkers); n > 0 {
		return int(n)
	}
	return runtime.NumCPU()
}

// Extensions reads scan.extensions as a set of lowercase ".ext" strings.
func (v Values) Extensions() map[string]bool {
	out := map[string]bool{}
	for _, e := range strings.Split(v.get(ScanExtensions.key), ",") {
		if e != "" {
			out[e] = true
		}
	}
	return out
}
