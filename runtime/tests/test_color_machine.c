/* tlb_geometry_from_machine (tlblab/color.h): the colored level's geometry read from machine files.
 * Given the presets (whose L2 levels are known: presets/ *.toml), then sets x ways of their L2; given
 * a file as `tlblab probe --out` writes it (a measured 128 x 24 L2, comments, sub-tables), then that;
 * given a random-like level written with the ways a random chain keeps and its hardware_ways, then the
 * hardware's ways; given the Intel VM's probed STLB (XOR-7 index, multi-line arrays as machine_toml writes them),
 * then 2^14 colors whose pages share one set under that hash; given bad files, then TLB_EINVAL with
 * a message naming the file and line. Usage:
 * test_color_machine PRESETS_DIR (ctest: color_machine). */
#include "tlblab/color.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static const char *presets;

static void preset_l2(const char *name, uint32_t sets, uint32_t ways) {
    char path[1024], msg[256] = "";
    snprintf(path, sizeof path, "%s/%s.toml", presets, name);
    tlb_geometry_t g = {.reserved_sets = 3, .periods = 5};
    tlb_status_t st = tlb_geometry_from_machine(path, &g, msg, sizeof msg);
    if (st != TLB_OK) fprintf(stderr, "%s: %s\n", name, msg);
    CHECK(st == TLB_OK);
    CHECK(g.sets == sets);
    CHECK(g.ways == ways);
    CHECK(g.page_shift == 12 && g.index_shift == 0);
    CHECK(g.reserved_sets == 3 && g.periods == 5); /* the caller's fields are kept */
}

/* Writes `text` to a temporary file and returns its path (static buffer). */
static const char *temp_file(const char *text) {
    static char path[64];
    strcpy(path, "/tmp/tlblab_machine_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(1);
    }
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static tlb_geometry_t last; /* the geometry read_text read last */

static void read_text(const char *text, tlb_status_t want, const char *want_msg, uint32_t sets, uint32_t ways) {
    const char *path = temp_file(text);
    char msg[256] = "";
    tlb_geometry_t g = {0};
    tlb_status_t st = tlb_geometry_from_machine(path, &g, msg, sizeof msg);
    last = g;
    CHECK(st == want);
    if (want == TLB_OK) {
        CHECK(g.sets == sets && g.ways == ways);
    } else {
        if (strstr(msg, want_msg) == NULL || strstr(msg, path) == NULL)
            fprintf(stderr, "message '%s' lacks '%s' or the path\n", msg, want_msg);
        CHECK(strstr(msg, want_msg) != NULL);
        CHECK(strstr(msg, path) != NULL);
    }
    unlink(path);
}

static const char *HOST =
    "name = \"host\"   # tlblab probe --out\n"
    "frequency_mhz = 2600\n"
    "[page_table]\nformat = \"x86_64_4level\"\n"
    "[[tlb]]\nname = \"L1D\"\nlevel = 1\nkind = \"data\"\nentries = 72\nways = \"full\"\n"
    "page_sizes = [\"4KiB\", \"2MiB\"]\n[tlb.tags]\nasid = true\n"
    "[[tlb]]\nname = \"L2I\"\nlevel = 2\nkind = \"instr\"\nentries = 8192\nways = 8\n"
    "[[tlb]]\nname = \"L2D\"\nlevel = 2\nkind = \"data\"\nentries = 3072\nways = 24  # measured\n"
    "source = \"tlblab probe: 3072 entries # not a comment\"\n[tlb.index]\ntype = \"low_bits\"\n"
    "[walker]\nlatency = 5\n[[cache]]\nname = \"L2\"\nentries = 99999\nways = 3\n";

/* The STLB as `tlblab probe --out` wrote it on the Intel VM (2026-11-26; machine_toml's layout:
 * multi-line arrays, a [tlb.index] sub-table): 2048 entries, 16 ways, set = VPN bits 0-6 XOR 7-13. */
static const char *INTEL_HOST =
    "name = \"host\"\n"
    "[[tlb]]\nname = \"L1D\"\nlevel = 1\nkind = \"data\"\nentries = 96\nways = 6\npage_sizes = [\n"
    "    \"4KiB\",\n]\n"
    "[[tlb]]\nname = \"L2\"\nlevel = 2\nkind = \"unified\"\nentries = 2048\nways = 16\npage_sizes = [\n"
    "    \"4KiB\",\n    \"2MiB\",\n]\nsource = \"tlblab probe\"\n\n[tlb.index]\ntype = \"xor\"\na = [\n"
    "    12,\n    18,\n]\nb = [\n    19,\n    25,\n]\n[walker]\nlatency = 5\n";

/* The set the XOR-7 fold puts a page in (address bits 12-18 XOR 19-25). */
static uint32_t xor7_set(const void *p) {
    uintptr_t vpn = (uintptr_t)p >> 12;
    return (uint32_t)((vpn ^ (vpn >> 7)) & 127u);
}

static void xor_index(void) {
    const char *path = temp_file(INTEL_HOST);
    char msg[256] = "";
    tlb_geometry_t g = {.reserved_sets = 0, .periods = 2};
    tlb_status_t st = tlb_geometry_from_machine(path, &g, msg, sizeof msg);
    if (st != TLB_OK) fprintf(stderr, "xor: %s\n", msg);
    CHECK(st == TLB_OK);
    unlink(path);
    /* Colors are the 14 bits the hash reads: 2^14 of them, one STLB set each. */
    CHECK(g.sets == 16384 && g.ways == 16 && g.page_shift == 12 && g.index_shift == 0);
    if (st != TLB_OK) return;
    /* An arena of that geometry (2 periods: 128 MiB): every page of one color lands in one set
     * of the hashed STLB, and 128 colors share each set. */
    tlb_status_t err;
    tlb_arena_t *a = tlb_arena_create(&g, &err, msg, sizeof msg);
    if (a == NULL) fprintf(stderr, "xor arena: %s\n", msg);
    CHECK(a != NULL);
    if (a == NULL) return;
    uint32_t per_set[128] = {0};
    for (uint32_t c = 0; c < tlb_color_count(a); c += 37) {
        uint32_t set = 128;
        for (int k = 0; k < 2; k++) {
            char *p = tlb_malloc(a, 3000, c);
            CHECK(p != NULL);
            if (p == NULL) break;
            if (set == 128) set = xor7_set(p);
            CHECK(xor7_set(p) == set);
            CHECK(xor7_set(p + 2999) == set);
        }
        if (set < 128) per_set[set]++;
    }
    uint32_t used = 0;
    for (int s = 0; s < 128; s++) used += per_set[s] > 0;
    CHECK(used == 128); /* 443 colors 37 apart reach every set */
    tlb_arena_destroy(a);
    /* The same fold inline and one bit up: colors start at bit 13. */
    read_text("[[tlb]]\nlevel = 2\nentries = 2048\nways = 16\nindex = {type = \"xor\", a = [13, 19], b = [20, 26]}\n",
              TLB_OK, "", 16384, 16);
    CHECK(last.index_shift == 13);
    read_text("[[tlb]]\nlevel = 2\nentries = 2048\nways = 16\nindex = {type = \"xor\", a = [12, 18], b = [20, 26]}\n",
              TLB_EINVAL, "the two ranges adjacent", 0, 0);
    read_text("[[tlb]]\nlevel = 2\nentries = 2048\nways = 16\n[tlb.index]\ntype = \"xor\"\na = [12, 17]\nb = [18, 23]\n",
              TLB_EINVAL, ":6: index type \"xor\" of the [[tlb]] at line 1: expected a = [lo, hi] and b = [lo, hi], 7 "
              "address bits each", 0, 0);
    read_text("[[tlb]]\nlevel = 2\nentries = 2048\nways = 16\n[tlb.index]\ntype = \"xor\"\na = [12]\n", TLB_EINVAL,
              ":7: index.a: expected [lo, hi]", 0, 0);
    read_text("[[tlb]]\nlevel = 2\nentries = 2048\nways = 16\npage_sizes = [\n  \"4KiB\",\n", TLB_EINVAL,
              ":5: array not closed", 0, 0);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_color_machine PRESETS_DIR\n");
        return 2;
    }
    presets = argv[1];
    preset_l2("zen3", 128, 16);
    preset_l2("zen3-virt", 128, 16);
    preset_l2("xeon-e5-2650", 128, 4);
    preset_l2("cortex-a7", 128, 2);
    read_text(HOST, TLB_OK, "", 128, 24);
    /* A random-like L2 as the probe writes it on the Zen 4 (docs/probe.md): the simulator's 18 ways
     * a random chain keeps, the structure's 24 in hardware_ways; coloring sizes for the structure. */
    read_text("[[tlb]]\nlevel = 2\nkind = \"data\"\nentries = 2304\nways = 18\nreplacement = \"random\"\n"
              "hardware_ways = 24\n",
              TLB_OK, "", 128, 24);
    read_text("[[tlb]]\nlevel = 2\nentries = 2304\nways = 18\nhardware_ways = 16\n", TLB_EINVAL,
              ":1: the [[tlb]] level 2 has hardware_ways = 16, fewer than its 18 ways", 0, 0);
    read_text("[[tlb]]\nlevel = 2\nentries = 2304\nways = 18\nhardware_ways = -3\n", TLB_EINVAL,
              ":5: hardware_ways: expected a positive integer", 0, 0);
    read_text("[[tlb]]\nlevel = 1\nkind = \"data\"\nentries = 32\nways = \"full\"\n", TLB_EINVAL,
              "no set-associative", 0, 0);
    read_text("[[tlb]]\nlevel = 2\nentries = 3000\nways = 24\n", TLB_EINVAL, "not a power-of-two", 0, 0);
    read_text("[[tlb]]\nlevel = 2\nentries = 2048\nways = 16\n[tlb.index]\ntype = \"skewed\"\n", TLB_EINVAL,
              "hashed set index", 0, 0);
    xor_index();
    read_text("[[tlb]]\nlevel = 2\nentries = many\n", TLB_EINVAL, ":3: entries: expected a positive integer", 0, 0);
    read_text("[[tlb]]\nlevel 2\n", TLB_EINVAL, ":2: expected `key = value`", 0, 0);
    {
        char msg[256] = "";
        tlb_geometry_t g = {0};
        CHECK(tlb_geometry_from_machine("/nonexistent/host.toml", &g, msg, sizeof msg) == TLB_EINVAL);
        CHECK(strstr(msg, "/nonexistent/host.toml: cannot open") != NULL);
    }
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("test_color_machine: all checks passed\n");
    return 0;
}
