package archive

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/bindery-nas/bindery/protocol"
)

// coded builds a *protocol.Error whose message says what was being done
// ("list zip") and why, keeping err in the chain for errors.Is/As.
func coded(code string, err error, what string) error {
	msg := what
	if err != nil {
		msg = what + ": " + err.Error()
	}
	return &protocol.Error{Code: code, Message: msg, Err: err}
}

func codedf(code, format string, args ...any) error {
	return &protocol.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// classify maps an error from a format library to a code: errors that are
// already coded keep their code, file-system errors (the *os.File under the
// reader failed) are io_error, everything else means the bytes are not a
// valid archive.
func classify(err error, what string) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return err
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return coded(protocol.ErrIOError, err, what)
	}
	return coded(protocol.ErrArchiveCorrupt, err, what)
}

func errTooLarge(name string, size, limit int64) error {
	return codedf(protocol.ErrSourceTooLarge, "entry %q: %d bytes exceeds the limit of %d", name, size, limit)
}
