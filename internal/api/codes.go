package api

import (
	"net/http"

	"github.com/bindery-nas/bindery/internal/dedup"
	"github.com/bindery-nas/bindery/internal/store"
)

// API error codes of the handlers; the store's coded errors bring their
// own (store.Code*).
const (
	CodeInvalidJSON          = "invalid_json"
	CodeUnknownField         = "unknown_field"
	CodeInvalidField         = "invalid_field"
	CodeInvalidParameter     = "invalid_parameter"
	CodeInvalidLimit         = "invalid_limit"
	CodeInvalidCursor        = "invalid_cursor"
	CodeInvalidGroupKey      = "invalid_group_key"
	CodeInvalidPath          = "invalid_path"
	CodePathOutsideRoot      = "path_outside_library_root"
	CodePathNotFound         = "path_not_found"
	CodePathNotDirectory     = "path_not_directory"
	CodeUnknownSetting       = "unknown_setting"
	CodeInvalidSettingValue  = "invalid_setting_value"
	CodeUnauthorized         = "unauthorized"
	CodeBadSignature         = "bad_signature"
	CodeURLExpired           = "url_expired"
	CodeNotFound             = "not_found"
	CodeSettingNotFound      = "setting_not_found"
	CodeCheckpointNotFound   = "checkpoint_not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeBodyTooLarge         = "body_too_large"
	CodeConflict             = "conflict"
	CodeQueueFull            = "queue_full"
	CodeThumbnailQueueFull   = "thumbnail_queue_full"
	CodeCheckpointTooSoon    = "checkpoint_too_soon"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeUnavailable          = "unavailable"
	CodeBadRequest           = "bad_request"
	CodeInternal             = "internal_error"
)

// codeInfo is what one error code means to a client.
type codeInfo struct {
	Status  int
	Meaning string
}

// codes is every error code the admin API answers with: the one place
// where a code gets its HTTP status. docs/openapi.yaml's Error.code enum
// and the table in docs/OPERATIONS.md §9 list the same codes with the same
// statuses and meanings (TestErrorCodesDocumented).
var codes = map[string]codeInfo{
	CodeInvalidJSON:             {http.StatusBadRequest, "the body is not one JSON object"},
	CodeUnknownField:            {http.StatusBadRequest, "the body has a field the route does not take"},
	CodeInvalidField:            {http.StatusBadRequest, "a field of the body is missing or has a bad value (details.field names it)"},
	CodeInvalidParameter:        {http.StatusBadRequest, "a query parameter has a bad value (details.parameter names it)"},
	CodeInvalidLimit:            {http.StatusBadRequest, "limit is not an integer from 1 to 200"},
	CodeInvalidCursor:           {http.StatusBadRequest, "the cursor was not made by this list in this order"},
	CodeInvalidGroupKey:         {http.StatusBadRequest, "a duplicate group key is not <algorithm>:<64 lowercase hex>"},
	CodeInvalidPath:             {http.StatusBadRequest, "a library path is empty, relative or not clean"},
	CodePathOutsideRoot:         {http.StatusBadRequest, "a library path resolves outside the library roots"},
	CodePathNotFound:            {http.StatusBadRequest, "a library path does not exist"},
	CodePathNotDirectory:        {http.StatusBadRequest, "a library path is not a folder"},
	CodeUnknownSetting:          {http.StatusBadRequest, "a settings patch names a key that does not exist"},
	CodeInvalidSettingValue:     {http.StatusBadRequest, "a settings patch gives a value out of the key's range or set"},
	CodeUnauthorized:            {http.StatusUnauthorized, "the bearer token is missing or wrong"},
	CodeBadSignature:            {http.StatusForbidden, "a signed cover URL was altered"},
	CodeURLExpired:              {http.StatusForbidden, "a signed cover URL is past its expiry"},
	CodeNotFound:                {http.StatusNotFound, "no such route"},
	CodeSettingNotFound:         {http.StatusNotFound, "no setting has this key"},
	CodeCheckpointNotFound:      {http.StatusNotFound, "no WAL checkpoint was ever requested"},
	store.CodeFileNotFound:      {http.StatusNotFound, "no file has this id"},
	store.CodeJobNotFound:       {http.StatusNotFound, "no job has this id"},
	store.CodeLibraryNotFound:   {http.StatusNotFound, "no library has this id"},
	store.CodeScanNotFound:      {http.StatusNotFound, "no scan session has this id"},
	store.CodeSeriesNotFound:    {http.StatusNotFound, "no series has this id"},
	store.CodeThumbnailNotFound: {http.StatusNotFound, "no thumbnail row has this id"},
	store.CodeCoverNotReady:     {http.StatusNotFound, "the file has no rendered cover yet"},
	store.CodePlanNotFound:      {http.StatusNotFound, "no delete plan has this id"},
	store.CodeGroupNotFound:     {http.StatusNotFound, "a listed group key is no longer a duplicate group (fewer than two present copies)"},
	dedup.CodePlanInvalid:       {http.StatusBadRequest, "a plan names a file outside its group, removes its keeper or a part of a book, or lacks a keeper"},
	store.CodePlanTooLarge:      {http.StatusBadRequest, "the selection has more groups than one plan holds; narrow it by library or minimum size"},
	store.CodePlanExpired:       {http.StatusConflict, "the plan is older than delete.plan_ttl_hours; make a new one"},
	store.CodeLibraryReadOnly:   {http.StatusConflict, "a copy lies in a library without allow_delete"},
	store.CodeUnlinkForbidden:   {http.StatusConflict, "unlink was asked in a library without allow_unlink"},
	store.CodeNotInTrash:        {http.StatusBadRequest, "a restore names a file its delete job did not trash, or the job trashed nothing"},
	CodeBadRequest:              {http.StatusBadRequest, "the request is malformed in a way no other code names"},
	CodeMethodNotAllowed:        {http.StatusMethodNotAllowed, "the route does not take this method"},
	CodeConflict:                {http.StatusConflict, "the row's state forbids the change"},
	store.CodeJobTerminal:       {http.StatusConflict, "the job has already ended"},
	store.CodeLibraryExists:     {http.StatusConflict, "a library with this path exists"},
	store.CodeLibraryBusy:       {http.StatusConflict, "a scan or hash job of the library is active"},
	store.CodeNoWAL:             {http.StatusConflict, "the database is PostgreSQL, which checkpoints itself"},
	CodeBodyTooLarge:            {http.StatusRequestEntityTooLarge, "the body is larger than 1 MiB"},
	CodeUnsupportedMediaType:    {http.StatusUnsupportedMediaType, "the body is not application/json"},
	CodeQueueFull:               {http.StatusTooManyRequests, "the scan queue is at capacity"},
	CodeThumbnailQueueFull:      {http.StatusTooManyRequests, "the thumbnail queue is at capacity"},
	CodeCheckpointTooSoon:       {http.StatusTooManyRequests, "a WAL checkpoint was requested less than the minimum interval ago"},
	CodeInternal:                {http.StatusInternalServerError, "an unexpected error; the log says what"},
	CodeUnavailable:             {http.StatusServiceUnavailable, "the database cannot be reached or is shutting down"},
}

// known reports whether the table has code.
func known(code string) bool { _, ok := codes[code]; return ok }

// statusOf is code's HTTP status; a code missing from the table is a bug,
// answered as 500.
func statusOf(code string) (int, bool) {
	c, ok := codes[code]
	if !ok {
		return http.StatusInternalServerError, false
	}
	return c.Status, true
}
