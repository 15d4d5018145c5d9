/* The usage example of docs/color.md, compiled and run by ctest (color_example) so the document
 * cannot drift from the API; tests/test_color_docs.py checks that the block in the document is the
 * text between the EXAMPLE markers below. */
#include <stdint.h>
#include <stdio.h>

#include "tlblab/color.h"

int main(void) {
/* EXAMPLE BEGIN */
/* Zen 3 L2 DTLB: 2048 entries, 16 ways -> 128 sets indexed by VA bits 12..18. */
tlb_geometry_t g = { .sets = 128, .ways = 16, .page_shift = 12, .reserved_sets = 4 };
char msg[256];
tlb_arena_t *a = tlb_arena_create(&g, NULL, msg, sizeof msg);   /* NULL + msg on bad input */
void *x = tlb_malloc(a, 1000, 3);        /* small color 3: every byte on TLB set R+3 = 7 */
void *big = tlb_malloc(a, 12000, 124);   /* large color 0 (ids small..small+large-1): sets 0..3 */
tlb_free(a, x);
/* EXAMPLE END */
    if (a == NULL || x == NULL || big == NULL) {
        fprintf(stderr, "example failed: %s\n", a ? "allocation returned NULL" : msg);
        return 1;
    }
    int ok = tlb_set_of(a, big) < 4 && tlb_color_of(a, big) == 124 && tlb_color_count(a) == 140;
    tlb_free(a, big);
    ok = ok && tlb_arena_check(a, msg, sizeof msg) == TLB_OK;
    tlb_arena_destroy(a);
    if (!ok) {
        fprintf(stderr, "example: unexpected placement\n");
        return 1;
    }
    printf("example ok\n");
    return 0;
}
