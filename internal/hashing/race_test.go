//go:build race

package hashing

// raceEnabled: the race detector slows the sparse-file test ~3x.
const raceEnabled = true
