/* OS primitives of the mosaic allocator (mosaic.c), for Linux in prim_linux.c. Internal. None of them
 * calls malloc: the preloaded allocator uses them before (and while) it is the program's malloc.
 * All return 0 (or a byte count) or a negative errno. */
#ifndef TLBLAB_MOSAIC_PRIM_H
#define TLBLAB_MOSAIC_PRIM_H

#include <stddef.h>
#include <stdint.h>

/* `size` bytes read-write, private, anonymous, not committed (MAP_NORESERVE), at an address that is
 * a multiple of `align` (a power of two >= 4 KiB), near `hint` when that is free. */
int mosaic_prim_reserve(uintptr_t hint, size_t size, size_t align, void **out);
int mosaic_prim_release(void *p, size_t size);
/* `size` bytes at `at` (replacing what is there: MAP_FIXED), private and anonymous, in hugetlb pages
 * of 1 << `shift` bytes (MAP_HUGETLB | MAP_HUGE_*), their reservation taken now (no MAP_NORESERVE).
 * On failure the range may be unmapped: the caller maps it again (mosaic_prim_map_plain). */
int mosaic_prim_map_hugetlb(void *at, size_t size, unsigned shift);
/* `size` bytes at `at` (MAP_FIXED), private, anonymous, 4 KiB pages, committed (no MAP_NORESERVE, so
 * the kernel keeps it a mapping of its own beside the pool's: smaps shows it apart), falling back to
 * MAP_NORESERVE when the commit is refused. */
int mosaic_prim_map_plain(void *at, size_t size);
/* madvise(2): MADV_HUGEPAGE when huge, else MADV_NOHUGEPAGE. */
int mosaic_prim_page_size(void *p, size_t size, int huge);
/* madvise(MADV_DONTNEED): the pages go back to the kernel, the range reads as zeros. */
int mosaic_prim_discard(void *p, size_t size);
int mosaic_prim_protect(void *p, size_t size, int prot);
/* Reads at most `cap` bytes of `path` into `buf`; the count, or -EFBIG if the file is larger. */
long mosaic_prim_read_file(const char *path, char *buf, size_t cap);
/* Opens `path` for reading (a /proc file); the fd, read with mosaic_prim_read, closed with _close. */
int mosaic_prim_open(const char *path);
long mosaic_prim_read(int fd, char *buf, size_t cap);
void mosaic_prim_close(int fd);
/* pread(2): at most `cap` bytes of fd at byte offset `off`; the count or -errno. */
long mosaic_prim_pread(int fd, void *buf, size_t cap, uint64_t off);

#endif
