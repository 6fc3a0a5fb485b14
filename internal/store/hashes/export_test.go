package hashes

// FewDueMax is fewDue's bound as New sets it.
const FewDueMax = fewDueMax

// SetFewDueMax sets how many due files s's hash queries start from
// (fewDue), so that tests can run both query plans on one database.
func SetFewDueMax(s *Store, n int) *Store { s.fewDueMax = n; return s }
