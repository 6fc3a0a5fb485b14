package protocol

// WritePath names one of workerd's write paths of protocol §7.
type WritePath string

const (
	PathClaim     WritePath = "claim"
	PathHeartbeat WritePath = "heartbeat"
	PathFinish    WritePath = "finish"     // any terminal state
	PathSucceed   WritePath = "succeed"    // thumbnails/wal success
	PathFail      WritePath = "fail"       // thumbnails/wal failure
	PathRetry     WritePath = "retry"      // wal busy → retryable
	PathRecover   WritePath = "recover"    // stale lease → pending/retryable
	PathRelease   WritePath = "release"    // graceful shutdown hands a lease back
	PathReserve   WritePath = "reserve"    // io_rate_limits
	PathCleanup   WritePath = "cleanup"    // deleting finished thumbnail rows
	PathOwnedData WritePath = "owned_data" // tables the data plane owns outright
)

// Whitelist maps table → path → the columns workerd may write on that path.
// It is protocol §7 extended for the data plane's needs: lease_epoch on
// every claim (the fencing token of that claim), total_items on the jobs heartbeat and result on the jobs finish (scan/hash counts),
// deleted_files/deleted_rows on the cleanup finish, and release/recover
// paths that clear exactly the lease-binding fields.
var Whitelist = map[string]map[WritePath][]string{
	"jobs": {
		PathClaim:     {"status", "worker_id", "worker_heartbeat_at", "lease_expires_at", "started_at", "updated_at", "lease_epoch"},
		PathHeartbeat: {"processed_items", "total_items", "progress", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathFinish:    {"status", "progress", "result", "error_code", "error_message", "finished_at", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathRecover:   {"status", "worker_id", "worker_heartbeat_at", "lease_expires_at", "error_code", "error_message", "updated_at"},
		PathRelease:   {"status", "worker_id", "worker_heartbeat_at", "lease_expires_at", "error_code", "error_message", "updated_at"},
	},
	"thumbnails": {
		PathClaim:     {"status", "worker_id", "worker_heartbeat_at", "lease_expires_at", "started_at", "updated_at", "lease_epoch"},
		PathHeartbeat: {"worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathSucceed:   {"status", "width", "height", "bytes_size", "cover_hash", "error_code", "error_message", "error_count", "retry_after", "finished_at", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathFail:      {"status", "error_code", "error_message", "error_count", "retry_after", "finished_at", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathRecover:   {"status", "recovered_count", "error_code", "error_message", "finished_at", "worker_id", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathRelease:   {"status", "worker_id", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathCleanup:   {"*delete"},
	},
	"thumbnail_cleanup_jobs": {
		PathClaim:     {"status", "worker_id", "worker_heartbeat_at", "lease_expires_at", "finished_at", "updated_at", "lease_epoch"},
		PathHeartbeat: {"worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathFinish:    {"status", "deleted_files", "deleted_rows", "error_code", "error_message", "finished_at", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathRecover:   {"status", "recovered_count", "error_code", "error_message", "finished_at", "worker_id", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathRelease:   {"status", "worker_id", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
	},
	"wal_maintenance_jobs": {
		PathClaim:     {"status", "worker_id", "worker_heartbeat_at", "lease_expires_at", "started_at", "updated_at", "finished_at", "lease_epoch"},
		PathHeartbeat: {"worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathRecover:   {"status", "retry_count", "retry_after", "worker_id", "worker_heartbeat_at", "lease_expires_at", "error_code", "error_message", "finished_at", "updated_at"},
		PathSucceed:   {"status", "checkpoint_busy", "checkpoint_log_frames", "checkpointed_frames", "error_code", "error_message", "finished_at", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathRetry:     {"status", "retry_count", "retry_after", "checkpoint_busy", "checkpoint_log_frames", "checkpointed_frames", "error_code", "error_message", "finished_at", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathFail:      {"status", "error_code", "error_message", "finished_at", "worker_heartbeat_at", "lease_expires_at", "updated_at"},
		PathRelease:   {"status", "retry_count", "retry_after", "worker_id", "worker_heartbeat_at", "lease_expires_at", "error_code", "error_message", "finished_at", "updated_at"},
	},
	"io_rate_limits": {
		PathReserve: {"*insert", "next_available_at_ms", "updated_at"},
	},
}

// DataPlaneTables are owned by workerd outright: it inserts, updates and
// deletes their rows (controld only reads them, apart from admission
// bookkeeping such as library_files.needs_cover).
var DataPlaneTables = []string{
	"library_files", "series", "scan_sessions", "scan_errors", "file_metadata", "workers", "duplicate_groups",
	"delete_outcomes", "delete_intents", "video_probes", "book_search", "page_digests",
}

// WritableColumns returns, for a table, the union of columns workerd may
// write on any path, whether it may insert rows, and whether it may delete
// them. ok is false for a table workerd may not write at all.
func WritableColumns(table string) (cols map[string]bool, insert, del, ok bool) {
	for _, t := range DataPlaneTables {
		if t == table {
			return nil, true, true, true
		}
	}
	paths, ok := Whitelist[table]
	if !ok {
		return nil, false, false, false
	}
	cols = map[string]bool{}
	for _, cs := range paths {
		for _, c := range cs {
			switch c {
			case "*insert":
				insert = true
			case "*delete":
				del = true
			default:
				cols[c] = true
			}
		}
	}
	return cols, insert, del, true
}
