// Package pipeline overlaps a job's three kinds of work, the queries that
// page through its rows, the reads of the files, and the writes of the
// results, so that none of them waits for the others: a scan's analysis
// and a hash job's passes read batch k+1 while batch k is committed.
package pipeline

// Behind runs one write at a time behind the work that produced it, so
// that readers and hashers never wait on the database: batch k is
// committed while batch k+1 is read. The zero value is ready.
type Behind struct{ done chan error }

// Start runs fn; the caller waits for the previous one first.
func (b *Behind) Start(fn func() error) {
	b.done = make(chan error, 1)
	go func() { b.done <- fn() }()
}

// Wait waits for the write under way, if any (waited is false when there
// was none), and returns its error.
func (b *Behind) Wait() (waited bool, err error) {
	if b.done == nil {
		return false, nil
	}
	err = <-b.done
	b.done = nil
	return true, err
}
