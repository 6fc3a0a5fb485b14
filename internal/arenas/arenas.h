// BINDERY_ARENAS is the glibc malloc arena limit workerd sets at start.
#define BINDERY_ARENAS 2

int bindery_arenas(void);
int bindery_count_arenas(int threads);
