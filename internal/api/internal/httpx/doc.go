// Package httpx is the HTTP plumbing the API's packages share: errors and
// the one table that maps their codes to statuses (errors.go, codes.go),
// the echo error handler and middleware, strict request binding (bodies,
// path and query parameters), opaque cursors and the list envelope. Go's
// internal rule keeps it private to internal/api and its packages; it
// imports none of them.
package httpx

// Base is the path prefix of every authenticated route.
const Base = "/api/v1"

// MaxBodyBytes caps every request body (1 MiB); larger bodies get 413.
const MaxBodyBytes = 1 << 20
