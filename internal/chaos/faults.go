package chaos

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/bindery-nas/bindery/internal/chaos/internal/checks"
)

// faults injects the configured kills, the controld kills spread among
// them, and the zombie halfway through.
func (h *harness) faults(ctx context.Context) error {
	zombie := false
	for h.r.WorkerKills < h.cfg.WorkerKills || h.r.ControlKills < h.cfg.ControlKills || !zombie {
		if err := h.pause(ctx); err != nil {
			return err
		}
		if err := h.keepBusy(ctx); err != nil {
			return err
		}
		if err := h.interruptHash(ctx); err != nil {
			return err
		}
		kills := h.r.WorkerKills
		switch {
		case !zombie && kills >= h.cfg.WorkerKills/2:
			ok, err := h.zombie(ctx)
			if err != nil {
				return err
			}
			zombie = ok
		case h.r.ControlKills < h.cfg.ControlKills && kills >= (h.r.ControlKills+1)*h.cfg.WorkerKills/(h.cfg.ControlKills+1):
			if err := h.killControl(ctx); err != nil {
				return err
			}
		case kills < h.cfg.WorkerKills:
			if err := h.killWorker(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *harness) pause(ctx context.Context) error {
	d := h.cfg.MinGap + time.Duration(h.rng.Int64N(int64(h.cfg.MaxGap-h.cfg.MinGap)))
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	n, err := checks.FastForward(ctx, h.op)
	h.r.FastForwards += n
	return err
}

// keepBusy gives the workers something to lose when the pipeline has run
// dry before the faults are done: it switches hash.algorithm (every file
// is rehashed) and asks for a hash and, once it runs, a rescan it yields
// to. The final phase switches back, so the end state is comparable with
// the clean run.
func (h *harness) keepBusy(ctx context.Context) error {
	b, err := checks.ReadBacklog(ctx, h.ro)
	if err != nil || !b.Drained() {
		return err
	}
	alg := []string{"sha256", "blake3"}[h.r.Reworks%2]
	h.r.Reworks++
	h.logf("pipeline drained: rework %d, hash.algorithm=%s", h.r.Reworks, alg)
	if err := h.c.api(ctx, "PATCH", "/settings", map[string]any{"hash.algorithm": alg}, nil); err != nil {
		return err
	}
	if err := h.c.api(ctx, "POST", "/jobs", map[string]any{"kind": "hash", "library_id": h.lid}, nil); err != nil {
		return err
	}
	// The scan is asked for once the hash runs, so that the hash yields.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := h.ro.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE kind = 'hash' AND status = 'running'`).Scan(&n); err == nil && n > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return h.c.requestScan(ctx, h.lid)
}

// interruptHash asks for a scan in every other round that finds a hash job
// running, so that the hash yields and the kills that follow land on a
// yield and on the re-requested hash.
func (h *harness) interruptHash(ctx context.Context) error {
	var n int
	err := h.ro.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE kind = 'hash' AND status = 'running'`).Scan(&n)
	if err != nil || n == 0 || h.rng.IntN(2) == 0 {
		return err
	}
	h.logf("scan requested while a hash runs")
	return h.c.requestScan(ctx, h.lid)
}

// killWorker SIGKILLs a random worker and starts its next incarnation
// after a random delay. Until VideoKills such kills landed, it first waits
// a little for a worker running ffprobe or ffmpeg (in turn) and kills that
// one.
func (h *harness) killWorker(ctx context.Context) error {
	var slot string
	var child videoProc
	if h.r.VideoKills < h.cfg.VideoKills {
		slot, child = h.videoVictim(ctx, 2*time.Second)
	}
	if slot == "" {
		slot = h.victim()
	}
	return h.killSlot(slot, child)
}

// killSlot SIGKILLs the worker of slot, running child when that is set,
// checks that no ffmpeg/ffprobe outlives it, and starts the slot's next
// incarnation after a random delay.
func (h *harness) killSlot(slot string, child videoProc) error {
	w := h.c.worker(slot)
	held, _ := h.held(w.name)
	w.kill()
	h.r.WorkerKills++
	if len(held) > 0 {
		h.r.KillsWithWork++
	}
	if child.pid != 0 {
		h.r.VideoKills++
		h.videoKilled = append(h.videoKilled, fmt.Sprintf("%s with its %s", w.name, child.comm))
		h.logf("SIGKILL %s (held %d rows) while its %s", w.name, len(held), child)
	} else {
		h.logf("SIGKILL %s (held %d rows)", w.name, len(held))
	}
	h.checkOrphans(h.c, 2*time.Second)
	time.Sleep(time.Duration(h.rng.Int64N(int64(800 * time.Millisecond))))
	_, err := h.c.startWorker(slot)
	return err
}

// videoKills tops up the kills of workers running ffprobe or ffmpeg when
// the faults ended before VideoKills of them landed: a scan slow with
// probes takes most kills, so the covers' ffmpeg runs come after. For up
// to a minute, while video work is left or may still come (a scan is
// not done), it waits for such a run and kills its worker.
func (h *harness) videoKills(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for h.r.VideoKills < h.cfg.VideoKills && time.Now().Before(deadline) {
		probes, frames, scans, err := h.videoWork(ctx)
		if err != nil || probes+frames+scans == 0 {
			return err
		}
		n, _ := checks.FastForward(ctx, h.op)
		h.r.FastForwards += n
		slot, child := h.videoVictim(ctx, 2*time.Second)
		if slot == "" {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if err := h.killSlot(slot, child); err != nil {
			return err
		}
	}
	return nil
}

// victim picks the worker to kill: three times out of four one that holds
// a lease when any does (a kill of an idle worker proves little), else
// either.
func (h *harness) victim() string {
	slots := []string{"a", "b"}
	if h.rng.IntN(4) > 0 {
		var busy []string
		for _, s := range slots {
			if held, _ := h.held(h.c.worker(s).name); len(held) > 0 {
				busy = append(busy, s)
			}
		}
		if len(busy) > 0 {
			return busy[h.rng.IntN(len(busy))]
		}
	}
	return slots[h.rng.IntN(2)]
}

func (h *harness) killControl(ctx context.Context) error {
	d := h.c.control()
	d.kill()
	h.r.ControlKills++
	h.logf("SIGKILL %s", d.name)
	time.Sleep(time.Duration(h.rng.Int64N(int64(time.Second))))
	return h.c.startControl(ctx)
}

// held lists the rows worker id holds right now.
func (h *harness) held(id string) ([]checks.RowKey, error) {
	all := map[checks.RowKey]string{}
	if err := h.smp.Running(context.Background(), all); err != nil {
		return nil, err
	}
	var out []checks.RowKey
	for k, w := range all {
		if w == id {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table+fmt.Sprint(out[i].ID) < out[j].Table+fmt.Sprint(out[j].ID) })
	return out, nil
}
