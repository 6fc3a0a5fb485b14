package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// service is one periodic loop (River's maintenance-service shape): it
// runs fn once at start, then every period plus jitter, and at once when
// kicked. An error or a panic of fn is logged and counted, never fatal:
// the next tick simply tries again.
type service struct {
	name   string
	period time.Duration
	jitter float64
	fn     func(ctx context.Context) (items int64, err error)
	kick   chan struct{}
	log    *slog.Logger
	m      *metrics
}

func newService(name string, period time.Duration, fn func(context.Context) (int64, error), s *Scheduler) *service {
	return &service{
		name: name, period: period, jitter: s.cfg.Jitter, fn: fn,
		kick: make(chan struct{}, 1),
		log:  s.cfg.Logger.With("service", name),
		m:    s.metrics,
	}
}

// Kick wakes the loop without waiting for its period; it never blocks.
func (sv *service) Kick() {
	select {
	case sv.kick <- struct{}{}:
	default:
	}
}

func (sv *service) run(ctx context.Context) {
	for {
		sv.tick(ctx)
		t := time.NewTimer(sv.next())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-sv.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

func (sv *service) next() time.Duration {
	return sv.period + time.Duration(rand.Float64()*sv.jitter*float64(sv.period))
}

func (sv *service) tick(ctx context.Context) {
	defer func() {
		if r := recover(); r != nil {
			sv.m.errors.WithLabelValues(sv.name).Inc()
			sv.log.Error("scheduler service panicked", "panic", fmt.Sprint(r))
		}
	}()
	start := time.Now()
	n, err := sv.fn(ctx)
	sv.m.runs.WithLabelValues(sv.name).Inc()
	sv.m.duration.WithLabelValues(sv.name).Observe(time.Since(start).Seconds())
	if n > 0 {
		sv.m.items.WithLabelValues(sv.name).Add(float64(n))
	}
	if err != nil && ctx.Err() == nil {
		sv.m.errors.WithLabelValues(sv.name).Inc()
		sv.log.Warn("scheduler service failed; retrying next tick", "err", err)
		return
	}
	if n > 0 {
		sv.log.Debug("scheduler service worked", "items", n, "took", time.Since(start))
	}
}

type metrics struct {
	runs, errors, items *prometheus.CounterVec
	duration            *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bindery_scheduler_runs_total", Help: "Ticks run by each scheduler service.",
		}, []string{"service"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bindery_scheduler_errors_total", Help: "Ticks of each scheduler service that failed or panicked.",
		}, []string{"service"}),
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bindery_scheduler_items_total",
			Help: "Rows each scheduler service acted on (promoted, requested, recovered, requeued, deleted, admitted).",
		}, []string{"service"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "bindery_scheduler_tick_seconds", Help: "Duration of one tick of each scheduler service.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}, []string{"service"}),
	}
	var err error
	if m.runs, err = register(reg, m.runs); err != nil {
		return nil, err
	}
	if m.errors, err = register(reg, m.errors); err != nil {
		return nil, err
	}
	if m.items, err = register(reg, m.items); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or reuses the collector already registered under
// its name (a scheduler restarted in the same process).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	if err != nil {
		return c, fmt.Errorf("register scheduler metrics: %w", err)
	}
	return c, nil
}
