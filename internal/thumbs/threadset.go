package thumbs

/*
#cgo pkg-config: vips
#include "threadset.h"
*/
import "C"

// libvips 8.14.1 to 8.15.3 (Debian 12 ships 8.14.1) run every pipeline's
// workers on a thread set whose idle threads leave after 15 seconds
// without work. A thread whose wait has just timed out is still on the
// set's free list until it takes the set's lock to leave; a pipeline that
// starts in that moment is handed that thread. Its task is then lost, and
// the pipeline waits for it forever; or the thread frees itself before the
// task is written into it, and the write and the semaphore's unlock land
// in freed memory. That is the crash workerd showed twice in the chaos
// smoke (a SIGSEGV in malloc, under a WebP encode, reading a free list
// whose link had been zeroed; earlier a SIGABRT from malloc), seen only on
// a loaded machine, where the leaving thread can be descheduled inside the
// window. libvips 8.15.4 rewrote the thread set (libvips#4137); 8.14.0
// had no idle timeout.
//
// The race needs the timeout: threadset.c replaces the one function
// libvips waits with, vips_semaphore_down_timeout, by a wait without one
// on the versions that race, so idle worker threads stay. They are as many
// as the most pipelines that ever ran at once: a few threads, each
// holding little more than its stack. (Measured: a C program that pauses
// a thread 300 ms after its wait timed out, and starts a pipeline in that
// pause, hangs every time.)

// threadsetGuarded says whether idle libvips worker threads are kept
// because this libvips' thread set races.
func threadsetGuarded() bool { return C.bindery_threadset_guarded() == 1 }

// vipsVersion is the libvips the program runs with, as major*10000 +
// minor*100 + micro.
func vipsVersion() int { return int(C.bindery_vips_version()) }
