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
	// Each type with the columns it leaves out on purpose: the keys of the
	// row's parent, and secrets the store never reads back.
	for _, c := range []struct {
		table string
		row   any
		omits []string
	}{
		{string(model.LeaseJobs), model.Job{}, nil},
		{string(model.LeaseThumbnails), model.Thumbnail{}, nil},
		{string(model.LeaseCleanup), model.CleanupJob{}, nil},
		{string(model.LeaseWAL), model.WALJob{}, nil},
		{"libraries", model.Library{}, nil},
		{"file_metadata", model.FileMetadata{}, nil},
		{"video_probes", model.VideoProbe{}, nil},
		{"series", model.Series{}, nil},
		{"scan_sessions", model.Scan{}, nil},
		{"scan_errors", model.ScanError{}, []string{"id", "session_id", "created_at"}},
		{"scan_errors", model.ScanErrorEntry{}, nil},
		{"delete_plans", model.Plan{}, nil},
		{"delete_plan_files", model.PlanFile{}, []string{"plan_id"}},
		{"delete_outcomes", model.DeleteResult{}, nil},
		{"users", model.User{}, nil},
		{"api_keys", model.APIKey{}, []string{"key_hash"}},
		{"reading_progress", model.Progress{}, []string{"user_id"}},
	} {
		table, row := c.table, c.row
		rows, err := st.r.QueryContext(ctx, `SELECT * FROM `+table+` LIMIT 0`)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		fields := columns.TypeMap(reflect.TypeOf(row)).Names
		for _, col := range cols {
			if fields[col] == nil && !slices.Contains(c.omits, col) {
				t.Errorf("%s.%s has no field in %T", table, col, row)
			}
		}
		for name, fi := range fields {
			if len(fi.Children) == 0 && !slices.Contains(cols, name) {
				t.Errorf("%T field %s (%s) is not a column of %s", row, fi.Name, name, table)
			}
		}
	}
}
