package store

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/bindery-nas/bindery/internal/model"
)

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"ID": "id", "LibraryID": "library_id", "MtimeNS": "mtime_ns", "OutputRelpath": "output_relpath",
		"WorkerHeartbeatAt": "worker_heartbeat_at", "CheckpointLogFrames": "checkpoint_log_frames", "Payload": "payload",
	} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestModelFieldsAreColumns holds the model's untagged fields to the
// schema: each maps to a column of its table, and each column of the table
// has a field, so a row read into a model type loses nothing.
func TestModelFieldsAreColumns(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "bindery.db")
	if err := Migrate(ctx, path); err != nil {
		t.Fatal(err)
	}
	st, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for table, row := range map[model.LeaseTable]any{
		model.LeaseJobs: model.Job{}, model.LeaseThumbnails: model.Thumbnail{},
		model.LeaseCleanup: model.CleanupJob{}, model.LeaseWAL: model.WALJob{},
	} {
		rows, err := st.r.QueryContext(ctx, `SELECT * FROM `+string(table)+` LIMIT 0`)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		fields := columns.TypeMap(reflect.TypeOf(row)).Names
		for _, c := range cols {
			if fields[c] == nil {
				t.Errorf("%s.%s has no field in %T", table, c, row)
			}
		}
		for name, fi := range fields {
			if len(fi.Children) == 0 && !slices.Contains(cols, name) {
				t.Errorf("%T field %s (%s) is not a column of %s", row, fi.Name, name, table)
			}
		}
	}
}
