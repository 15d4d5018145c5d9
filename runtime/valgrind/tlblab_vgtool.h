/* The word stream between tlblab's Valgrind tool (tlblab_main.c) and its reader
 * (crates/tlblab-trace/src/vgtool.rs, which repeats these values): the protocol is written out
 * at the top of tlblab_main.c. */
#ifndef TLBLAB_VGTOOL_H
#define TLBLAB_VGTOOL_H

#include "tlblab/roi.h" /* the client request codes, TLBLAB_ROI_REQ_BEGIN / _END */

#define TLVG_MAGIC 0x3130544756424c54ULL /* "TLBVGT01", little-endian */

#define TLVG_ADDR_MASK 0x0000ffffffffffffULL
#define TLVG_KIND_SHIFT 48
#define TLVG_SIZE_SHIFT 50

#define TLVG_KIND_FETCH 0ULL
#define TLVG_KIND_LOAD 1ULL
#define TLVG_KIND_STORE 2ULL
#define TLVG_KIND_CONTROL 3ULL

#define TLVG_OP_LONG_ACCESS 0ULL
#define TLVG_OP_THREAD 1ULL
#define TLVG_OP_THREAD_START 2ULL
#define TLVG_OP_THREAD_EXIT 3ULL
#define TLVG_OP_ROI_BEGIN 4ULL
#define TLVG_OP_ROI_END 5ULL
#define TLVG_OP_END 6ULL
#define TLVG_OP_DEPENDS 7ULL

/* The farthest back (in the thread's references) a dependence is reported: the farthest the
 * engine follows one (its reorder window, rounded up, at most 4096). */
#define TLVG_DEPENDS_MAX_BACK 4096ULL

#define TLVG_END_EXIT 0ULL
#define TLVG_END_MAX 1ULL

#define TLVG_USERREQ_ROI_BEGIN TLBLAB_ROI_REQ_BEGIN
#define TLVG_USERREQ_ROI_END TLBLAB_ROI_REQ_END

#endif
