package store

// FewDueMax is fewDue's bound as the store opens with it.
const FewDueMax = fewDueMax

// SetFewDueMax sets how many due files a hash job's queries start from
// (fewDue), so that tests can run both query plans on one database.
func SetFewDueMax(s *Store, n int) { s.fewDueMax = n }
