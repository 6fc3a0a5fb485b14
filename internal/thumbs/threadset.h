// bindery_threadset_guarded is 1 when this libvips' thread set races
// (8.14.1 to 8.15.3) and its idle threads are kept: see threadset.go.
int bindery_threadset_guarded(void);

// bindery_vips_version is the libvips the program runs with, as
// major*10000 + minor*100 + micro.
int bindery_vips_version(void);
