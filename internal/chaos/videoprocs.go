package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
)

// videoProc is a live ffmpeg or ffprobe process reading a file of this
// harness: workerd hands the file to it as fd 3 (internal/video), so
// /proc/<pid>/fd/3 names it, which tells the harness's children from
// those of anything else running on the machine (other tests).
type videoProc struct {
	pid, ppid  int
	comm, file string
}

func (p videoProc) String() string {
	return fmt.Sprintf("%s pid %d (parent %d) reading %s", p.comm, p.pid, p.ppid, p.file)
}

// videoProcs lists the live (not zombie) ffmpeg and ffprobe processes
// whose fd 3 is a file under dir, from /proc.
func videoProcs(dir string) []videoProc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []videoProc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		name := strings.TrimSpace(string(comm))
		switch {
		case err != nil:
			continue
		case strings.HasPrefix(name, "ffprobe"): // a versioned binary too
			name = "ffprobe"
		case strings.HasPrefix(name, "ffmpeg"):
			name = "ffmpeg"
		default:
			continue
		}
		file, err := os.Readlink("/proc/" + e.Name() + "/fd/3")
		if err != nil || !strings.HasPrefix(file, dir+string(os.PathSeparator)) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // it exited meanwhile
		}
		// State and parent follow the command name, which is in parentheses.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if i < 0 || len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, videoProc{pid: pid, ppid: ppid, comm: name, file: file})
	}
	return out
}

// workerPIDs maps the pids of the cluster's running workerd processes to
// their worker ids.
func (c *cluster) workerPIDs() map[int]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[int]string{}
	for _, w := range c.workers {
		if w.alive() {
			out[w.cmd.Process.Pid] = w.name
		}
	}
	return out
}

// videoWork counts the files left to analyse (ffprobe's work), the video
// covers left to render (ffmpeg's) and the scans not done.
func (h *harness) videoWork(ctx context.Context) (probes, frames, scans int, err error) {
	err = h.ro.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM library_files WHERE is_missing = 0 AND needs_analysis = 1),
		(SELECT count(*) FROM thumbnails WHERE media_type = 'video' AND status IN ('pending','running'))
		+ (SELECT count(*) FROM library_files WHERE format = 'video' AND needs_cover = 1 AND is_missing = 0),
		(SELECT count(*) FROM jobs WHERE kind = 'scan' AND status IN ('pending','running','retryable'))`).
		Scan(&probes, &frames, &scans)
	return probes, frames, scans, err
}

// videoVictim waits up to d for a worker running ffprobe (a scan's probe)
// or ffmpeg (a cover's frame), the two in turn from one video kill to the
// next, and returns its slot and the child ("" when none showed up). It
// waits only while there is work for the one it looks for: files to
// analyse, video covers to render. On ffprobe's turn after the probes are
// over, it looks for ffmpeg.
func (h *harness) videoVictim(ctx context.Context, d time.Duration) (string, videoProc) {
	if len(h.videos) == 0 {
		return "", videoProc{}
	}
	probes, frames, _, err := h.videoWork(ctx)
	comm := []string{"ffprobe", "ffmpeg"}[h.r.VideoKills%2]
	switch {
	case err != nil || probes+frames == 0:
		return "", videoProc{}
	case comm == "ffprobe" && probes == 0:
		comm = "ffmpeg" // the probes are over
	case comm == "ffmpeg" && frames == 0:
		return "", videoProc{} // the frames are yet to come, or over
	}
	start := time.Now()
	for ctx.Err() == nil && time.Since(start) < d {
		pids := h.c.workerPIDs()
		for _, p := range videoProcs(h.cfg.Dir) {
			id, ok := pids[p.ppid]
			if !ok || p.comm != comm {
				continue
			}
			for _, slot := range []string{"a", "b"} {
				if h.c.worker(slot).name == id {
					return slot, p
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return "", videoProc{}
}

// checkOrphans waits up to d for every ffmpeg/ffprobe reading the
// harness's files to have a running workerd of c as its parent (the
// children of a SIGKILLed workerd die with it: Pdeathsig) and records
// those that outlive it.
func (h *harness) checkOrphans(c *cluster, d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		var orphans []videoProc
		pids := c.workerPIDs()
		for _, p := range videoProcs(h.cfg.Dir) {
			if _, ok := pids[p.ppid]; !ok {
				orphans = append(orphans, p)
			}
		}
		if len(orphans) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range orphans {
				h.orphans = append(h.orphans, p.String())
				h.logf("orphan: %s outlived its workerd by %v", p, d)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// orphanCheck: no ffmpeg/ffprobe outlived the workerd that started it,
// after any SIGKILL or at the end (every daemon stopped).
func (h *harness) orphanCheck() checks.Check {
	left := videoProcs(h.cfg.Dir)
	c := checks.Check{Name: "no ffmpeg/ffprobe outlives its workerd", OK: len(h.orphans) == 0 && len(left) == 0}
	c.Detail = fmt.Sprintf("%d workerd SIGKILLs while an ffmpeg/ffprobe child ran (%s); %d orphans after a SIGKILL; %d left after the stop",
		h.r.VideoKills, strings.Join(h.videoKilled, ", "), len(h.orphans), len(left))
	var all []string
	all = append(all, h.orphans...)
	for _, p := range left {
		all = append(all, p.String())
	}
	if len(all) > 0 {
		c.Detail += ": " + strings.Join(all[:min(5, len(all))], "; ")
	}
	return c
}
