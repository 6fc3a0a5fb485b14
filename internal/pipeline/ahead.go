package pipeline

// Ahead is a keyset walk over the table (id order, a page at a time) whose
// next page is fetched while the caller works on the current one: the
// query of page k+1 runs on a reader connection beside the reads and the
// digests of page k, instead of the two taking turns. A warm hash job of
// 100,000 small files spent about a third of its time in its queries,
// every one of them waited for by every reader.
//
// Fetching early returns the same rows as fetching late: what a page
// selects depends on the rows after the previous page's last id, and the
// commits of the pages before change nothing a page's query tests (a
// digest or a retry time of an earlier row, never a size, a partial
// digest or a presence).
type Ahead[T any] struct {
	fetch func(afterID int64) ([]T, error)
	id    func(T) int64
	next  chan fetched[T] // nil: the walk has ended
}

type fetched[T any] struct {
	rows []T
	err  error
}

// WalkAhead starts a walk after id 0; fetch returns the page after an id.
func WalkAhead[T any](id func(T) int64, fetch func(afterID int64) ([]T, error)) *Ahead[T] {
	a := &Ahead[T]{fetch: fetch, id: id}
	a.start(0)
	return a
}

func (a *Ahead[T]) start(afterID int64) {
	a.next = make(chan fetched[T], 1)
	go func(ch chan<- fetched[T]) {
		rows, err := a.fetch(afterID)
		ch <- fetched[T]{rows, err}
	}(a.next)
}

// Next returns the next page and starts fetching the one after it; an
// empty page or an error ends the walk. A short page does not: rows a
// scan inserted meanwhile come after it.
func (a *Ahead[T]) Next() ([]T, error) {
	if a.next == nil {
		return nil, nil
	}
	p := <-a.next
	a.next = nil
	if p.err == nil && len(p.rows) > 0 {
		a.start(a.id(p.rows[len(p.rows)-1]))
	}
	return p.rows, p.err
}

// Stop waits for a fetch under way, so that no query of the walk outlives
// it; the caller's context decides how soon that fetch returns.
func (a *Ahead[T]) Stop() {
	if a.next != nil {
		<-a.next
		a.next = nil
	}
}
