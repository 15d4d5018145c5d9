/* tlb_geometry_from_machine: the colored level's geometry from a tlblab machine file.
 *
 * Why in C: the runtime never depends on Rust or Python (ARCHITECTURE.md, layer rules), and a
 * program using the allocator should color for the TLB `tlblab probe --out host.toml` measured,
 * not for a constant. The file is TOML; this reads the subset tlblab writes (machine_toml in
 * python/tlblab, the presets): `[[tlb]]` array tables with `key = value` lines, `[tlb.index]`
 * sub-tables, `#` comments. Strings, integers and one-line arrays only. */
#include "tlblab/color.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tlb_level {
    long level, entries, ways; /* ways 0 = "full" */
    int data_path;             /* kind "data" or "unified" (the default) */
    int has_4k;                /* page_sizes lists "4KiB" (or is absent) */
    int hashed;                /* [tlb.index] type other than "low_bits" */
    int line;                  /* line of its [[tlb]] header */
} tlb_level_t;

static tlb_status_t fail(char *errbuf, size_t len, const char *fmt, ...) {
    if (errbuf != NULL && len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf, len, fmt, ap);
        va_end(ap);
    }
    return TLB_EINVAL;
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    return s;
}

/* Cuts a `#` comment that is not inside a string. */
static void strip_comment(char *s) {
    int in_str = 0;
    for (char *p = s; *p; p++) {
        if (*p == '"') in_str = !in_str;
        else if (*p == '#' && !in_str) {
            *p = '\0';
            return;
        }
    }
}

static int parse_long(const char *v, long *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0) return -1;
    *out = x;
    return 0;
}

static int is_pow2(long x) { return x > 0 && (x & (x - 1)) == 0; }

tlb_status_t tlb_geometry_from_machine(const char *path, tlb_geometry_t *geometry, char *errbuf,
                                       size_t errbuf_len) {
    if (path == NULL || geometry == NULL) return fail(errbuf, errbuf_len, "machine file: path or geometry is NULL");
    FILE *f = fopen(path, "r");
    if (f == NULL) return fail(errbuf, errbuf_len, "%s: cannot open: %s", path, strerror(errno));
    tlb_level_t best = {0}, cur = {0};
    int in_tlb = 0, in_index = 0, have_best = 0, lineno = 0;
    char buf[4096];
    tlb_status_t st = TLB_OK;
    /* Keeps `cur` as the best so far when it is a colorable candidate. */
#define FINISH_TLB()                                                                               \
    do {                                                                                           \
        if (in_tlb && cur.data_path && cur.has_4k && cur.ways > 0 && cur.ways < cur.entries &&      \
            (!have_best || cur.entries > best.entries)) {                                          \
            best = cur;                                                                            \
            have_best = 1;                                                                         \
        }                                                                                          \
    } while (0)
    while (fgets(buf, sizeof buf, f) != NULL) {
        lineno++;
        if (strchr(buf, '\n') == NULL && !feof(f)) {
            st = fail(errbuf, errbuf_len, "%s:%d: line longer than %zu bytes", path, lineno, sizeof buf - 2);
            goto out;
        }
        strip_comment(buf);
        char *s = trim(buf);
        if (*s == '\0') continue;
        if (*s == '[') {
            if (!strcmp(s, "[[tlb]]")) {
                FINISH_TLB();
                memset(&cur, 0, sizeof cur);
                cur.data_path = 1; /* kind defaults to "unified" */
                cur.has_4k = 1;
                cur.line = lineno;
                in_tlb = 1;
                in_index = 0;
            } else if (in_tlb && !strcmp(s, "[tlb.index]")) {
                in_index = 1;
            } else if (in_tlb && !strncmp(s, "[tlb.", 5)) {
                in_index = -1; /* another sub-table of this level: skipped */
            } else {
                FINISH_TLB();
                in_tlb = 0;
                in_index = 0;
            }
            continue;
        }
        char *eq = strchr(s, '=');
        if (eq == NULL) {
            st = fail(errbuf, errbuf_len, "%s:%d: expected `key = value`, found '%s'", path, lineno, s);
            goto out;
        }
        *eq = '\0';
        char *k = trim(s), *v = trim(eq + 1);
        if (!in_tlb || in_index < 0) continue;
        if (in_index == 1) {
            if (!strcmp(k, "type") && strcmp(v, "\"low_bits\"") != 0) cur.hashed = lineno;
            continue;
        }
        if (!strcmp(k, "index") && strstr(v, "low_bits") == NULL) {
            cur.hashed = lineno; /* inline table: index = { type = "xor", ... } */
        } else if (!strcmp(k, "level") || !strcmp(k, "entries")) {
            long x;
            if (parse_long(v, &x) != 0 || x < 1) {
                st = fail(errbuf, errbuf_len, "%s:%d: %s: expected a positive integer, found '%s'", path, lineno, k, v);
                goto out;
            }
            if (!strcmp(k, "level")) cur.level = x;
            else cur.entries = x;
        } else if (!strcmp(k, "ways")) {
            long x;
            if (!strcmp(v, "\"full\"")) cur.ways = 0;
            else if (parse_long(v, &x) == 0 && x >= 1) cur.ways = x;
            else {
                st = fail(errbuf, errbuf_len, "%s:%d: ways: expected a positive integer or \"full\", found '%s'", path,
                          lineno, v);
                goto out;
            }
        } else if (!strcmp(k, "kind")) {
            cur.data_path = strcmp(v, "\"instr\"") != 0;
        } else if (!strcmp(k, "page_sizes")) {
            cur.has_4k = strstr(v, "\"4KiB\"") != NULL;
        }
    }
    FINISH_TLB();
#undef FINISH_TLB
    if (!have_best) {
        st = fail(errbuf, errbuf_len,
                  "%s: no set-associative data or unified TLB level for 4 KiB pages to color "
                  "(a fully associative level cannot be colored)",
                  path);
        goto out;
    }
    if (best.hashed) {
        st = fail(errbuf, errbuf_len,
                  "%s:%d: the level of the [[tlb]] at line %d has a hashed set index; coloring by "
                  "virtual-address bits needs type = \"low_bits\"",
                  path, best.hashed, best.line);
        goto out;
    }
    if (best.entries % best.ways != 0 || !is_pow2(best.entries / best.ways) || best.entries / best.ways > 65536) {
        st = fail(errbuf, errbuf_len,
                  "%s:%d: the [[tlb]] level %ld has %ld entries / %ld ways, not a power-of-two number "
                  "of sets up to 65536",
                  path, best.line, best.level, best.entries, best.ways);
        goto out;
    }
    geometry->sets = (uint32_t)(best.entries / best.ways);
    geometry->ways = (uint32_t)best.ways;
    geometry->page_shift = 12;
    geometry->index_shift = 0;
out:
    fclose(f);
    return st;
}
