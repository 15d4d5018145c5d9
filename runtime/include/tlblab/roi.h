/* tlblab/roi.h: mark the region of interest of a program traced by `tlblab trace record`.
 *
 *     #include <tlblab/roi.h>
 *     ...initialisation...
 *     TLBLAB_ROI_BEGIN();
 *     ...the phase to measure...
 *     TLBLAB_ROI_END();
 *
 * Under tlblab's Valgrind tool the marks become PhaseBegin/PhaseEnd events of region "roi" in
 * the trace, and `tlblab trace record --roi-only` traces only between them (the code outside is
 * not instrumented at all). They may be passed any number of times; a BEGIN inside the region
 * or an END outside it does nothing.
 *
 * Outside Valgrind each mark is a few instructions that do nothing (Valgrind's client-request
 * sequence, from <valgrind/valgrind.h> of the Debian package valgrind). Without that header the
 * marks compile to nothing at all, and a `#pragma message` says so.
 *
 * Header-only; no library to link. Cost outside Valgrind: about 10 instructions per mark.
 */
#ifndef TLBLAB_ROI_H
#define TLBLAB_ROI_H

/* Client request codes: Valgrind's tool base for the letters 'T','L', plus 0 and 1. */
#define TLBLAB_ROI_REQ_BASE ((unsigned int)((('T') & 0xff) << 24 | (('L') & 0xff) << 16))
#define TLBLAB_ROI_REQ_BEGIN (TLBLAB_ROI_REQ_BASE + 0)
#define TLBLAB_ROI_REQ_END (TLBLAB_ROI_REQ_BASE + 1)

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define TLBLAB_ROI_HAVE_VALGRIND 1
#endif
#endif

#if defined(TLBLAB_ROI_HAVE_VALGRIND) && !defined(NVALGRIND)
#define TLBLAB_ROI_BEGIN() VALGRIND_DO_CLIENT_REQUEST_STMT(TLBLAB_ROI_REQ_BEGIN, 0, 0, 0, 0, 0)
#define TLBLAB_ROI_END() VALGRIND_DO_CLIENT_REQUEST_STMT(TLBLAB_ROI_REQ_END, 0, 0, 0, 0, 0)
#else
#if !defined(NVALGRIND)
#pragma message("tlblab/roi.h: <valgrind/valgrind.h> not found: TLBLAB_ROI_BEGIN/END do nothing")
#endif
#define TLBLAB_ROI_BEGIN() ((void)0)
#define TLBLAB_ROI_END() ((void)0)
#endif

#endif
