package catalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/catalog"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/protocol"
)

// TestNaturalOrderPlans: the natural-order lists walk their indexes in
// order (no temp b-tree), with and without a cursor.
func TestNaturalOrderPlans(t *testing.T) {
	storetest.SkipOnPostgres(t, "reads SQLite's EXPLAIN QUERY PLAN")
	control, _, _ := storetest.MustOpenDB(t)
	lib := testfactory.Library(t, control, nil)
	ctx := context.Background()
	for _, after := range []*model.SortAnchor{nil, {Key: "batman", ID: 3}} {
		for _, libID := range []*int64{nil, &lib} {
			plan, err := catalog.New(control).ExplainListSeriesInOrder(ctx, libID, after)
			want := map[bool]string{false: "ix_series_sort_all", true: "ix_series_sort"}[libID != nil]
			if text := strings.NewReplacer("[", " ", "]", " ").Replace(fmt.Sprint(plan)); err != nil || !strings.Contains(text, "INDEX "+want+" ") || strings.Contains(text, "TEMP B-TREE") {
				t.Errorf("series, library %v, cursor %v: %v %v; want %s in order", libID != nil, after != nil, plan, err, want)
			}
		}
		plan, err := catalog.New(control).ExplainSeriesFilesInOrder(ctx, 7, after)
		if text := fmt.Sprint(plan); err != nil || !strings.Contains(text, "ix_library_files_series_sort") || strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("series files, cursor %v: %v %v", after != nil, plan, err)
		}
		for _, libID := range []*int64{nil, &lib} {
			// GET /files filters on the book roles by default.
			for _, roles := range [][]protocol.FileRole{nil, {protocol.RoleBook, protocol.RoleFolder}} {
				plan, err := catalog.New(control).ExplainFilesInOrder(ctx, catalog.FileFilter{LibraryID: libID, Roles: roles}, after)
				if text := fmt.Sprint(plan); err != nil || !strings.Contains(text, "ix_library_files_path_order") || strings.Contains(text, "TEMP B-TREE") {
					t.Errorf("files, library %v, roles %v, cursor %v: %v %v", libID != nil, roles, after != nil, plan, err)
				}
			}
		}
	}
}
