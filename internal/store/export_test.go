package store

// SetFewDueMax sets how many due files a hash job's queries start from
// (fewDue), so that tests can run both query plans on one database.
func SetFewDueMax(s *Store, n int) { s.fewDueMax = n }
