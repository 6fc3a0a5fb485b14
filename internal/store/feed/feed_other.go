//go:build !linux

package feed

import (
	"syscall"
	"time"
)

// setUserTimeout: TCP_USER_TIMEOUT is Linux's; elsewhere keepalive and the
// health check alone bound a silent connection.
func setUserTimeout(syscall.RawConn, time.Duration) error { return nil }
