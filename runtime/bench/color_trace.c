/* color_trace: print where the TLB-coloring allocator places each allocation of a request
 * sequence, as byte offsets from the arena base, so that a port of the placement algorithm (the
 * simulator's colored placement policy, docs/color.md) can be compared address for address.
 *
 * Usage: color_trace [--sets M] [--ways N] [--reserved R] [--periods P] [--page-shift S]
 *                    [--index-shift I] < requests
 * Requests, one per line ('#' starts a comment):
 *   SIZE COLOR             allocate (same as "malloc SIZE COLOR")
 *   malloc SIZE COLOR      allocate; the allocation gets the next index 0, 1, 2, ...
 *   aligned ALIGN SIZE COLOR
 *   realloc INDEX SIZE     resize allocation INDEX (keeps its index)
 *   free INDEX             free allocation INDEX
 * Output: one line per malloc/aligned/realloc: "INDEX OFFSET" (decimal byte offset of the returned
 * pointer from the arena base) or "INDEX -" when the request failed. Bad input: one line on stderr
 * naming the line number, exit status 2. */
#include "tlblab/color.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_u64(const char *s, unsigned long long *out) {
    char *end;
    errno = 0;
    if (s == NULL || *s == '\0' || *s == '-')
        return -1;
    *out = strtoull(s, &end, 0);
    return (errno != 0 || *end != '\0') ? -1 : 0;
}

static void die(long line, const char *what, const char *found) {
    fprintf(stderr, "color_trace: stdin line %ld: expected %s, found '%s'\n", line, what, found ? found : "");
    exit(2);
}

int main(int argc, char **argv) {
    tlb_geometry_t g = {.sets = 16, .ways = 4, .page_shift = 12};
    for (int i = 1; i < argc; i++) {
        unsigned long long v;
        if (i + 1 >= argc || parse_u64(argv[i + 1], &v) != 0 || v > UINT32_MAX) {
            fprintf(stderr, "color_trace: option %s needs a non-negative integer\n", argv[i]);
            return 2;
        }
        const char *o = argv[i++];
        if (!strcmp(o, "--sets"))
            g.sets = (uint32_t)v;
        else if (!strcmp(o, "--ways"))
            g.ways = (uint32_t)v;
        else if (!strcmp(o, "--reserved"))
            g.reserved_sets = (uint32_t)v;
        else if (!strcmp(o, "--periods"))
            g.periods = (uint32_t)v;
        else if (!strcmp(o, "--page-shift"))
            g.page_shift = (uint32_t)v;
        else if (!strcmp(o, "--index-shift"))
            g.index_shift = (uint32_t)v;
        else {
            fprintf(stderr, "color_trace: unknown option %s\n", o);
            return 2;
        }
    }
    char msg[256];
    tlb_arena_t *a = tlb_arena_create(&g, NULL, msg, sizeof msg);
    if (a == NULL) {
        fprintf(stderr, "color_trace: bad geometry: %s\n", msg);
        return 2;
    }
    tlb_arena_info_t inf;
    tlb_arena_info(a, &inf);
    size_t cap = 1024, n = 0;
    void **ptrs = calloc(cap, sizeof *ptrs);
    char buf[512];
    long line = 0;
    while (fgets(buf, sizeof buf, stdin) != NULL) {
        line++;
        char *hash = strchr(buf, '#');
        if (hash)
            *hash = '\0';
        char *tok[5];
        int nt = 0;
        for (char *t = strtok(buf, " \t\r\n"); t != NULL && nt < 5; t = strtok(NULL, " \t\r\n"))
            tok[nt++] = t;
        if (nt == 0)
            continue;
        unsigned long long x = 0, y = 0, z = 0;
        void *p = NULL;
        size_t idx;
        int isnum = parse_u64(tok[0], &x) == 0;
        if (isnum || !strcmp(tok[0], "malloc") || !strcmp(tok[0], "aligned")) {
            int al = !strcmp(tok[0], "aligned");
            int base = isnum ? 0 : 1;
            if (nt != base + 2 + al)
                die(line, al ? "'aligned ALIGN SIZE COLOR'" : "'SIZE COLOR' or 'malloc SIZE COLOR'", tok[0]);
            if (al && parse_u64(tok[1], &z) != 0)
                die(line, "an alignment", tok[1]);
            if (parse_u64(tok[base + al], &x) != 0)
                die(line, "a size", tok[base + al]);
            if (parse_u64(tok[base + al + 1], &y) != 0 || y >= tlb_color_count(a))
                die(line, "a color below tlb_color_count", tok[base + al + 1]);
            p = al ? tlb_aligned_alloc(a, (size_t)z, (size_t)x, (uint32_t)y) : tlb_malloc(a, (size_t)x, (uint32_t)y);
            if (n == cap) {
                cap *= 2;
                ptrs = realloc(ptrs, cap * sizeof *ptrs);
            }
            idx = n;
            ptrs[n++] = p;
        } else if (!strcmp(tok[0], "free") || !strcmp(tok[0], "realloc")) {
            int re = !strcmp(tok[0], "realloc");
            if (nt != 2 + re || parse_u64(tok[1], &x) != 0 || x >= n)
                die(line, re ? "'realloc INDEX SIZE' with an earlier index" : "'free INDEX' with an earlier index",
                    nt > 1 ? tok[1] : tok[0]);
            idx = (size_t)x;
            if (!re) {
                tlb_free(a, ptrs[idx]);
                ptrs[idx] = NULL;
                continue;
            }
            if (parse_u64(tok[2], &y) != 0)
                die(line, "a size", tok[2]);
            if (ptrs[idx] == NULL)
                die(line, "the index of a live allocation", tok[1]);
            p = tlb_realloc(a, ptrs[idx], (size_t)y, 0);
            if (p != NULL || y == 0)
                ptrs[idx] = p;
            else
                p = NULL;
        } else {
            die(line, "SIZE, malloc, aligned, realloc or free", tok[0]);
            return 2;
        }
        if (p == NULL)
            printf("%zu -\n", idx);
        else
            printf("%zu %zu\n", idx, (size_t)((uintptr_t)p - inf.base));
    }
    char cmsg[256];
    if (tlb_arena_check(a, cmsg, sizeof cmsg) != TLB_OK) {
        fprintf(stderr, "color_trace: invariant failed: %s\n", cmsg);
        return 1;
    }
    free(ptrs);
    tlb_arena_destroy(a);
    return 0;
}
