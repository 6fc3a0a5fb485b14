package httpx

import (
	"net/http"

	"github.com/bindery-nas/bindery/protocol"
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
	protocol.CodeInvalidJSON:          {http.StatusBadRequest, "the body is not one JSON object"},
	protocol.CodeUnknownField:         {http.StatusBadRequest, "the body has a field the route does not take"},
	protocol.CodeInvalidField:         {http.StatusBadRequest, "a field of the body is missing or has a bad value (details.field names it)"},
	protocol.CodeInvalidParameter:     {http.StatusBadRequest, "a query parameter has a bad value (details.parameter names it)"},
	protocol.CodeInvalidLimit:         {http.StatusBadRequest, "limit is not an integer from 1 to 200"},
	protocol.CodeInvalidQuery:         {http.StatusBadRequest, "a search's q is empty, too long, not UTF-8 or has no words"},
	protocol.CodeInvalidCursor:        {http.StatusBadRequest, "the cursor was not made by this list in this order"},
	protocol.CodeInvalidGroupKey:      {http.StatusBadRequest, "a duplicate group key is not <algorithm>:<64 lowercase hex> (a same_pages key: 64 lowercase hex)"},
	protocol.CodeInvalidPath:          {http.StatusBadRequest, "a library path is empty, relative or not clean"},
	protocol.CodePathOutsideRoot:      {http.StatusBadRequest, "a library path resolves outside the library roots"},
	protocol.CodePathNotFound:         {http.StatusBadRequest, "a library path does not exist"},
	protocol.CodePathNotDirectory:     {http.StatusBadRequest, "a library path is not a folder"},
	protocol.CodeUnknownSetting:       {http.StatusBadRequest, "a settings patch names a key that does not exist"},
	protocol.CodeInvalidSettingValue:  {http.StatusBadRequest, "a settings patch gives a value out of the key's range or set"},
	protocol.CodeUnauthorized:         {http.StatusUnauthorized, "the bearer token is missing or wrong"},
	protocol.CodeBadSignature:         {http.StatusForbidden, "a signed cover URL was altered"},
	protocol.CodeURLExpired:           {http.StatusForbidden, "a signed cover URL is past its expiry"},
	protocol.CodeNotFound:             {http.StatusNotFound, "no such route"},
	protocol.CodeSettingNotFound:      {http.StatusNotFound, "no setting has this key"},
	protocol.CodeCheckpointNotFound:   {http.StatusNotFound, "no WAL checkpoint was ever requested"},
	protocol.CodeFileNotFound:         {http.StatusNotFound, "no file has this id"},
	protocol.CodeJobNotFound:          {http.StatusNotFound, "no job has this id"},
	protocol.CodeLibraryNotFound:      {http.StatusNotFound, "no library has this id"},
	protocol.CodeScanNotFound:         {http.StatusNotFound, "no scan session has this id"},
	protocol.CodeSeriesNotFound:       {http.StatusNotFound, "no series has this id"},
	protocol.CodeThumbnailNotFound:    {http.StatusNotFound, "no thumbnail row has this id"},
	protocol.CodeCoverNotReady:        {http.StatusNotFound, "the file has no rendered cover yet"},
	protocol.CodePlanNotFound:         {http.StatusNotFound, "no delete plan has this id"},
	protocol.CodeGroupNotFound:        {http.StatusNotFound, "a listed group key is no longer a duplicate group (fewer than two present copies)"},
	protocol.CodePlanInvalid:          {http.StatusBadRequest, "a plan names a file outside its group, removes its keeper or a part of a book, or lacks a keeper; or its library was deleted or moved since it was made"},
	protocol.CodeGroupReportOnly:      {http.StatusBadRequest, "a plan names contains or same_pages_by_index groups, which are reported, never resolved: only same_pages groups (and byte groups) are"},
	protocol.CodeFilesBusy:            {http.StatusConflict, "a file of the plan is claimed by another plan's unfinished delete job"},
	protocol.CodePlanTooLarge:         {http.StatusBadRequest, "the selection has more groups than one plan holds; narrow it by library or minimum size"},
	protocol.CodePlanExpired:          {http.StatusConflict, "the plan is older than delete.plan_ttl_hours; make a new one"},
	protocol.CodeLibraryReadOnly:      {http.StatusConflict, "a copy lies in a library without allow_delete"},
	protocol.CodeUnlinkForbidden:      {http.StatusConflict, "unlink was asked in a library without allow_unlink"},
	protocol.CodeNotInTrash:           {http.StatusBadRequest, "a restore names a file its delete job did not trash, or the job trashed nothing"},
	protocol.CodePageNotFound:         {http.StatusNotFound, "the book has fewer pages than the page number asked (details.count says how many)"},
	protocol.CodeMediaMissing:         {http.StatusNotFound, "the file is missing from its library on disk"},
	protocol.CodeNotABook:             {http.StatusConflict, "the file is not a book with pages (a video, a page of a folder book or series art)"},
	protocol.CodeNotDownloadable:      {http.StatusConflict, "the file is a folder book, which is no one file to download"},
	protocol.CodeMediaUnreadable:      {http.StatusUnprocessableEntity, "the archive or page cannot be read: corrupt, encrypted, incomplete or in an unsupported compression (details.cause names it)"},
	protocol.CodeMediaTooLarge:        {http.StatusUnprocessableEntity, "the page is over thumbnail.max_source_mb or the decoder's pixel limit"},
	protocol.CodeUserNotFound:         {http.StatusNotFound, "no user has this id"},
	protocol.CodeUserExists:           {http.StatusConflict, "a user with this name exists"},
	protocol.CodeAPIKeyNotFound:       {http.StatusNotFound, "the user has no API key with this id"},
	protocol.CodeTooManyAttempts:      {http.StatusTooManyRequests, "too many failed logins for this name or from this address; Retry-After says when to try again"},
	protocol.CodeUserRequired:         {http.StatusForbidden, "the route keeps a user's own data; the admin token has none"},
	protocol.CodeBadRequest:           {http.StatusBadRequest, "the request is malformed in a way no other code names"},
	protocol.CodeMethodNotAllowed:     {http.StatusMethodNotAllowed, "the route does not take this method"},
	protocol.CodeConflict:             {http.StatusConflict, "the row's state forbids the change"},
	protocol.CodeJobTerminal:          {http.StatusConflict, "the job has already ended"},
	protocol.CodeLibraryExists:        {http.StatusConflict, "a library with this path exists"},
	protocol.CodeLibraryBusy:          {http.StatusConflict, "a scan or hash job of the library is active"},
	protocol.CodeNoWAL:                {http.StatusConflict, "the database is PostgreSQL, which checkpoints itself"},
	protocol.CodeBodyTooLarge:         {http.StatusRequestEntityTooLarge, "the body is larger than 1 MiB"},
	protocol.CodeUnsupportedMediaType: {http.StatusUnsupportedMediaType, "the body is not application/json"},
	protocol.CodeQueueFull:            {http.StatusTooManyRequests, "the scan queue is at capacity"},
	protocol.CodeThumbnailQueueFull:   {http.StatusTooManyRequests, "the thumbnail queue is at capacity"},
	protocol.CodeCheckpointTooSoon:    {http.StatusTooManyRequests, "a WAL checkpoint was requested less than the minimum interval ago"},
	protocol.CodeInternal:             {http.StatusInternalServerError, "an unexpected error; the log says what"},
	protocol.CodeUnavailable:          {http.StatusServiceUnavailable, "the database cannot be reached or is shutting down"},
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
