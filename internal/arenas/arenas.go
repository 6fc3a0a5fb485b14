// Package arenas limits glibc's malloc arenas in the process that links it
// to Default, as the program is loaded, before any thread starts: workerd
// imports it.
//
// Why: glibc gives threads that malloc at the same time arenas of their own,
// up to 8 per core. In workerd the C side is SQLite's page caches (the
// writer's and each reader's) and libvips' renders, reached from whichever
// threads cgo calls land on, so the same ~30 MB of cache ends up spread over
// seven arenas, each with its own free space and fragmentation: 114 and
// 123 MB of peak RSS scanning and hashing 100,000 books against 103 and
// 102 MB with two arenas, same code, scan, hash and cover-render times and
// the renders' CPU time within noise (docs/PERFORMANCE-NOTES.md, seventh
// session).
//
// Override: glibc's own MALLOC_ARENA_MAX=N (or the glibc.malloc.arena_max
// tunable in GLIBC_TUNABLES) in the environment wins, and the limit is
// left to glibc; MALLOC_ARENA_MAX=0 is outside the tunable's range, which
// glibc ignores, so it brings back glibc's default (8 per core). Other C
// libraries (musl) have one allocator design; nothing is set there.
package arenas

// #include "arenas.h"
import "C"

// Default is the arena limit set at start when the environment names none.
const Default = C.BINDERY_ARENAS

// Limit is what was done at start: Default when the limit was set, 0 when
// MALLOC_ARENA_MAX or GLIBC_TUNABLES named one and glibc's own handling
// was left in place, -1 when the C library is not glibc.
func Limit() int { return int(C.bindery_arenas()) }

// count starts threads C threads that each malloc and stay alive until
// all have, then returns how many arenas glibc has made in this process
// (the main one included), from malloc_info; -1 when not glibc. For tests.
func count(threads int) int { return int(C.bindery_count_arenas(C.int(threads))) }
