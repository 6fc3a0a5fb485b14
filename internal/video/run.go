package video

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/protocol"
)

// Default limits of one ffmpeg or ffprobe run.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultMemoryBytes = 2 << 30
)

// Limits bound one ffmpeg or ffprobe run. Zero values take the defaults.
type Limits struct {
	// Timeout is the wall-clock limit of one run; default 30s (setting
	// video.timeout_seconds). A run over it is video_timeout.
	Timeout time.Duration
	// MemoryBytes is the child's address-space limit (RLIMIT_AS); default
	// 2 GiB (setting video.memory_limit_mb). Negative: no limit.
	MemoryBytes int64
	// FFmpeg and FFprobe are the binaries; default "ffmpeg" and "ffprobe"
	// found on PATH.
	FFmpeg, FFprobe string
}

// LimitsFrom reads the settings video.timeout_seconds and
// video.memory_limit_mb (0 there: no limit).
func LimitsFrom(v settings.Values) Limits {
	mem := v.Int(settings.VideoMemoryLimitMB) << 20
	if mem == 0 {
		mem = -1
	}
	return Limits{Timeout: time.Duration(v.Int(settings.VideoTimeoutSeconds)) * time.Second, MemoryBytes: mem}
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.FFmpeg == "" {
		l.FFmpeg = "ffmpeg"
	}
	if l.FFprobe == "" {
		l.FFprobe = "ffprobe"
	}
	return l
}

// inputURL is how the child reads the file handed to it as ExtraFiles[0]:
// the magic link reopens that same inode, seekable, whatever its path
// became since.
const inputURL = "file:/proc/self/fd/3"

// stderrLimit keeps the end of what the child says on error.
const stderrLimit = 4 << 10

// run starts bin with args reading src as fd 3 and returns its stdout, at
// most outLimit bytes. Errors: video_timeout past the limit, the caller's
// context error on cancel, video_unreadable when the child fails.
func run(ctx context.Context, lim Limits, bin string, args []string, src *os.File, outLimit int) ([]byte, error) {
	runCtx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, bin, args...)
	cmd.ExtraFiles = []*os.File{src}
	// A small environment: no proxy variables, one malloc arena per
	// couple of threads so the address-space limit measures real use.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "MALLOC_ARENA_MAX=2"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out := &boundedBuffer{limit: outLimit}
	errOut := &boundedBuffer{limit: stderrLimit, keepTail: true}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, protocol.Errorf(protocol.ErrVideoUnreadable, "%s is not installed (Debian package ffmpeg)", bin)
		}
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	if lim.MemoryBytes > 0 {
		// The child has only exec'd: the limit is in place long before it
		// reads a byte of the file.
		rl := unix.Rlimit{Cur: uint64(lim.MemoryBytes), Max: uint64(lim.MemoryBytes)}
		if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_AS, &rl, nil); err != nil && !errors.Is(err, unix.ESRCH) {
			_ = cmd.Cancel()
			_ = cmd.Wait()
			return nil, fmt.Errorf("limit %s memory: %w", bin, err)
		}
	}
	err := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return nil, protocol.Errorf(protocol.ErrVideoTimeout, "%s ran longer than %s", bin, lim.Timeout)
	case err != nil:
		return nil, protocol.Errorf(protocol.ErrVideoUnreadable, "%s: %v: %s", bin, err, errOut.message())
	case out.over:
		return nil, protocol.Errorf(protocol.ErrVideoUnreadable, "%s wrote more than %d bytes", bin, outLimit)
	}
	return out.Bytes(), nil
}

// boundedBuffer keeps at most limit bytes: the first ones, or with
// keepTail the last ones. It never fails a write, so a chatty child is
// never blocked on a full pipe.
type boundedBuffer struct {
	bytes.Buffer
	limit    int
	keepTail bool
	over     bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if b.keepTail {
		b.Buffer.Write(p)
		if extra := b.Len() - b.limit; extra > 0 {
			b.Next(extra)
		}
		return n, nil
	}
	if room := b.limit - b.Len(); len(p) > room {
		b.over = true
		p = p[:max(room, 0)]
	}
	b.Buffer.Write(p)
	return n, nil
}

// message is the child's last line(s) of complaint, on one line.
func (b *boundedBuffer) message() string {
	s := strings.Join(strings.Fields(b.String()), " ")
	if s == "" {
		return "no message"
	}
	return s
}
