package watch

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// networkTypes are the file systems whose changes made elsewhere inotify
// never hears of (another client of the share writes them): a library on
// one is polled.
var networkTypes = map[string]bool{
	"nfs": true, "nfs4": true, "cifs": true, "smb3": true, "smbfs": true, "9p": true, "afs": true,
	"ceph": true, "glusterfs": true, "fuse.sshfs": true, "fuse.rclone": true, "fuse.glusterfs": true,
	"fuse.s3fs": true, "fuse.cephfs": true, "davfs": true, "fuse.davfs2": true,
}

// mountOf returns the file system type of the mount holding path p (a
// real path), read from a /proc/self/mountinfo text: the mount point that is
// the longest prefix of p wins (the last one listed on a tie, as it hides
// the ones below it).
func mountOf(mountinfo io.Reader, p string) (fstype string, err error) {
	best := -1
	sc := bufio.NewScanner(mountinfo)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		point, typ, ok := parseMountLine(sc.Text())
		if !ok || !underMount(point, p) || len(point) < best {
			continue
		}
		best, fstype = len(point), typ
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("mountinfo: %w", err)
	}
	if best < 0 {
		return "", fmt.Errorf("mountinfo: no mount holds %s", p)
	}
	return fstype, nil
}

// parseMountLine reads the mount point (field 5) and the file system type
// (the first field after the " - " separator) of one mountinfo line.
func parseMountLine(line string) (point, fstype string, ok bool) {
	pre, post, found := strings.Cut(line, " - ")
	fields := strings.Fields(pre)
	after := strings.Fields(post)
	if !found || len(fields) < 5 || len(after) < 1 {
		return "", "", false
	}
	return unescapeMount(fields[4]), after[0], true
}

// unescapeMount undoes the kernel's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func underMount(point, p string) bool {
	return point == "/" || p == point || strings.HasPrefix(p, strings.TrimSuffix(point, "/")+"/")
}

// fsTypeOf is the file system type of the real path p on this machine.
func fsTypeOf(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	return mountOf(f, real)
}

// maxUserWatches reads fs.inotify.max_user_watches from file (its /proc
// path in production).
func maxUserWatches(file string) (int, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("inotify watch limit: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("inotify watch limit %s: %w", file, err)
	}
	return n, nil
}
