// Package video reads video files with Debian's ffprobe and ffmpeg, run as
// confined subprocesses: the probe (container, duration, size, codecs) a
// scan stores on the file, and the one frame a cover is rendered from.
//
// Strategy: nothing of ffmpeg is trusted with a path or a format guess.
// The file is opened here, inside its library root, never through a
// symlink and never blocking on a FIFO, and handed to the child as an open
// descriptor (it reads /proc/self/fd/3, the same inode). The demuxer is
// forced from the magic bytes read here, so content can never steer ffmpeg
// to a playlist or concat demuxer that would open other files, and only
// the file and pipe protocols are allowed. Each run has a wall-clock
// timeout, an address-space limit and its own process group, killed whole
// on timeout or cancel and by the kernel if workerd dies (Pdeathsig).
package video

import (
	"bytes"
	"io"
)

// Container is a video container, as stored in video_probes.container.
type Container string

const (
	ContainerMP4      Container = "mp4"
	ContainerMOV      Container = "mov"
	ContainerMatroska Container = "mkv"
	ContainerWebM     Container = "webm"
	ContainerAVI      Container = "avi"
	ContainerMPEGTS   Container = "mpegts"
)

// demuxer is ffmpeg's name for the demuxer that reads c.
func (c Container) demuxer() string {
	switch c {
	case ContainerMP4, ContainerMOV:
		return "mov"
	case ContainerMatroska, ContainerWebM:
		return "matroska"
	case ContainerAVI:
		return "avi"
	case ContainerMPEGTS:
		return "mpegts"
	}
	return ""
}

// Extensions are the file extensions of video files (scan.extensions'
// default holds them; a library with media "comics" skips them).
var Extensions = []string{".mp4", ".m4v", ".mkv", ".webm", ".avi", ".mov", ".ts"}

// SniffLen is how many leading bytes Sniff needs to tell an MPEG
// transport stream (three 188- or 192-byte packets) from noise.
const SniffLen = 3*192 + 4

// SniffFile reads the head of r and sniffs it.
func SniffFile(r io.ReaderAt) (Container, bool) {
	head := make([]byte, SniffLen)
	n, _ := r.ReadAt(head, 0)
	return Sniff(head[:n])
}

// Sniff names the container of content starting with head, by magic
// bytes alone. Image formats built on the same boxes (AVIF, HEIF) are not
// video.
func Sniff(head []byte) (Container, bool) {
	switch {
	case len(head) >= 12 && isQuickTimeBox(head[4:8]):
		return quickTime(head)
	case bytes.HasPrefix(head, []byte{0x1a, 0x45, 0xdf, 0xa3}):
		// The EBML header's DocType is within its first few dozen bytes.
		if bytes.Contains(head[:min(len(head), 64)], []byte("webm")) {
			return ContainerWebM, true
		}
		return ContainerMatroska, true
	case len(head) >= 12 && bytes.HasPrefix(head, []byte("RIFF")) && bytes.Equal(head[8:12], []byte("AVI ")):
		return ContainerAVI, true
	case isTransportStream(head, 188, 0), isTransportStream(head, 192, 4):
		return ContainerMPEGTS, true
	}
	return "", false
}

func isQuickTimeBox(typ []byte) bool {
	switch string(typ) {
	case "ftyp", "moov", "mdat", "free", "wide", "skip", "pnot":
		return true
	}
	return false
}

// quickTime tells MP4 from QuickTime by the ftyp major brand, refusing
// the still-image brands.
func quickTime(head []byte) (Container, bool) {
	if string(head[4:8]) != "ftyp" {
		return ContainerMOV, true
	}
	switch string(head[8:12]) {
	case "avif", "avis", "heic", "heix", "hevc", "hevx", "mif1", "msf1":
		return "", false
	case "qt  ":
		return ContainerMOV, true
	}
	return ContainerMP4, true
}

// isTransportStream: three packets of size n, each starting with the sync
// byte 0x47 at offset off (192-byte M2TS packets carry a 4-byte prefix).
func isTransportStream(head []byte, n, off int) bool {
	if len(head) < 2*n+off+1 {
		return false
	}
	for i := range 3 {
		p := i*n + off
		if p >= len(head) || head[p] != 0x47 {
			return false
		}
	}
	return true
}
