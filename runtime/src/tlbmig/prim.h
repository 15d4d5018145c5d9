/* OS primitives of tlbmig (tlbmig.c), implemented for Linux in prim_linux.c. Internal. */
#ifndef TLBLAB_TLBMIG_PRIM_H
#define TLBLAB_TLBMIG_PRIM_H

#include <stddef.h>

/* 1 if glibc registered an rseq area for this thread and its cpu_id is valid, else 0. */
int tlbmig_prim_rseq_ok(void);
/* The calling thread's rseq cpu_id field (only valid if tlbmig_prim_rseq_ok(), and only for the calling
 * thread): a handle caches it so that the check is a single load. */
const volatile unsigned *tlbmig_prim_rseq_cpu_ptr(void);
/* The current CPU from sched_getcpu(), -1 on error. */
int tlbmig_prim_getcpu(void);
size_t tlbmig_prim_page_size(void);

#endif
