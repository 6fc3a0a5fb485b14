package scan

import (
	"context"
	"sort"

	"github.com/bindery-nas/bindery/internal/store"
)

// seriesKey is a series identity: case-folded name and publisher.
type seriesKey struct{ name, publisher string }

func keyOf(f store.UnlinkedFile) seriesKey {
	return seriesKey{name: identityKey(f.SeriesNameRaw), publisher: identityKey(f.Publisher)}
}

// createSeries is phase 4: the identities of every unlinked file are
// collected in relative_path order (so the first file by path gives a new
// series its name, publisher and year: "first file wins"), then created one
// after the other in name order. The unique index on the identity makes
// creation idempotent and race-free; existing series are left as they are.
// It returns the id of every identity, for linking.
//
// Memory holds one entry per distinct series among unlinked files, never
// one per file.
func (r *run) createSeries(ctx context.Context) (map[seriesKey]int64, error) {
	firsts := map[seriesKey]store.NewSeries{}
	after := ""
	for {
		files, err := r.st.UnlinkedFiles(ctx, r.libID, after, r.cfg.BatchSize)
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
				firsts[k] = store.NewSeries{Name: cleanName(f.SeriesNameRaw), NameKey: k.name,
					Publisher: cleanName(f.Publisher), PublisherKey: k.publisher, Year: f.Year}
			}
		}
	}
	keys := make([]seriesKey, 0, len(firsts))
	for k := range firsts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].name != keys[j].name {
			return keys[i].name < keys[j].name
		}
		return keys[i].publisher < keys[j].publisher
	})
	ids := make(map[seriesKey]int64, len(keys))
	for start := 0; start < len(keys); start += r.cfg.BatchSize {
		chunk := keys[start:min(start+r.cfg.BatchSize, len(keys))]
		in := make([]store.NewSeries, len(chunk))
		for i, k := range chunk {
			in[i] = firsts[k]
		}
		got, created, err := r.st.EnsureSeries(ctx, r.libID, in)
		if err != nil {
			return nil, err
		}
		for i, k := range chunk {
			ids[k] = got[i]
		}
		r.counts.SeriesCreated += created
	}
	return ids, nil
}

// linkSeries is phase 5: unlinked files are put in their series a batch at
// a time, then the series counts are refreshed and series left without any
// file are removed.
func (r *run) linkSeries(ctx context.Context, ids map[seriesKey]int64) error {
	after := ""
	for {
		files, err := r.st.UnlinkedFiles(ctx, r.libID, after, r.cfg.BatchSize)
		if err != nil {
			return err
		}
		if len(files) == 0 {
			break
		}
		after = files[len(files)-1].RelativePath
		links := make([]store.FileLink, 0, len(files))
		for _, f := range files {
			if id, ok := ids[keyOf(f)]; ok {
				links = append(links, store.FileLink{FileID: f.ID, SeriesID: id})
			}
		}
		if err := r.st.LinkFiles(ctx, links); err != nil {
			return err
		}
	}
	if err := r.st.RefreshSeriesCounts(ctx, r.libID); err != nil {
		return err
	}
	_, err := r.st.RemoveEmptySeries(ctx, r.libID)
	return err
}
