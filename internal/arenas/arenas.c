// The C half of package arenas: see arenas.go.

#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <pthread.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "arenas.h"

static int bindery_arenas_limit = -1;

// bindery_limit_arenas runs as the program is loaded, before the Go
// runtime, libvips or SQLite start a thread: a thread's arena is fixed at
// its first malloc, so a limit set later would leave the arenas already
// made. glibc's own MALLOC_ARENA_MAX (or the arena_max tunable) wins:
// glibc has applied it by now and it is left alone.
__attribute__((constructor)) static void bindery_limit_arenas(void) {
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
	const char *own = getenv("MALLOC_ARENA_MAX");
	const char *tun = getenv("GLIBC_TUNABLES");
	if ((own != NULL && *own != '\0') || (tun != NULL && strstr(tun, "glibc.malloc.arena_max") != NULL)) {
		bindery_arenas_limit = 0;
		return;
	}
	if (mallopt(M_ARENA_MAX, BINDERY_ARENAS) == 1)
		bindery_arenas_limit = BINDERY_ARENAS;
#endif
}

int bindery_arenas(void) { return bindery_arenas_limit; }

// What bindery_count_arenas' threads share: each mallocs once (which
// binds it to an arena, a new one while the limit allows), then waits
// until all have, so none hands its arena back before the last is bound.
// The blocks are kept in the struct so that the compiler cannot drop the
// malloc/free pair.
struct bindery_arena_probe {
	pthread_barrier_t all_bound;
	void *volatile block[64];
	volatile int next;
	pthread_mutex_t mu;
};

static void *bindery_arena_probe_thread(void *arg) {
	struct bindery_arena_probe *p = arg;
	void *m = malloc(4096);
	pthread_mutex_lock(&p->mu);
	p->block[p->next++] = m;
	pthread_mutex_unlock(&p->mu);
	pthread_barrier_wait(&p->all_bound);
	return NULL;
}

int bindery_count_arenas(int threads) {
#ifdef __GLIBC__
	struct bindery_arena_probe p;
	pthread_t t[64];
	if (threads < 1 || threads > 64)
		return -1;
	memset(&p, 0, sizeof p);
	pthread_mutex_init(&p.mu, NULL);
	if (pthread_barrier_init(&p.all_bound, NULL, (unsigned)threads + 1) != 0)
		return -1;
	int started = 0;
	for (; started < threads; started++)
		if (pthread_create(&t[started], NULL, bindery_arena_probe_thread, &p) != 0)
			break;
	if (started < threads) { // the barrier would never open
		pthread_barrier_destroy(&p.all_bound);
		return -1;
	}
	pthread_barrier_wait(&p.all_bound);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < p.next; i++)
		free(p.block[i]);
	pthread_barrier_destroy(&p.all_bound);
	pthread_mutex_destroy(&p.mu);
	// malloc_info lists one <heap nr="N"> per arena, the main one included.
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL)
		return -1;
	malloc_info(0, f);
	fclose(f);
	int n = 0;
	for (char *s = buf; (s = strstr(s, "<heap nr=")) != NULL; s++)
		n++;
	free(buf);
	return n;
#else
	(void)threads;
	return -1;
#endif
}
