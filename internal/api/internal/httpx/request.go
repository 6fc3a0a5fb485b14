package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/protocol"
)

// LimitBody caps every request body at MaxBodyBytes: a declared length
// over the cap is refused before reading, and a body that grows past it
// while being read fails the decode with 413.
func LimitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > MaxBodyBytes {
			return Err(protocol.CodeBodyTooLarge, "request body is larger than %d bytes", MaxBodyBytes)
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes)
		return next(c)
	}
}

// RejectDotSegments refuses request paths with "." or ".." segments, raw
// or percent-encoded (%2e%2e), and encoded slashes: no route has them, and
// refusing them before routing means no handler ever sees a path that some
// other layer might normalise differently.
func RejectDotSegments(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		raw := u.EscapedPath()
		dec, err := url.PathUnescape(raw)
		if err != nil {
			return Err(protocol.CodeInvalidPath, "malformed request path")
		}
		if strings.Contains(strings.ToLower(raw), "%2f") || strings.Contains(raw, "%5c") || strings.ContainsAny(dec, "\\\x00") {
			return Err(protocol.CodeInvalidPath, "encoded separators are not allowed in the request path")
		}
		for _, seg := range strings.Split(dec, "/") {
			if seg == "." || seg == ".." {
				return Err(protocol.CodeInvalidPath, "dot segments are not allowed in the request path")
			}
		}
		return next(c)
	}
}

// DecodeJSON reads the body into dst strictly: unknown fields, trailing
// data and wrong types are 400, a body over the cap is 413. The body is
// JSON whatever Content-Type says (curl -d sends a form type); that is
// safe because every route needs the Authorization header, which a
// cross-site form cannot send.
func DecodeJSON(c echo.Context, dst any) error {
	body, err := ReadBody(c)
	if err != nil {
		return err
	}
	return DecodeBody(body, dst)
}

// DecodeBody is DecodeJSON of a body already read.
func DecodeBody(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return Err(protocol.CodeInvalidJSON, "empty request body: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Err(protocol.CodeInvalidJSON, "trailing data after the JSON object")
	}
	return nil
}

// jsonError turns a decoder error into a 400 naming the field when it can.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return Err(protocol.CodeInvalidJSON, "want a JSON object, got %s", te.Value)
		}
		return Err(protocol.CodeInvalidField, "field %q: want %s, got %s", field, te.Type, te.Value).With("field", field)
	case errors.As(err, &se):
		return Err(protocol.CodeInvalidJSON, "malformed JSON at byte %d", se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for unknown fields.
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return Err(protocol.CodeUnknownField, "unknown field %q", name).With("field", name)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return Err(protocol.CodeInvalidJSON, "truncated JSON")
	}
	return Err(protocol.CodeInvalidJSON, "malformed JSON")
}

// PathID parses a positive int64 path parameter.
func PathID(c echo.Context, name string) (int64, error) {
	v := c.Param(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != v {
		return 0, Err(protocol.CodeInvalidParameter, "%s must be a positive integer", name).With("parameter", name)
	}
	return id, nil
}

// QueryID parses an optional positive int64 query parameter: nil when
// absent.
func QueryID(c echo.Context, name string) (*int64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return nil, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return nil, Err(protocol.CodeInvalidParameter, "%s must be a positive integer", name).With("parameter", name)
	}
	return &id, nil
}

// QueryEnum parses an optional enum query parameter with its protocol
// parser (lowercase only).
func QueryEnum[T ~string](c echo.Context, name string, parse func(string) (T, error)) (T, error) {
	v := c.QueryParam(name)
	if v == "" {
		return "", nil
	}
	t, err := parse(v)
	if err != nil {
		return "", Err(protocol.CodeInvalidParameter, "%s: %v", name, err).With("parameter", name)
	}
	return t, nil
}

// QueryBool parses an optional true/false query parameter: nil when
// absent.
func QueryBool(c echo.Context, name string) (*bool, error) {
	switch c.QueryParam(name) {
	case "":
		return nil, nil
	case "true", "1":
		return new(true), nil
	case "false", "0":
		return new(false), nil
	}
	return nil, Err(protocol.CodeInvalidParameter, "%s must be true or false", name).With("parameter", name)
}

// Page limits.
const (
	defaultLimit = 50
	maxLimit     = 200
)

// PageLimit reads ?limit= (1–200, default 50).
func PageLimit(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, Err(protocol.CodeInvalidLimit, "limit must be an integer from 1 to %d", maxLimit).With("parameter", "limit")
	}
	return n, nil
}

func InvalidCursor() *Error {
	return Err(protocol.CodeInvalidCursor, "cursor is malformed or unknown; start again without it").With("parameter", "cursor")
}

// IDPage reads limit and an id cursor (0 when absent).
func IDPage(c echo.Context) (limit int, after int64, err error) {
	if limit, err = PageLimit(c); err != nil {
		return 0, 0, err
	}
	if cur := c.QueryParam("cursor"); cur != "" {
		if after, err = DecodeIDCursor(cur); err != nil {
			return 0, 0, InvalidCursor()
		}
	}
	return limit, after, nil
}

// Page is the list envelope.
type Page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// MakePage trims a result fetched with limit+1 rows and renders the cursor
// of its last item when there is more.
func MakePage[R, T any](rows []R, limit int, view func(R) T, cursor func(R) string) Page[T] {
	p := Page[T]{Items: make([]T, 0, min(len(rows), limit))}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	for _, r := range rows {
		p.Items = append(p.Items, view(r))
	}
	if more && len(rows) > 0 {
		cur := cursor(rows[len(rows)-1])
		p.NextCursor = &cur
	}
	return p
}

func Fieldf(field, format string, args ...any) *Error {
	return Err(protocol.CodeInvalidField, "%s: %s", field, fmt.Sprintf(format, args...)).With("field", field)
}

// EmptyBody accepts an action route's body only when it is absent or an
// empty JSON object, so that a client sending options the route does not
// know learns so instead of being ignored.
func EmptyBody(c echo.Context) error {
	r := c.Request()
	if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		return nil
	}
	body, err := ReadBody(c)
	if err != nil || len(bytes.TrimSpace(body)) == 0 {
		return err
	}
	var none struct{}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&none); err != nil {
		return jsonError(err)
	}
	return nil
}

// ReadBody reads the whole request body. A body over the cap keeps its *http.MaxBytesError (the error
// handler makes it a 413); any other read failure is a 400.
func ReadBody(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, err
		}
		return nil, Err(protocol.CodeInvalidJSON, "could not read the request body")
	}
	return body, nil
}
