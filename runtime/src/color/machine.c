/* tlb_geometry_from_machine: the colored level's geometry from a tlblab machine file.
 *
 * Why in C: the runtime never depends on Rust or Python (ARCHITECTURE.md, layer rules), and a
 * program using the allocator should color for the TLB `tlblab probe --out host.toml` measured,
 * not for a constant. The file is TOML; this reads the subset tlblab writes (machine_toml in
 * python/tlblab, the presets): `[[tlb]]` array tables with `key = value` lines, `[tlb.index]`
 * sub-tables or inline `index = { ... }` tables, `#` comments. Strings, integers and arrays of
 * them, on one line or (as machine_toml writes them) one element a line up to the closing `]`.
 *
 * A hashed index is colorable when it is the XOR fold the engine's `index = {type = "xor"}`
 * expresses with its two ranges adjacent (the Intel VM's STLB as the probe measured it: address
 * bits 12-18 XOR 19-25, docs/probe.md): pages equal in every bit the hash reads share one set, so
 * colors are those 2w bits (2^(2w) colors, one set each; 2^w colors share each set), as
 * `tlblab host coloring` colors (python/tlblab/host/geometry.py). */
#include "tlblab/color.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tlb_level {
    long level, entries, ways; /* ways 0 = "full" */
    long hardware_ways;        /* the ways each set is built with, when `ways` models fewer; 0: absent */
    int data_path;             /* kind "data" or "unified" (the default) */
    int has_4k;                /* page_sizes lists "4KiB" (or is absent) */
    int hashed;                /* line of an index type other than "low_bits" and "xor" */
    int xor_line;              /* line of an index of type "xor" (0: none) */
    long xa[2], xb[2];         /* its ranges a and b (address bits, inclusive); -1 when absent */
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

/* Parses a two-integer array "[lo, hi]" into r; -1 on anything else. */
static int parse_range(const char *v, long r[2]) {
    char tmp[128];
    size_t n = strlen(v);
    if (n < 2 || n >= sizeof tmp || v[0] != '[' || v[n - 1] != ']') return -1;
    memcpy(tmp, v + 1, n - 2);
    tmp[n - 2] = '\0';
    char *comma = strchr(tmp, ',');
    if (comma == NULL) return -1;
    *comma = '\0';
    char *second = trim(comma + 1);
    size_t m = strlen(second);
    if (m > 0 && second[m - 1] == ',') second[m - 1] = '\0'; /* a trailing comma */
    if (parse_long(trim(tmp), &r[0]) != 0 || parse_long(trim(second), &r[1]) != 0) return -1;
    return 0;
}

/* One `key = value` of a level's index (from [tlb.index] or an inline table): 0, or -1 with
 * a message when a range is malformed. */
static int index_key(tlb_level_t *cur, const char *k, const char *v, int lineno) {
    if (!strcmp(k, "type")) {
        if (!strcmp(v, "\"xor\"")) cur->xor_line = lineno;
        else if (strcmp(v, "\"low_bits\"") != 0) cur->hashed = lineno;
    } else if (!strcmp(k, "a") || !strcmp(k, "b")) {
        if (parse_range(v, !strcmp(k, "a") ? cur->xa : cur->xb) != 0) return -1;
    }
    return 0;
}

/* Splits an inline table "{ k = v, k = [x, y], ... }" into its keys (commas inside [] kept). */
static int index_inline(tlb_level_t *cur, char *v, int lineno) {
    size_t n = strlen(v);
    if (n < 2 || v[0] != '{' || v[n - 1] != '}') return -1;
    v[n - 1] = '\0';
    char *p = v + 1;
    while (*p) {
        char *start = p;
        int depth = 0;
        while (*p && !(*p == ',' && depth == 0)) {
            if (*p == '[') depth++;
            else if (*p == ']') depth--;
            p++;
        }
        if (*p == ',') *p++ = '\0';
        char *item = trim(start);
        if (*item == '\0') continue;
        char *eq = strchr(item, '=');
        if (eq == NULL) return -1;
        *eq = '\0';
        if (index_key(cur, trim(item), trim(eq + 1), lineno) != 0) return -1;
    }
    return 0;
}

tlb_status_t tlb_geometry_from_machine(const char *path, tlb_geometry_t *geometry, char *errbuf,
                                       size_t errbuf_len) {
    if (path == NULL || geometry == NULL) return fail(errbuf, errbuf_len, "machine file: path or geometry is NULL");
    FILE *f = fopen(path, "r");
    if (f == NULL) return fail(errbuf, errbuf_len, "%s: cannot open: %s", path, strerror(errno));
    tlb_level_t best = {0}, cur = {0};
    int in_tlb = 0, in_index = 0, have_best = 0, lineno = 0;
    char buf[4096], pending[4096] = "";
    int pending_line = 0;
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
        if (pending[0] != '\0') {
            /* Inside a multi-line array: append this element line until its `]`. */
            if (strlen(pending) + strlen(s) + 2 >= sizeof pending) {
                st = fail(errbuf, errbuf_len, "%s:%d: array longer than %zu bytes", path, lineno, sizeof pending - 2);
                goto out;
            }
            strcat(pending, " ");
            strcat(pending, s);
            if (s[strlen(s) - 1] != ']') continue;
            strcpy(buf, pending);
            pending[0] = '\0';
            s = buf;
        } else {
            char *eq0 = strchr(s, '=');
            if (eq0 != NULL && !strcmp(trim(eq0 + 1), "[")) {
                if (strlen(s) + 1 >= sizeof pending) {
                    st = fail(errbuf, errbuf_len, "%s:%d: line too long", path, lineno);
                    goto out;
                }
                strcpy(pending, s);
                pending_line = lineno;
                continue;
            }
        }
        if (*s == '[') {
            if (!strcmp(s, "[[tlb]]")) {
                FINISH_TLB();
                memset(&cur, 0, sizeof cur);
                cur.xa[0] = cur.xa[1] = cur.xb[0] = cur.xb[1] = -1;
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
            if (index_key(&cur, k, v, lineno) != 0) {
                st = fail(errbuf, errbuf_len, "%s:%d: index.%s: expected [lo, hi], found '%s'", path, lineno, k, v);
                goto out;
            }
            continue;
        }
        if (!strcmp(k, "index")) {
            if (index_inline(&cur, v, lineno) != 0) {
                st = fail(errbuf, errbuf_len, "%s:%d: index: expected an inline table { type = ..., a = [lo, hi], "
                          "b = [lo, hi] }, found '%s'", path, lineno, v);
                goto out;
            }
        } else if (!strcmp(k, "level") || !strcmp(k, "entries") || !strcmp(k, "hardware_ways")) {
            /* hardware_ways: written by `tlblab probe --out` for a random-like level, whose `ways`
             * are what a random chain over every set keeps (the simulator's capacity); these are
             * the structure's (TlbConfig::hardware_ways), and coloring places pages by set. */
            long x;
            if (parse_long(v, &x) != 0 || x < 1) {
                st = fail(errbuf, errbuf_len, "%s:%d: %s: expected a positive integer, found '%s'", path, lineno, k, v);
                goto out;
            }
            if (!strcmp(k, "level")) cur.level = x;
            else if (!strcmp(k, "entries")) cur.entries = x;
            else cur.hardware_ways = x;
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
    if (pending[0] != '\0') {
        st = fail(errbuf, errbuf_len, "%s:%d: array not closed by `]`", path, pending_line);
        goto out;
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
                  "virtual-address bits needs type = \"low_bits\" or \"xor\"",
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
    if (best.hardware_ways != 0 && best.hardware_ways < best.ways) {
        st = fail(errbuf, errbuf_len, "%s:%d: the [[tlb]] level %ld has hardware_ways = %ld, fewer than its %ld ways",
                  path, best.line, best.level, best.hardware_ways, best.ways);
        goto out;
    }
    long sets = best.entries / best.ways, shift = 12;
    if (best.xor_line) {
        /* The fold the engine expresses (crates/tlblab-core/src/tlb/index.rs, IndexFn::Xor): two
         * ranges of log2(sets) bits each. Colorable by address bits when the two are adjacent, so
         * the bits the hash reads are one field: lo .. lo + 2w - 1. */
        long w = 0;
        while ((1L << w) < sets) w++;
        long lo = best.xa[0] < best.xb[0] ? best.xa[0] : best.xb[0];
        long hi = best.xa[1] > best.xb[1] ? best.xa[1] : best.xb[1];
        int ranges_ok = best.xa[0] >= 12 && best.xb[0] >= 12 && best.xa[1] - best.xa[0] + 1 == w &&
                        best.xb[1] - best.xb[0] + 1 == w;
        if (!ranges_ok) {
            st = fail(errbuf, errbuf_len,
                      "%s:%d: index type \"xor\" of the [[tlb]] at line %d: expected a = [lo, hi] and b = "
                      "[lo, hi], %ld address bits each (%ld sets), from bit 12 up",
                      path, best.xor_line, best.line, w, sets);
            goto out;
        }
        if (hi - lo + 1 != 2 * w || 2 * w > 16) {
            st = fail(errbuf, errbuf_len,
                      "%s:%d: index type \"xor\" of the [[tlb]] at line %d reads address bits %ld-%ld and "
                      "%ld-%ld: coloring needs the two ranges adjacent and at most 16 bits together",
                      path, best.xor_line, best.line, best.xa[0], best.xa[1], best.xb[0], best.xb[1]);
            goto out;
        }
        sets = 1L << (2 * w);
        shift = lo;
    }
    geometry->sets = (uint32_t)sets;
    geometry->ways = (uint32_t)(best.hardware_ways != 0 ? best.hardware_ways : best.ways);
    geometry->page_shift = 12;
    geometry->index_shift = shift == 12 ? 0 : (uint32_t)shift;
out:
    fclose(f);
    return st;
}
