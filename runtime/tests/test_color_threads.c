/* Thread-safety contract of the TLB-coloring allocator: with TLB_ARENA_LOCKED, threads may call
 * the allocator concurrently, on the same color (they serialise on that color's mutex) and on
 * different colors (no shared state). Four threads hammer two shared colors and one private color
 * each; afterwards every counter balances and tlb_arena_check() passes. */
#include "tlblab/color.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 20000

static tlb_arena_t *arena;
static int errors;

static void *worker(void *arg) {
    uint32_t id = (uint32_t)(uintptr_t)arg;
    uint64_t x = 0x9e3779b97f4a7c15ull * (id + 1);
    void *held[16] = {0};
    uint32_t color_of[16];
    for (int r = 0; r < ROUNDS; r++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int slot = (int)(x % 16);
        if (held[slot] != NULL) {
            unsigned char *p = held[slot];
            if (p[0] != (unsigned char)id || tlb_color_of(arena, p) != color_of[slot])
                __atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
            tlb_free(arena, p);
            held[slot] = NULL;
        } else {
            uint32_t color = (x >> 8) % 3 == 0 ? 10 + id : (uint32_t)((x >> 16) % 2); /* private or shared */
            unsigned char *p = tlb_malloc(arena, 16 + (x >> 24) % 300, color);
            if (p != NULL) {
                p[0] = (unsigned char)id;
                held[slot] = p;
                color_of[slot] = color;
            }
        }
    }
    for (int i = 0; i < 16; i++)
        tlb_free(arena, held[i]);
    return NULL;
}

int main(void) {
    tlb_geometry_t g = {.sets = 32, .ways = 4, .page_shift = 12, .flags = TLB_ARENA_LOCKED};
    char msg[256];
    arena = tlb_arena_create(&g, NULL, msg, sizeof msg);
    if (arena == NULL) {
        fprintf(stderr, "create: %s\n", msg);
        return 1;
    }
    tlb_arena_info_t inf;
    tlb_arena_info(arena, &inf);
    if (!inf.locked) {
        fprintf(stderr, "arena is not locked\n");
        return 1;
    }
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    if (errors) {
        fprintf(stderr, "%d blocks were corrupted or changed color\n", errors);
        return 1;
    }
    if (tlb_arena_check(arena, msg, sizeof msg) != TLB_OK) {
        fprintf(stderr, "invariant: %s\n", msg);
        return 1;
    }
    for (uint32_t c = 0; c < tlb_color_count(arena); c++) {
        tlb_color_diag_t d;
        tlb_color_diagnostics(arena, c, &d);
        if (d.in_use != 0) {
            fprintf(stderr, "color %u still has %zu bytes in use\n", c, d.in_use);
            return 1;
        }
    }
    tlb_arena_destroy(arena);
    printf("test_color_threads: %d threads x %d rounds, consistent\n", THREADS, ROUNDS);
    return 0;
}
