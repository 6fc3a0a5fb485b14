package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// API error codes. Store errors carry their own codes (library_exists,
// job_terminal, cover_not_ready, <thing>_not_found...).
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
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeBodyTooLarge         = "body_too_large"
	CodeConflict             = "conflict"
	CodeQueueFull            = "queue_full"
	CodeThumbnailQueueFull   = "thumbnail_queue_full"
	CodeCheckpointTooSoon    = "checkpoint_too_soon"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeUnavailable          = "unavailable"
	CodeInternal             = "internal_error"
)

// Error is an error with its HTTP status and code, rendered as
// {"error":{"code","message","details"}}.
type Error struct {
	Status  int
	Code    string
	Message string
	Details map[string]any
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func apiErr(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(code, format string, args ...any) *Error {
	return apiErr(http.StatusBadRequest, code, format, args...)
}

func (e *Error) with(k string, v any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[k] = v
	return e
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// toAPIError is the one place where application errors become statuses.
// Anything it does not recognise is a 500 whose message says nothing about
// the cause (no SQL, no paths, no stack): the cause goes to the log only.
func toAPIError(err error) (*Error, bool) {
	var ae *Error
	var he *echo.HTTPError
	var mb *http.MaxBytesError
	var se *settings.InvalidError
	var pe *protocol.Error
	switch {
	case errors.As(err, &ae):
		return ae, true
	case errors.As(err, &mb):
		return apiErr(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body is larger than %d bytes", MaxBodyBytes), true
	case errors.As(err, &se):
		if errors.Is(se, settings.ErrUnknown) {
			return badRequest(CodeUnknownSetting, "unknown setting %q", se.Key).with("key", se.Key), true
		}
		return badRequest(CodeInvalidSettingValue, "%s", se.Error()).with("key", se.Key), true
	case errors.Is(err, store.ErrNotFound):
		return apiErr(http.StatusNotFound, protocol.CodeOf(err, CodeNotFound), "%s", message(err, pe, "not found")), true
	case errors.Is(err, store.ErrConflict):
		return apiErr(http.StatusConflict, protocol.CodeOf(err, CodeConflict), "%s", message(err, pe, "conflict")), true
	case errors.Is(err, store.ErrQueueFull):
		return apiErr(http.StatusTooManyRequests, protocol.CodeOf(err, CodeQueueFull), "%s", message(err, pe, "queue is full")), true
	case errors.Is(err, store.ErrInvalidRequest):
		return badRequest(CodeInvalidField, "%s", err.Error()), true
	case errors.As(err, &he):
		return fromEcho(he), true
	}
	return apiErr(http.StatusInternalServerError, CodeInternal, "internal error"), false
}

// message is the coded error's own message when there is one (without the
// wrapping context of store internals), else fallback.
func message(err error, pe *protocol.Error, fallback string) string {
	if errors.As(err, &pe) && pe.Message != "" {
		return pe.Message
	}
	return fallback
}

func fromEcho(he *echo.HTTPError) *Error {
	switch he.Code {
	case http.StatusNotFound:
		return apiErr(he.Code, CodeNotFound, "no such route")
	case http.StatusMethodNotAllowed:
		return apiErr(he.Code, CodeMethodNotAllowed, "method not allowed on this route")
	case http.StatusRequestEntityTooLarge:
		return apiErr(he.Code, CodeBodyTooLarge, "request body is larger than %d bytes", MaxBodyBytes)
	case http.StatusUnauthorized:
		return apiErr(he.Code, CodeUnauthorized, "missing or wrong bearer token")
	case http.StatusUnsupportedMediaType:
		return apiErr(he.Code, CodeUnsupportedMediaType, "want application/json")
	}
	if he.Code >= 400 && he.Code < 500 {
		return apiErr(he.Code, http.StatusText(he.Code), "%s", http.StatusText(he.Code))
	}
	return apiErr(http.StatusInternalServerError, CodeInternal, "internal error")
}

// handleError is echo's error handler: it renders every error through
// toAPIError and logs the ones that were not expected.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae, known := toAPIError(err)
	if !known || ae.Status >= 500 {
		s.log.Error("api request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
	}
	if ae.Status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="bindery"`)
	}
	details := ae.Details
	if details == nil {
		details = map[string]any{}
	}
	body := errorBody{Error: errorJSON{Code: ae.Code, Message: ae.Message, Details: details}}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(ae.Status)
		return
	}
	_ = c.JSON(ae.Status, body)
}

// recoverPanics turns a handler panic into a logged 500.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}
