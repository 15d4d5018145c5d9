/* A program for the preloaded mosaic allocator's test (mosaic_preload_check.cmake): mallocs 24 MiB,
 * touches every page, maps 4 MiB anonymously, and prints where both landed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(void) {
    size_t n = 24u << 20;
    char *p = malloc(n);
    if (p == NULL)
        return 1;
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    char *q = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED)
        return 1;
    memset(q, 2, 4u << 20);
    printf("heap %#lx anon %#lx\n", (unsigned long)(uintptr_t)p, (unsigned long)(uintptr_t)q);
    free(p);
    return 0;
}
