/* tlblab/color.h — the TLB-coloring allocator of libtlblab (seed 003, Panchamukhi 2014).
 *
 * A colored arena hands out memory whose pages are guaranteed to map to chosen sets of one
 * set-associative TLB level ("colors"): two allocations of different small colors can never share
 * a TLB set, so tasks that allocate from different colors cannot evict each other's translations
 * (seed 003 Ch. 3). The color of a page is a function of its virtual address only, so this works on
 * a stock Linux kernel, with no kernel patch.
 *
 * Geometry (seed 003 Ch. 3, Fig. 3.2). A TLB level with M sets and N ways, indexed by the virtual
 * address bits [index_shift, index_shift + log2 M). A "slot" is the 2^index_shift bytes of virtual
 * address space that share one set (one page when the set index starts right above the page offset).
 * R of the M sets are reserved for allocations larger than a slot:
 *   - small colors: M - R of them (seed eq. 3.2); small color c owns set R + c. An allocation of a
 *     small color lies inside one slot of that set, so it is at most one slot (seed eq. 3.1 with R=1).
 *   - large colors: one per period of the arena (seed Corollary 1: N of them when periods = ways);
 *     large color l owns the run of R consecutive slots (sets 0..R-1) of period l, so it can serve a
 *     contiguous allocation of up to R slots (seed eq. 3.1). Large colors share the reserved sets, but
 *     each holds exactly one entry per reserved set, so while periods <= ways they never evict one
 *     another.
 * The arena is `periods` consecutive copies of the M slots ("periods"); each small color therefore
 * has `periods` slots. With periods <= ways, one color's slots all fit in its set at once.
 *
 * Algorithm. Unlike the seed's first-fit list walk (seed 003 §4.0.3, Alg. 1), each color is a
 * two-level segregated-fit heap (TLSF-style) whose pools are the color's slots (or its run): malloc,
 * free, calloc's bookkeeping, aligned allocation and an in-place realloc take constant time,
 * independent of how many blocks exist. The exact placement rule is documented in docs/color.md.
 * The per-color control block lives at the start of the color's first slot, so an operation on a
 * color touches only pages of that color plus the arena handle's page (whose TLB set is reported by
 * tlb_arena_info(): it is the last set, M-1, i.e. the last small color).
 *
 * Memory. The arena is reserved with one mmap, its base aligned to a period, transparent huge pages
 * are switched off for it (MADV_NOHUGEPAGE; for huge-page slots it is backed by huge pages instead),
 * and it is pre-faulted (MADV_POPULATE_WRITE, or by touching every page), optionally mlock()ed.
 * Nothing after tlb_arena_create() makes a system call or takes a page fault; running out of memory
 * is a NULL return counted in the diagnostics, never a signal.
 *
 * Thread safety. By default an arena is NOT thread-safe and takes no locks (real-time path): the
 * caller serialises all calls on one arena. With TLB_ARENA_LOCKED, every call locks a mutex that
 * belongs to the color it works on (kept inside that color's control block), so threads that use
 * different colors never contend; tlb_arena_check() and tlb_arena_destroy() must still not race with
 * other calls.
 *
 * Prefix: every symbol is tlb_ / TLB_. All sizes are in bytes.
 */
#ifndef TLBLAB_COLOR_H
#define TLBLAB_COLOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Alignment of every pointer returned by tlb_malloc/tlb_calloc/tlb_realloc (16 B on all targets). */
#define TLB_ALIGNMENT 16u

/* Flags of tlb_geometry_t.flags. */
#define TLB_ARENA_LOCKED 0x1u  /* per-color mutex around every call (see "Thread safety") */
#define TLB_ARENA_MLOCK 0x2u   /* mlock() the arena after pre-faulting (fails if RLIMIT_MEMLOCK is low) */
#define TLB_ARENA_HUGE_THP 0x4u /* huge slots: allow transparent huge pages when hugetlbfs has no pool */

/* Error codes returned by tlb_arena_create() (through *err) and tlb_arena_check(). */
typedef enum tlb_status {
    TLB_OK = 0,
    TLB_EINVAL = 1,   /* a geometry field is out of range (the message says which) */
    TLB_ENOMEM = 2,   /* mmap/madvise/mlock failed (the message has the errno text) */
    TLB_ECORRUPT = 3  /* tlb_arena_check(): an invariant does not hold (the message says which) */
} tlb_status_t;

/* The TLB level to color and how to lay the arena out. */
typedef struct tlb_geometry {
    uint32_t sets;          /* M: number of sets of the colored TLB level; power of two, 2..65536 */
    uint32_t ways;          /* N: associativity; >= 1 (used for the isolation check and defaults) */
    uint32_t page_shift;    /* log2 of the page size the level translates: 12 (4 KiB), 21, 30 */
    uint32_t index_shift;   /* lowest virtual-address bit of the set index; >= page_shift.
                               0 means page_shift (the usual "low VPN bits" index) */
    uint32_t reserved_sets; /* R: sets reserved for allocations larger than a slot; 0..sets-1 */
    uint32_t periods;       /* copies of the M slots in the arena = slots per small color and the
                               number of large colors; 0 means `ways`. periods > ways is allowed
                               but then one color's slots can evict each other */
    uint32_t flags;         /* TLB_ARENA_* */
} tlb_geometry_t;

/* Fill the sets, ways, page_shift and index_shift of *geometry from a tlblab machine file (TOML:
 * a preset of presets/, or what `tlblab probe --out host.toml` writes), leaving its other fields
 * as they are. The level colored is the set-associative data or unified TLB level translating
 * 4 KiB pages with the most entries (the L2 DTLB: a fully associative level cannot be colored).
 * Reads the `[[tlb]]` tables' `level`, `kind`, `entries`, `ways`, `page_sizes` and index (a
 * `[tlb.index]` sub-table or an inline `index = {...}`: `type`, `a`, `b`); everything else is
 * skipped. Arrays may span lines, as machine_toml writes them. Index "low_bits" (the default):
 * sets = entries / ways, index_shift = 0. Index "xor" with adjacent ranges a and b of log2(sets)
 * bits each (the probe's measured STLB on the Intel VM: bits 12-18 XOR 19-25): colors are all the
 * bits the hash reads, so sets = 2^(2 log2(sets)) (16384 there; pages of one color share one set,
 * and sets-many colors share each set), index_shift = the lower range's first bit (0 for bit 12).
 * O(file size). Returns TLB_OK, or TLB_EINVAL with a one-line message naming the file (and the
 * line where one is at fault) in errbuf (if non-NULL): unreadable file, malformed line, no such
 * level, sets not a power of two, another hashed index, an XOR fold whose ranges are not adjacent
 * or read more than 16 bits. */
tlb_status_t tlb_geometry_from_machine(const char *path, tlb_geometry_t *geometry, char *errbuf,
                                       size_t errbuf_len);

/* Opaque arena handle. */
typedef struct tlb_arena tlb_arena_t;

/* What an arena looks like once created (filled by tlb_arena_info()). */
typedef struct tlb_arena_info {
    uintptr_t base;           /* first byte of the colored region (aligned to a period) */
    size_t size;              /* bytes of the colored region = periods * sets * slot_size */
    size_t slot_size;         /* 2^index_shift */
    uint32_t small_colors;    /* M - R */
    uint32_t large_colors;    /* periods if R > 0, else 0 */
    size_t small_max_alloc;   /* largest request tlb_malloc() serves in O(1) for every small color */
    size_t large_max_alloc;   /* same for large colors (0 if there are none) */
    uint32_t handle_set;      /* TLB set of the page that holds the arena handle (M - 1) */
    int huge_backing;         /* 0: 4 KiB pages; 1: hugetlbfs; 2: transparent huge pages */
    int locked;               /* 1 if TLB_ARENA_LOCKED */
    int conflict_free;        /* 1 if periods <= ways: all slots of one color (and all large colors
                                 together) fit in their TLB set at once */
} tlb_arena_info_t;

/* Per-color diagnostics (filled by tlb_color_diagnostics()). */
typedef struct tlb_color_diag {
    uint32_t color;
    int large;                /* 1 for a large color */
    uint32_t first_set;       /* TLB sets the color's pages map to: first_set .. first_set+set_count-1 */
    uint32_t set_count;
    size_t capacity;          /* bytes of the color's pools (including headers and control) */
    size_t in_use;            /* bytes of allocated blocks, headers included */
    size_t peak_in_use;       /* high-water mark of in_use */
    size_t free_bytes;        /* bytes of free blocks, headers included */
    size_t largest_free;      /* largest free block's usable payload */
    size_t free_blocks;       /* number of free blocks */
    uint64_t allocations;     /* successful allocations so far */
    uint64_t oom_count;       /* allocation requests that returned NULL for lack of space */
} tlb_color_diag_t;

/* Size of the arena's colored region for a geometry (0 if the geometry is invalid). O(1). */
size_t tlb_arena_size(const tlb_geometry_t *geometry);

/* Create an arena: validate the geometry, mmap and align the region, switch THP off (or back it
 * with huge pages for huge slots), pre-fault it, optionally mlock it, and build every color's heap.
 * Cost: O(size) (page faults), done once. Fails (NULL, *err set, a one-line message in errbuf if
 * non-NULL) on an invalid geometry (TLB_EINVAL: sets not a power of two, index_shift < page_shift,
 * R >= sets, a slot too small for its control block, ...) or when the kernel refuses memory
 * (TLB_ENOMEM). err and errbuf may be NULL. */
tlb_arena_t *tlb_arena_create(const tlb_geometry_t *geometry, tlb_status_t *err, char *errbuf,
                              size_t errbuf_len);

/* Unmap the arena; every pointer from it becomes invalid. NULL is ignored. O(1) (one munmap). */
void tlb_arena_destroy(tlb_arena_t *arena);

/* Fill *out with the arena's layout and limits. O(1); never fails. */
void tlb_arena_info(const tlb_arena_t *arena, tlb_arena_info_t *out);

/* Number of colors: small colors are 0..small-1, large colors are small..small+large-1. O(1). */
uint32_t tlb_color_count(const tlb_arena_t *arena);

/* Largest request tlb_malloc(arena, size, color) is guaranteed to serve in an empty color
 * (0 for an invalid color). O(1). Requests up to the slot (or run) size minus 32 bytes may still
 * succeed when a suitable block is at the head of its free list. */
size_t tlb_max_alloc(const tlb_arena_t *arena, uint32_t color);

/* Allocate `size` bytes (> 0) of the given color, aligned to TLB_ALIGNMENT. Every byte of the
 * result lies on slots of that color. O(1). Returns NULL if size is 0, the color does not exist,
 * size exceeds what the color can hold, or the color has no free block large enough (the last two
 * count in oom_count). */
void *tlb_malloc(tlb_arena_t *arena, size_t size, uint32_t color);

/* Like tlb_malloc for nmemb*size bytes, zero-filled. O(1) bookkeeping plus O(size) zeroing.
 * NULL also when nmemb*size overflows. */
void *tlb_calloc(tlb_arena_t *arena, size_t nmemb, size_t size, uint32_t color);

/* Allocate `size` bytes of the color at an address that is a multiple of `alignment` (a power of
 * two, at most the slot size; values below TLB_ALIGNMENT are raised to it). O(1). NULL on a bad
 * alignment or as tlb_malloc. */
void *tlb_aligned_alloc(tlb_arena_t *arena, size_t alignment, size_t size, uint32_t color);

/* Return a block to its color. ptr must come from this arena (or be NULL, which is ignored). The
 * color is found from the address. O(1). Freeing a pointer twice or a foreign pointer is undefined
 * (tlb_arena_check() detects the corruption it leaves in most cases). */
void tlb_free(tlb_arena_t *arena, void *ptr);

/* Resize a block, keeping its color. NULL ptr acts as tlb_malloc(size, color); size 0 frees and
 * returns NULL. Shrinks and grows into a free successor in place in O(1); otherwise allocates a new
 * block of the same color, copies (O(size)) and frees the old one. The `color` argument is used only
 * when ptr is NULL. On failure returns NULL and leaves ptr untouched. */
void *tlb_realloc(tlb_arena_t *arena, void *ptr, size_t size, uint32_t color);

/* Usable size of an allocated block (>= the requested size). O(1). */
size_t tlb_usable_size(const tlb_arena_t *arena, const void *ptr);

/* Color of the slot that holds ptr, computed from the address alone; UINT32_MAX if ptr is not in
 * the arena's colored region. O(1). */
uint32_t tlb_color_of(const tlb_arena_t *arena, const void *ptr);

/* TLB set that a virtual address maps to under the arena's geometry. O(1). */
uint32_t tlb_set_of(const tlb_arena_t *arena, const void *ptr);

/* Fill *out for one color: O(1) counters plus a walk of the color's blocks for the free-space
 * figures (O(blocks of that color)). Returns 0, or -1 for an invalid color. */
int tlb_color_diagnostics(tlb_arena_t *arena, uint32_t color, tlb_color_diag_t *out);

/* Check every invariant of every color: block headers and boundary tags, no two adjacent free
 * blocks, every free block on the free list its size maps to and nowhere else, list links, bitmaps,
 * the in-use counter, every block inside one slot/run of its color. O(total blocks). Returns TLB_OK
 * or TLB_ECORRUPT with a one-line description in errbuf (if non-NULL). */
tlb_status_t tlb_arena_check(tlb_arena_t *arena, char *errbuf, size_t errbuf_len);

#ifdef __cplusplus
}
#endif

#endif /* TLBLAB_COLOR_H */
