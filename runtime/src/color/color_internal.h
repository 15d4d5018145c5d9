/* Internal declarations shared by the coloring allocator (color.c) and its OS layer
 * (prim_linux.c). Not installed; users include tlblab/color.h only. */
#ifndef TLBLAB_COLOR_INTERNAL_H
#define TLBLAB_COLOR_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Storage for one mutex, opaque to color.c so that only prim_linux.c includes pthread.h.
 * prim_linux.c checks at compile time that a pthread_mutex_t fits. */
typedef struct tlb_prim_mutex {
    _Alignas(16) unsigned char bytes[64];
} tlb_prim_mutex_t;

/* One reservation made by tlb_prim_reserve(): what to unmap at the end. */
typedef struct tlb_prim_region {
    void *map;          /* the colored region's mapping (base .. base+size) */
    size_t map_len;
    void *handle_map;   /* the mapping that holds the handle page */
    size_t handle_len;  /* 0 when the handle page is part of `map`'s original reservation */
} tlb_prim_region_t;

/* Reserve `size` bytes at an address aligned to `align` (a power of two >= 4096), plus one 4 KiB
 * page for the arena handle. For page_shift == 12 the handle page is the page right below the
 * base; for huge pages it is a separate 4 KiB mapping. THP is switched off for 4 KiB arenas; huge
 * arenas are backed by hugetlbfs (or THP when allow_thp). The region is pre-faulted and, when
 * do_mlock, locked. On success returns 0 and fills *region, *base, *handle_page, *backing
 * (0 = 4 KiB, 1 = hugetlbfs, 2 = THP). On failure returns -1 with a message in err. */
int tlb_prim_reserve(size_t size, size_t align, unsigned page_shift, int allow_thp, int do_mlock,
                     tlb_prim_region_t *region, uintptr_t *base, void **handle_page, int *backing,
                     char *err, size_t err_len);

/* Unmap what tlb_prim_reserve() mapped. */
void tlb_prim_release(tlb_prim_region_t *region);

/* Mutex operations on opaque storage (process-private, default attributes). */
int tlb_prim_mutex_init(tlb_prim_mutex_t *m);
void tlb_prim_mutex_destroy(tlb_prim_mutex_t *m);
void tlb_prim_mutex_lock(tlb_prim_mutex_t *m);
void tlb_prim_mutex_unlock(tlb_prim_mutex_t *m);

#endif
