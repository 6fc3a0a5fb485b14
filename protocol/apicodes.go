package protocol

// Codes of the admin API's errors (the "code" of an error reply), one home
// for every package that makes them: the store's refusals, the plan
// policy's, the handlers' own. The API's table of codes
// (internal/api/internal/httpx) gives each its HTTP status and meaning,
// and docs/openapi.yaml and docs/OPERATIONS.md §9 list the same codes
// (httpx's TestErrorCodesDocumented). The error_code values written to
// rows are errors.go's.
const (
	// The request.
	CodeInvalidJSON          = "invalid_json"
	CodeUnknownField         = "unknown_field"
	CodeInvalidField         = "invalid_field"
	CodeInvalidParameter     = "invalid_parameter"
	CodeInvalidLimit         = "invalid_limit"
	CodeInvalidCursor        = "invalid_cursor"
	CodeInvalidQuery         = "invalid_query"
	CodeInvalidGroupKey      = "invalid_group_key"
	CodeInvalidPath          = "invalid_path"
	CodePathOutsideRoot      = "path_outside_library_root"
	CodePathNotFound         = "path_not_found"
	CodePathNotDirectory     = "path_not_directory"
	CodeUnknownSetting       = "unknown_setting"
	CodeInvalidSettingValue  = "invalid_setting_value"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeBodyTooLarge         = "body_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeBadRequest           = "bad_request"

	// Who asks.
	CodeUnauthorized = "unauthorized"
	CodeBadSignature = "bad_signature"
	CodeURLExpired   = "url_expired"

	// What is asked for.
	CodeNotFound           = "not_found"
	CodeSettingNotFound    = "setting_not_found"
	CodeCheckpointNotFound = "checkpoint_not_found"
	CodeFileNotFound       = "file_not_found"
	CodeJobNotFound        = "job_not_found"
	CodeLibraryNotFound    = "library_not_found"
	CodeScanNotFound       = "scan_not_found"
	CodeSeriesNotFound     = "series_not_found"
	CodeThumbnailNotFound  = "thumbnail_not_found"
	// CodeCoverNotReady: a cover was asked for that was never rendered (or
	// whose file has no ready thumbnail row).
	CodeCoverNotReady = "cover_not_ready"
	CodePlanNotFound  = "plan_not_found"
	CodeGroupNotFound = "group_not_found"

	// The state of what is asked for.
	CodeConflict      = "conflict"
	CodeJobTerminal   = "job_terminal"
	CodeLibraryExists = "library_exists"
	CodeLibraryBusy   = "library_busy"
	CodeNoWAL         = "checkpoint_not_applicable"
	// CodePlanInvalid: a plan names a file outside its group, a keeper that
	// is also to be removed, a member that is not a book, or a group without
	// a keeper; or it no longer describes the library it was made for (the
	// library was deleted, moved, or its id names another folder).
	CodePlanInvalid = "plan_invalid"
	// CodeGroupReportOnly: a plan names a kind of same-book group that is
	// a report only (contains, same_pages_by_index): only same_pages
	// groups, and byte groups, are resolved (issue 38).
	CodeGroupReportOnly = "group_report_only"
	// CodeFilesBusy: a plan names a file that another plan's unfinished
	// delete job has claimed (protocol §4.2.1).
	CodeFilesBusy       = "files_busy"
	CodePlanTooLarge    = "plan_too_large"
	CodePlanExpired     = "plan_expired"
	CodeLibraryReadOnly = "library_read_only"
	CodeUnlinkForbidden = "unlink_not_allowed"
	// CodeNotInTrash: a restore names a file its delete job did not trash,
	// or the job trashed nothing.
	CodeNotInTrash = "not_in_trash"

	// Reading books (internal/reader).
	CodePageNotFound    = "page_not_found"
	CodeMediaMissing    = "media_missing"
	CodeNotABook        = "not_a_book"
	CodeNotDownloadable = "not_downloadable"
	CodeMediaUnreadable = "media_unreadable"
	CodeMediaTooLarge   = "media_too_large"

	// Reader accounts (internal/api/readers/auth.go).
	CodeUserNotFound    = "user_not_found"
	CodeUserExists      = "user_exists"
	CodeAPIKeyNotFound  = "api_key_not_found"
	CodeTooManyAttempts = "too_many_attempts"
	CodeUserRequired    = "user_required"

	// Limits and the server.
	CodeQueueFull          = "queue_full"
	CodeThumbnailQueueFull = "thumbnail_queue_full"
	CodeCheckpointTooSoon  = "checkpoint_too_soon"
	CodeUnavailable        = "unavailable"
	CodeInternal           = "internal_error"
)
