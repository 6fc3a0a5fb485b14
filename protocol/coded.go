package protocol

import (
	"errors"
	"fmt"
)

// Error is an error that carries one of the protocol's error codes. Executors
// return it so that the engine can write error_code without matching strings.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Code + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds a coded error.
func Errorf(code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap attaches a code to err; nil stays nil.
func Wrap(code string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Message: err.Error(), Err: err}
}

// CodeOf returns the code of the first coded error in err's chain, or
// fallback when there is none.
func CodeOf(err error, fallback string) string {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return fallback
}
