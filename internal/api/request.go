package api

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
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

// checkToken refuses tokens too short to resist guessing.
func checkToken(tok string) error {
	if len(tok) < 16 {
		return errors.New("api: admin token must be at least 16 characters")
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return errors.New("api: admin token must not contain white space")
	}
	return nil
}

// requireToken checks "Authorization: Bearer <token>". Both sides are
// hashed first so the constant-time compare also hides the token's length.
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	want := sha256.Sum256([]byte(s.cfg.Token))
	return func(c echo.Context) error {
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		scheme, tok, ok := strings.Cut(h, " ")
		got := sha256.Sum256([]byte(tok))
		if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			return apiErr(protocol.CodeUnauthorized, "missing or wrong bearer token")
		}
		return next(c)
	}
}

// limitBody caps every request body at MaxBodyBytes: a declared length
// over the cap is refused before reading, and a body that grows past it
// while being read fails the decode with 413.
func limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > MaxBodyBytes {
			return apiErr(protocol.CodeBodyTooLarge, "request body is larger than %d bytes", MaxBodyBytes)
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes)
		return next(c)
	}
}

// rejectDotSegments refuses request paths with "." or ".." segments, raw
// or percent-encoded (%2e%2e), and encoded slashes: no route has them, and
// refusing them before routing means no handler ever sees a path that some
// other layer might normalise differently.
func rejectDotSegments(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		raw := u.EscapedPath()
		dec, err := url.PathUnescape(raw)
		if err != nil {
			return apiErr(protocol.CodeInvalidPath, "malformed request path")
		}
		if strings.Contains(strings.ToLower(raw), "%2f") || strings.Contains(raw, "%5c") || strings.ContainsAny(dec, "\\\x00") {
			return apiErr(protocol.CodeInvalidPath, "encoded separators are not allowed in the request path")
		}
		for _, seg := range strings.Split(dec, "/") {
			if seg == "." || seg == ".." {
				return apiErr(protocol.CodeInvalidPath, "dot segments are not allowed in the request path")
			}
		}
		return next(c)
	}
}

// decodeJSON reads the body into dst strictly: unknown fields, trailing
// data and wrong types are 400, a body over the cap is 413. The body is
// JSON whatever Content-Type says (curl -d sends a form type); that is
// safe because every route needs the Authorization header, which a
// cross-site form cannot send.
func decodeJSON(c echo.Context, dst any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	return decodeBody(body, dst)
}

// decodeBody is decodeJSON of a body already read.
func decodeBody(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return apiErr(protocol.CodeInvalidJSON, "empty request body: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return apiErr(protocol.CodeInvalidJSON, "trailing data after the JSON object")
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
			return apiErr(protocol.CodeInvalidJSON, "want a JSON object, got %s", te.Value)
		}
		return apiErr(protocol.CodeInvalidField, "field %q: want %s, got %s", field, te.Type, te.Value).with("field", field)
	case errors.As(err, &se):
		return apiErr(protocol.CodeInvalidJSON, "malformed JSON at byte %d", se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for unknown fields.
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return apiErr(protocol.CodeUnknownField, "unknown field %q", name).with("field", name)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return apiErr(protocol.CodeInvalidJSON, "truncated JSON")
	}
	return apiErr(protocol.CodeInvalidJSON, "malformed JSON")
}

// pathID parses a positive int64 path parameter.
func pathID(c echo.Context, name string) (int64, error) {
	v := c.Param(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != v {
		return 0, apiErr(protocol.CodeInvalidParameter, "%s must be a positive integer", name).with("parameter", name)
	}
	return id, nil
}

// queryID parses an optional positive int64 query parameter: nil when
// absent.
func queryID(c echo.Context, name string) (*int64, error) {
	v := c.QueryParam(name)
	if v == "" {
		return nil, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return nil, apiErr(protocol.CodeInvalidParameter, "%s must be a positive integer", name).with("parameter", name)
	}
	return &id, nil
}

// queryEnum parses an optional enum query parameter with its protocol
// parser (lowercase only).
func queryEnum[T ~string](c echo.Context, name string, parse func(string) (T, error)) (T, error) {
	v := c.QueryParam(name)
	if v == "" {
		return "", nil
	}
	t, err := parse(v)
	if err != nil {
		return "", apiErr(protocol.CodeInvalidParameter, "%s: %v", name, err).with("parameter", name)
	}
	return t, nil
}

// queryBool parses an optional true/false query parameter: nil when
// absent.
func queryBool(c echo.Context, name string) (*bool, error) {
	switch c.QueryParam(name) {
	case "":
		return nil, nil
	case "true", "1":
		return new(true), nil
	case "false", "0":
		return new(false), nil
	}
	return nil, apiErr(protocol.CodeInvalidParameter, "%s must be true or false", name).with("parameter", name)
}

// Page limits.
const (
	defaultLimit = 50
	maxLimit     = 200
)

// pageLimit reads ?limit= (1–200, default 50).
func pageLimit(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, apiErr(protocol.CodeInvalidLimit, "limit must be an integer from 1 to %d", maxLimit).with("parameter", "limit")
	}
	return n, nil
}

func invalidCursor() *Error {
	return apiErr(protocol.CodeInvalidCursor, "cursor is malformed or unknown; start again without it").with("parameter", "cursor")
}

// idPage reads limit and an id cursor (0 when absent).
func idPage(c echo.Context) (limit int, after int64, err error) {
	if limit, err = pageLimit(c); err != nil {
		return 0, 0, err
	}
	if cur := c.QueryParam("cursor"); cur != "" {
		if after, err = decodeIDCursor(cur); err != nil {
			return 0, 0, invalidCursor()
		}
	}
	return limit, after, nil
}

// page is the list envelope.
type page[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// makePage trims a result fetched with limit+1 rows and renders the cursor
// of its last item when there is more.
func makePage[R, T any](rows []R, limit int, view func(R) T, cursor func(R) string) page[T] {
	p := page[T]{Items: make([]T, 0, min(len(rows), limit))}
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

func fieldf(field, format string, args ...any) *Error {
	return apiErr(protocol.CodeInvalidField, "%s: %s", field, fmt.Sprintf(format, args...)).with("field", field)
}

// emptyBody accepts an action route's body only when it is absent or an
// empty JSON object, so that a client sending options the route does not
// know learns so instead of being ignored.
func emptyBody(c echo.Context) error {
	r := c.Request()
	if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		return nil
	}
	body, err := readBody(c)
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

// readBody reads the whole request body. A body over the cap keeps its *http.MaxBytesError (the error
// handler makes it a 413); any other read failure is a 400.
func readBody(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, err
		}
		return nil, apiErr(protocol.CodeInvalidJSON, "could not read the request body")
	}
	return body, nil
}
