//go:build !race

package hashing

const raceEnabled = false
