package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
	"github.com/bindery-nas/bindery/protocol"
)

// deletePhase resolves duplicates under fire: a library of DeleteGroups
// groups of two or three identical files is scanned and hashed, a plan
// keeping the oldest copy of each is executed, and the workers are
// SIGKILLed again and again while the delete job runs. Then it proves that
// every planned file is in exactly one place, in the library or in the
// trash, bytes unchanged; that no keeper moved; and that restoring the
// whole trash gives back the library's original checksums exactly.
func (h *harness) deletePhase(ctx context.Context) error {
	c := h.c
	dir := filepath.Join(h.root, "dupes")
	if err := writeDupes(dir, h.cfg.DeleteGroups, h.rng); err != nil {
		return err
	}
	before, err := fileSums(dir)
	if err != nil {
		return err
	}
	if err := c.startControl(ctx); err != nil {
		return err
	}
	for _, slot := range []string{"a", "b"} {
		if _, err := c.startWorker(slot); err != nil {
			return err
		}
	}
	defer c.killAll()
	lid, err := c.setup(ctx, dir, map[string]any{"io.hash_rate_limit_mb_s": 0})
	if err != nil {
		return err
	}
	if err := c.api(ctx, "PATCH", "/libraries/"+strconv.FormatInt(lid, 10), map[string]any{"allow_delete": true}, nil); err != nil {
		return err
	}
	if err := c.requestScan(ctx, lid); err != nil {
		return err
	}
	if err := h.drain(ctx); err != nil {
		return err
	}
	var plan planReply
	if err := c.api(ctx, "POST", "/duplicates/plans", map[string]any{"all": true, "library_id": lid, "policy": "oldest"}, &plan); err != nil {
		return err
	}
	var job struct{ ID int64 }
	if err := c.api(ctx, "POST", fmt.Sprintf("/duplicates/plans/%d/execute", plan.ID), nil, &job); err != nil {
		return err
	}
	h.r.Checks = append(h.r.Checks, h.secondPlanRefused(ctx, lid))
	user := newUserWriter(dir, h.rng.Uint64())
	userCtx, stopUser := context.WithCancel(ctx)
	userDone := make(chan struct{})
	go func() { defer close(userDone); user.run(userCtx, plan, max(1, h.cfg.DeleteGroups/10)) }()
	err = h.zombieDuringDelete(ctx, job.ID)
	if err == nil {
		err = h.killDuringDelete(ctx, job.ID)
	}
	if err == nil {
		err = h.drain(ctx)
	}
	stopUser()
	<-userDone
	if err != nil {
		return err
	}
	h.r.UserWrites = len(user.wrote)
	if err := c.api(ctx, "GET", fmt.Sprintf("/duplicates/plans/%d", plan.ID), nil, &plan); err != nil {
		return err
	}
	h.r.Checks = append(h.r.Checks, h.checkDeleteJob(ctx, job.ID, plan, user), checkPlanned(dir, job.ID, plan, before, user))

	if err := c.api(ctx, "POST", fmt.Sprintf("/trash/%d/restore", job.ID), nil, nil); err != nil {
		return err
	}
	if err := h.drain(ctx); err != nil {
		return err
	}
	after, err := fileSums(dir)
	if err != nil {
		return err
	}
	restored := checks.CompareChecksums(user.expected(before), after)
	restored.Name = "restoring the whole trash gives back the library's checksums (sha256 of every file), the user's writes where the user wrote them"
	h.r.Checks = append(h.r.Checks, restored)
	return c.stopAll()
}

// secondPlanRefused: while the delete job runs, a plan over the same files
// with other keepers is refused at execute (files_busy): two plans with
// swapped keepers never run at once, whichever workerd claims them.
func (h *harness) secondPlanRefused(ctx context.Context, lid int64) checks.Check {
	c := checks.Check{Name: "a second plan over the running plan's files is refused (files_busy)"}
	var plan planReply
	if err := h.c.api(ctx, "POST", "/duplicates/plans", map[string]any{"all": true, "library_id": lid, "policy": "shortest_path"}, &plan); err != nil {
		c.Detail = err.Error()
		return c
	}
	err := h.c.api(ctx, "POST", fmt.Sprintf("/duplicates/plans/%d/execute", plan.ID), nil, nil)
	c.OK = err != nil && strings.Contains(err.Error(), " 409 ") && strings.Contains(err.Error(), "files_busy")
	c.Detail = fmt.Sprintf("plan %d: %v", plan.ID, err)
	return c
}

// deleteState is the delete job's status, owner, and copies not yet
// settled.
func (h *harness) deleteState(ctx context.Context, jobID int64) (status, owner string, left int64, err error) {
	err = h.ro.QueryRowContext(ctx, `SELECT status, coalesce(worker_id, ''),
		(SELECT count(*) FROM delete_plan_files f JOIN delete_plans p ON p.id = f.plan_id
		 WHERE p.job_id = jobs.id AND f.decision = 'remove'
		   AND f.file_id NOT IN (SELECT file_id FROM delete_outcomes WHERE job_id = jobs.id))
		FROM jobs WHERE id = ?`, jobID).Scan(&status, &owner, &left)
	return status, owner, left, err
}

// zombieDuringDelete SIGSTOPs the workerd running the delete job, waits
// until its lease was recovered and the job went on (the other workerd, or
// the end), and SIGCONTs it. Its late writes must change nothing (they are
// fenced by the job's owner) and whatever it moves late must be settled by
// the job's next run: the checks after the phase prove both.
func (h *harness) zombieDuringDelete(ctx context.Context, jobID int64) error {
	deadline := time.Now().Add(h.cfg.DrainTimeout)
	for time.Now().Before(deadline) {
		status, owner, left, err := h.deleteState(ctx, jobID)
		switch {
		case err != nil:
			return err
		case left == 0, protocol.JobStatus(status).Terminal():
			h.logf("the delete job ended before a worker could be frozen")
			return nil
		case status != string(protocol.JobRunning) || owner == "":
			time.Sleep(10 * time.Millisecond)
			continue
		}
		var w *daemon
		for _, slot := range []string{"a", "b"} {
			if d := h.c.worker(slot); d.name == owner {
				w = d
			}
		}
		if w == nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err := w.signal(syscall.SIGSTOP); err != nil {
			return err
		}
		if err := w.waitStopped(2 * time.Second); err != nil || !h.writeLockFree() {
			_ = w.signal(syscall.SIGCONT) // frozen inside a write: SQLite's lock; try again
			time.Sleep(20 * time.Millisecond)
			continue
		}
		h.logf("SIGSTOP %s during the delete job (%d copies left)", w.name, left)
		for {
			if n, _ := checks.FastForward(ctx, h.op); n > 0 {
				h.r.FastForwards += n
			}
			status, now, _, err := h.deleteState(ctx, jobID)
			if err != nil {
				_ = w.signal(syscall.SIGCONT)
				return err
			}
			if (now != "" && now != owner) || protocol.JobStatus(status).Terminal() {
				break
			}
			if time.Now().After(deadline) {
				_ = w.signal(syscall.SIGCONT)
				return fmt.Errorf("the delete job was not taken over from frozen %s", w.name)
			}
			time.Sleep(50 * time.Millisecond)
		}
		h.r.DeleteZombies++
		h.logf("SIGCONT %s after the delete job went on without it", w.name)
		return w.signal(syscall.SIGCONT)
	}
	return fmt.Errorf("no worker ran the delete job within %v", h.cfg.DrainTimeout)
}

// drain waits for the jobs to settle, pulling retry times forward.
func (h *harness) drain(ctx context.Context) error {
	tick := func() {
		n, _ := checks.FastForward(ctx, h.op)
		h.r.FastForwards += n
	}
	_, err := checks.WaitDrained(ctx, h.ro, 2*time.Second, h.cfg.DrainTimeout, tick)
	return err
}

// killDuringDelete SIGKILLs the worker running the delete job, DeleteKills
// times, at random moments while it has files left.
func (h *harness) killDuringDelete(ctx context.Context, jobID int64) error {
	for h.r.DeleteKills < h.cfg.DeleteKills {
		time.Sleep(time.Duration(h.rng.Int64N(int64(60*time.Millisecond))) + 10*time.Millisecond)
		status, owner, left, err := h.deleteState(ctx, jobID)
		if err != nil {
			return err
		}
		if n, _ := checks.FastForward(ctx, h.op); n > 0 {
			h.r.FastForwards += n
		}
		switch {
		case left == 0, protocol.JobStatus(status).Terminal():
			return nil // done (or failed, which checkDeleteJob reports) before all kills landed
		case status != string(protocol.JobRunning) || owner == "":
			continue
		}
		for _, slot := range []string{"a", "b"} {
			if w := h.c.worker(slot); w.name == owner {
				w.kill()
				h.r.DeleteKills++
				h.logf("SIGKILL %s during the delete job (%d copies left)", w.name, left)
				if _, err := h.c.startWorker(slot); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkDeleteJob: the job completed with an outcome for every copy. A copy
// of a group the user changed may stay (last_copy, changed_since_plan);
// every other copy is trashed.
func (h *harness) checkDeleteJob(ctx context.Context, jobID int64, plan planReply, user *userWriter) checks.Check {
	c := checks.Check{Name: "the delete job completed, every copy accounted for"}
	var status string
	if err := h.ro.QueryRowContext(ctx, `SELECT status FROM jobs WHERE id = ?`, jobID).Scan(&status); err != nil {
		c.Detail = err.Error()
		return c
	}
	copies, trashed, kept := 0, 0, 0
	var bad []string
	for _, g := range plan.Groups {
		changed := user.touched(g.Keep.RelativePath)
		for _, r := range g.Remove {
			changed = changed || user.touched(r.RelativePath)
		}
		for _, r := range g.Remove {
			copies++
			switch {
			case r.Outcome == "trashed":
				trashed++
			case changed && (r.Outcome == "last_copy" || r.Outcome == "changed_since_plan"):
				kept++
			default:
				bad = append(bad, r.RelativePath+" "+r.Outcome)
			}
		}
	}
	c.OK = status == "completed" && len(bad) == 0 && trashed > 0
	c.Detail = fmt.Sprintf("%s; %d copies: %d trashed, %d kept in groups the user changed; %d workerd SIGKILLs and %d SIGSTOP zombies mid-plan",
		status, copies, trashed, kept, h.r.DeleteKills, h.r.DeleteZombies)
	if len(bad) > 0 {
		c.Detail += "; wrong: " + strings.Join(bad[:min(len(bad), 5)], ", ")
	}
	return c
}

type planReply struct {
	ID     int64 `json:"id"`
	Groups []struct {
		Keep struct {
			RelativePath string `json:"relative_path"`
		} `json:"keep"`
		Remove []struct {
			RelativePath string `json:"relative_path"`
			Outcome      string `json:"outcome"`
		} `json:"remove"`
	} `json:"groups"`
}

// checkPlanned: each keeper is in place, each copy in exactly one place
// (its path or the job's trash), every byte as before; a file the user
// changed holds the user's bytes at its path, and only a planned copy's
// original bytes may be in the trash.
func checkPlanned(dir string, jobID int64, plan planReply, before map[string]string, user *userWriter) checks.Check {
	c := checks.Check{Name: "every planned file in exactly one place, bytes unchanged; no keeper moved; the user's files where the user wrote them"}
	trash := filepath.Join(protocol.TrashDir, strconv.FormatInt(jobID, 10))
	want := user.expected(before)
	var bad []string
	files := 0
	for _, g := range plan.Groups {
		if sum(dir, g.Keep.RelativePath) != want[g.Keep.RelativePath] {
			bad = append(bad, "keeper "+g.Keep.RelativePath)
		}
		for _, r := range g.Remove {
			files++
			here, there := sum(dir, r.RelativePath), sum(dir, filepath.Join(trash, r.RelativePath))
			switch {
			case user.touched(r.RelativePath):
				if here != want[r.RelativePath] || (there != "" && there != before[r.RelativePath]) {
					bad = append(bad, fmt.Sprintf("%s, changed by the user (at its path %v, in trash %v, outcome %s)", r.RelativePath, here != "", there != "", r.Outcome))
				}
			case (here == "") == (there == "") || here+there != before[r.RelativePath]:
				bad = append(bad, fmt.Sprintf("%s (in place %v, in trash %v, outcome %s)", r.RelativePath, here != "", there != "", r.Outcome))
			}
		}
	}
	c.OK = len(bad) == 0 && files > 0
	c.Detail = fmt.Sprintf("%d groups, %d copies, %d files changed by the user", len(plan.Groups), files, len(user.wrote))
	if len(bad) > 0 {
		c.Detail += "; wrong: " + strings.Join(bad[:min(len(bad), 5)], ", ")
	}
	return c
}

// sum is the sha256 of dir/rel, or "" when it is not there.
func sum(dir, rel string) string {
	data, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		return ""
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// fileSums is the sha256 of every regular file under dir outside the
// trash, by relative path.
func fileSums(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == protocol.TrashDir {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out[rel] = sum(dir, rel)
		}
		return nil
	})
	return out, err
}

// writeDupes writes groups of two or three identical files of 8 to 40 KiB,
// each copy with its own mtime (the first the oldest).
func writeDupes(dir string, groups int, rng *rand.Rand) error {
	for g := range groups {
		data := make([]byte, 8<<10+rng.IntN(32<<10))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		for i := range 2 + rng.IntN(2) {
			p := filepath.Join(dir, fmt.Sprintf("g%03d", g), fmt.Sprintf("copy %d.cbz", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				return err
			}
			mtime := time.Date(2020, 1, 1+i, 0, 0, 0, 0, time.UTC)
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				return err
			}
		}
	}
	return nil
}
