// A workaround for a race in libvips 8.14.1 to 8.15.3's thread set (see
// threadset.go for the why). This file defines vips_semaphore_down_timeout,
// which the program then exports in place of libvips' own: libvips calls
// it through its PLT, so the definition in the executable wins.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <vips/vips.h>

#include "threadset.h"

int bindery_vips_version(void) { return vips_version(0) * 10000 + vips_version(1) * 100 + vips_version(2); }

static int (*bindery_real_down_timeout)(VipsSemaphore *, gint64);
static int bindery_guard_on;

// Resolved as the program loads, before any thread can wait: libvips is
// loaded by then (the program links it), and vips_version only reads
// constants.
__attribute__((constructor)) static void bindery_threadset_init(void) {
	bindery_real_down_timeout = (int (*)(VipsSemaphore *, gint64)) dlsym(RTLD_NEXT, "vips_semaphore_down_timeout");
	int v = bindery_vips_version();
	bindery_guard_on = v >= 81401 && v < 81504;
}

// vips_semaphore_down_timeout is libvips' own, except that where the
// thread set races (bindery_guard_on) the wait has no timeout: an idle
// libvips worker thread waits for its next task instead of leaving.
// libvips 8.14.1 to 8.15.3 call it from the thread set alone.
int vips_semaphore_down_timeout(VipsSemaphore *s, gint64 timeout) {
	if (bindery_guard_on || bindery_real_down_timeout == NULL)
		return vips_semaphore_down(s);
	return bindery_real_down_timeout(s, timeout);
}

int bindery_threadset_guarded(void) { return bindery_guard_on; }
