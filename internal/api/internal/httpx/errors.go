package httpx

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
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

// Err is the error of code, with the status the table gives it.
func Err(code, format string, args ...any) *Error {
	status, _ := statusOf(code)
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) With(k string, v any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[k] = v
	return e
}

type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// toAPIError is the one place where application errors become codes, and
// codes statuses (the table in codes.go).
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
	case errors.As(err, &pe) && pe.Err == nil && known(pe.Code):
		// A coded error without a store sentinel (dedup's plan_invalid):
		// the table alone gives its status.
		return storeErr(err, pe.Code, pe.Message), true
	case errors.As(err, &mb):
		return Err(protocol.CodeBodyTooLarge, "request body is larger than %d bytes", MaxBodyBytes), true
	case errors.As(err, &se):
		if errors.Is(se, settings.ErrUnknown) {
			return Err(protocol.CodeUnknownSetting, "unknown setting %q", se.Key).With("key", se.Key), true
		}
		return Err(protocol.CodeInvalidSettingValue, "%s", se.Error()).With("key", se.Key), true
	case errors.Is(err, store.ErrNotFound):
		return storeErr(err, protocol.CodeNotFound, "not found"), true
	case errors.Is(err, store.ErrConflict):
		return storeErr(err, protocol.CodeConflict, "conflict"), true
	case errors.Is(err, store.ErrQueueFull):
		return storeErr(err, protocol.CodeQueueFull, "queue is full"), true
	case errors.Is(err, store.ErrInvalidRequest):
		return Err(protocol.CodeInvalidField, "%s", err.Error()), true
	case errors.As(err, &he):
		return fromEcho(he), true
	}
	return Err(protocol.CodeInternal, "internal error"), false
}

// storeErr is an application error of the store: its own code and
// message when it carries them (without the wrapping context of store
// internals), else the sentinel's. A code the table does not know keeps
// the sentinel's status.
func storeErr(err error, sentinel, fallback string) *Error {
	e := Err(sentinel, "%s", fallback)
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return e
	}
	if pe.Message != "" {
		e.Message = pe.Message
	}
	if status, ok := statusOf(pe.Code); ok {
		e.Status, e.Code = status, pe.Code
	}
	return e
}

func fromEcho(he *echo.HTTPError) *Error {
	switch he.Code {
	case http.StatusNotFound:
		return Err(protocol.CodeNotFound, "no such route")
	case http.StatusMethodNotAllowed:
		return Err(protocol.CodeMethodNotAllowed, "method not allowed on this route")
	case http.StatusRequestEntityTooLarge:
		return Err(protocol.CodeBodyTooLarge, "request body is larger than %d bytes", MaxBodyBytes)
	case http.StatusUnauthorized:
		return Err(protocol.CodeUnauthorized, "missing or wrong bearer token")
	case http.StatusUnsupportedMediaType:
		return Err(protocol.CodeUnsupportedMediaType, "want application/json")
	}
	if he.Code >= 400 && he.Code < 500 {
		return Err(protocol.CodeBadRequest, "%s", http.StatusText(he.Code))
	}
	return Err(protocol.CodeInternal, "internal error")
}

// HandleError is echo's error handler: it renders every error through
// toAPIError and logs to log the ones that were not expected.
func HandleError(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) { handleError(log, err, c) }
}

func handleError(log *slog.Logger, err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae, known := toAPIError(err)
	if !known || ae.Status >= 500 {
		log.Error("api request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
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

// RecoverPanics turns a handler panic into a logged 500.
func RecoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}
