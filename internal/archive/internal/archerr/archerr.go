// Package archerr gives the archive readers' errors their protocol codes:
// what was being done, why, and the code a scan records for the book.
package archerr

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/bindery-nas/bindery/protocol"
)

// Wrap builds a *protocol.Error whose message says what was being done
// ("list zip") and why, keeping err in the chain for errors.Is/As.
func Wrap(code string, err error, what string) error {
	msg := what
	if err != nil {
		msg = what + ": " + err.Error()
	}
	return &protocol.Error{Code: code, Message: msg, Err: err}
}

// Errorf is a *protocol.Error with a formatted message and no cause.
func Errorf(code, format string, args ...any) error {
	return &protocol.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Classify maps an error from a format library to a code: errors that are
// already coded keep their code, file-system errors (the *os.File under the
// reader failed) are io_error, everything else means the bytes are not a
// valid archive.
func Classify(err error, what string) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return err
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return Wrap(protocol.ErrIOError, err, what)
	}
	return Wrap(protocol.ErrArchiveCorrupt, err, what)
}
