package scan

import (
	"context"
	"sort"

	"github.com/bindery-nas/bindery/internal/layout"
	"github.com/bindery-nas/bindery/internal/store/scanning"
)

// seriesKey is a series identity: case-folded name and publisher.
type seriesKey struct{ name, publisher string }

func keyOf(f scanning.UnlinkedFile) seriesKey {
	return seriesKey{name: layout.IdentityKey(f.SeriesNameRaw), publisher: layout.IdentityKey(f.Publisher)}
}

// firstFile is the first file by relative path of one identity.
type firstFile struct {
	path   string
	series scanning.NewSeries
}

// createSeries is phase 4: the identities of every unlinked file are
// collected in relative_path order (so the first file by path gives a new
// series its name, publisher and year: "first file wins"), then created one
// after the other in name order. The unique index on the identity makes
// creation idempotent and race-free; existing series are left as they are.
// It returns the id of every identity a file has, for linking.
//
// A file without a publisher (no ComicInfo, or none given) adopts the
// publisher its name already has in the library, so that a folder where
// only some books carry ComicInfo.xml stays one series instead of splitting
// into "Batman" and "Batman (DC Comics)". When a name has several
// publishers, the smallest key wins, deterministically.
//
// Memory holds one entry per distinct series among unlinked files, never
// one per file.
func (r *run) createSeries(ctx context.Context) (map[seriesKey]int64, error) {
	firsts := map[seriesKey]firstFile{}
	publishers, err := r.sc.SeriesPublishers(ctx, r.libID)
	if err != nil {
		return nil, err
	}
	after := ""
	for {
		files, err := r.sc.UnlinkedFiles(ctx, r.libID, after, r.cfg.BatchSize)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			break
		}
		after = files[len(files)-1].RelativePath
		for _, f := range files {
			k := keyOf(f)
			if _, ok := firsts[k]; !ok {
				firsts[k] = firstFile{path: f.RelativePath, series: scanning.NewSeries{Name: layout.CleanName(f.SeriesNameRaw),
					NameKey: k.name, Publisher: layout.CleanName(f.Publisher), PublisherKey: k.publisher, Year: f.Year}}
			}
			if p, ok := publishers[k.name]; k.publisher != "" && (!ok || k.publisher < p.PublisherKey) {
				publishers[k.name] = scanning.SeriesPublisher{Publisher: layout.CleanName(f.Publisher), PublisherKey: k.publisher}
			}
		}
	}
	resolved, wanted := adoptPublishers(firsts, publishers)
	ids := make(map[seriesKey]int64, len(firsts))
	for start := 0; start < len(wanted); start += r.cfg.BatchSize {
		chunk := wanted[start:min(start+r.cfg.BatchSize, len(wanted))]
		got, created, err := r.sc.EnsureSeries(ctx, r.fence, r.libID, chunk)
		if err != nil {
			return nil, err
		}
		for i, ns := range chunk {
			ids[seriesKey{ns.NameKey, ns.PublisherKey}] = got[i]
		}
		r.counts.SeriesCreated += created
	}
	for raw, k := range resolved {
		ids[raw] = ids[k]
	}
	return ids, nil
}

// adoptPublishers maps every collected identity to the identity its files
// join, and returns the series to ensure in name order, each described by
// the first file (by path) of all the files that join it.
func adoptPublishers(firsts map[seriesKey]firstFile, publishers map[string]scanning.SeriesPublisher) (map[seriesKey]seriesKey, []scanning.NewSeries) {
	resolved := make(map[seriesKey]seriesKey, len(firsts))
	merged := map[seriesKey]firstFile{}
	for raw, f := range firsts {
		k := raw
		if p, ok := publishers[raw.name]; raw.publisher == "" && ok {
			k.publisher = p.PublisherKey
			f.series.Publisher, f.series.PublisherKey = p.Publisher, p.PublisherKey
		}
		resolved[raw] = k
		if cur, ok := merged[k]; !ok || f.path < cur.path {
			merged[k] = f
		}
	}
	keys := make([]seriesKey, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].name != keys[j].name {
			return keys[i].name < keys[j].name
		}
		return keys[i].publisher < keys[j].publisher
	})
	out := make([]scanning.NewSeries, len(keys))
	for i, k := range keys {
		out[i] = merged[k].series
	}
	return resolved, out
}

// linkSeries is phase 5: unlinked files are put in their series a batch at
// a time, then the series counts are refreshed and series left without any
// file are removed.
func (r *run) linkSeries(ctx context.Context, ids map[seriesKey]int64) error {
	after := ""
	for {
		files, err := r.sc.UnlinkedFiles(ctx, r.libID, after, r.cfg.BatchSize)
		if err != nil {
			return err
		}
		if len(files) == 0 {
			break
		}
		after = files[len(files)-1].RelativePath
		links := make([]scanning.FileLink, 0, len(files))
		for _, f := range files {
			if id, ok := ids[keyOf(f)]; ok {
				links = append(links, scanning.FileLink{FileID: f.ID, SeriesID: id})
			}
		}
		if err := r.sc.LinkFiles(ctx, r.fence, links); err != nil {
			return err
		}
	}
	if err := r.sc.RefreshSeriesCounts(ctx, r.fence, r.libID); err != nil {
		return err
	}
	_, err := r.sc.RemoveEmptySeries(ctx, r.fence, r.libID)
	return err
}
