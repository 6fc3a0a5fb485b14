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

func intDef(key string, def, lo, hi int64, desc string) Definition {
	return Definition{Key: key, Default: strconv.FormatInt(def, 10), Description: desc, Kind: "int", Min: lo, Max: hi}
}

func enumDef(key, def, desc string, values ...string) Definition {
	return Definition{Key: key, Default: def, Description: desc, Kind: "enum", Enum: values}
}

// DefaultExtensions are the file types a scan picks up.
const DefaultExtensions = ".cbz,.zip,.cbr,.rar,.cb7,.7z,.jpg,.jpeg,.png,.webp,.gif,.avif"

var definitions = []Definition{
	intDef("scan.max_workers", 0, 0, 64, "Parallel archive analyses and small-file hashes; 0 = number of CPUs."),
	enumDef("scan.hash.mode", "full", "full: hash files (duplicates, move detection); off: never hash.", "full", "off"),
	enumDef("hash.algorithm", "blake3", "Content hash algorithm; changing it rehashes lazily.", "blake3", "sha256"),
	intDef("hash.io_depth", 16, 1, 256, "Small files a hash job reads at once, ahead of the hash workers; lower it for a single spinning disk."),
	intDef("scan.cancel_check.interval_ms", 500, 50, 60000, "How often a running job checks for a cancel request, in ms."),
	enumDef("scan.cover.mode", "scan", "scan: render covers for new/changed files; off: never automatically.", "scan", "off"),
	enumDef("scan.cover.regenerate_missing", "0", "1: a scan also renders covers for unchanged files that have none.", "0", "1"),
	intDef("scan.cover.width", 320, 16, 4096, "Cover width in pixels (aspect ratio kept)."),
	intDef("scan.cover.target_kb", 48, 1, 4096, "Byte budget of one cover, in KiB."),
	intDef("scan.cover.quality_start", 85, 1, 100, "First encoder quality tried."),
	intDef("scan.cover.quality_min", 40, 1, 100, "Lowest encoder quality tried before giving up on the budget."),
	intDef("scan.cover.quality_step", 10, 1, 99, "Quality decrement between attempts."),
	enumDef("scan.cover.format", "webp", "Cover image format.", "webp", "jpeg"),
	intDef("cover.cache.shard_count", 256, 1, 65536, "Cover cache folders (file_id mod shard_count); changing it rebuilds the cache."),
	intDef("thumbnail.queue.capacity", 10000, 1, 10000000, "Most pending+running thumbnail rows; admission beyond is refused."),
	intDef("thumbnail.max_source_mb", 64, 1, 4096, "Largest page read to render a cover, in MiB."),
	intDef("jobs.max_attempts", 5, 1, 100, "Attempts of a scan/hash job before it fails for good."),
	intDef("jobs.retention_hours", 24, 1, 87600, "How long finished jobs are kept (failed ones 7 days at least)."),
	intDef("wal.checkpoint.interval_minutes", 10, 0, 10080, "Period of the passive WAL checkpoint; 0 = never."),
	intDef("wal.checkpoint.truncate_threshold_mb", 256, 1, 1048576, "WAL size that triggers a truncate checkpoint, in MiB."),
	intDef("wal.checkpoint.min_interval_seconds", 30, 0, 86400, "Least time between two requested checkpoints (force overrides)."),
	intDef("wal.checkpoint.max_retries", 5, 0, 1000, "Busy retries of a checkpoint before it fails."),
	{Key: "scan.extensions", Default: DefaultExtensions, Kind: "list",
		Description: "Comma-separated file extensions a scan indexes."},
	intDef("io.hash_rate_limit_mb_s", 0, 0, 100000, "Global hashing read budget shared by all workers, MB/s; 0 = unlimited."),
	intDef("io.thumbnail_rate_limit_mb_s", 0, 0, 100000, "Global cover source read budget, MB/s; 0 = unlimited."),
	intDef("cleanup.missing_after_hours", 168, 1, 87600, "Covers of files missing this long are cleaned up."),
	intDef("scan.missing.purge_after_days", 30, 0, 3650, "A scan deletes the rows of files missing this many days, once their covers are cleaned up; 0 keeps them."),
}

var byKey = func() map[string]Definition {
	m := make(map[string]Definition, len(definitions))
	for _, d := range definitions {
		m[d.Key] = d
	}
	return m
}()

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

// Int reads an int setting; unknown keys read as 0.
func (v Values) Int(key string) int64 {
	n, _ := strconv.ParseInt(v[key], 10, 64)
	return n
}

// String reads a setting as text.
func (v Values) String(key string) string { return v[key] }

// Bool reads a 0/1 setting.
func (v Values) Bool(key string) bool { return v[key] == "1" }

// Workers reads scan.max_workers with 0 meaning the number of CPUs.
func (v Values) Workers() int {
	if n := v.Int("scan.max_workers"); n > 0 {
		return int(n)
	}
	return runtime.NumCPU()
}

// Extensions reads scan.extensions as a set of lowercase ".ext" strings.
func (v Values) Extensions() map[string]bool {
	out := map[string]bool{}
	for _, e := range strings.Split(v["scan.extensions"], ",") {
		if e != "" {
			out[e] = true
		}
	}
	return out
}
