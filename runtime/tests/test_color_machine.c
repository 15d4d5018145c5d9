/* tlb_geometry_from_machine (tlblab/color.h): the colored level's geometry read from machine files.
 * Given the presets (whose L2 levels are known: presets/ *.toml), then sets x ways of their L2; given
 * a file as `tlblab probe --out` writes it (a measured 128 x 24 L2, comments, sub-tables), then that;
 * given bad files, then TLB_EINVAL with a message naming the file and line. Usage:
 * test_color_machine PRESETS_DIR (ctest: color_machine). */
#include "tlblab/color.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                                                 \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__, __func__, #cond); \
            failures++;                                                                             \
        }                                                                                           \
    } while (0)

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

static void read_text(const char *text, tlb_status_t want, const char *want_msg, uint32_t sets, uint32_t ways) {
    const char *path = temp_file(text);
    char msg[256] = "";
    tlb_geometry_t g = {0};
    tlb_status_t st = tlb_geometry_from_machine(path, &g, msg, sizeof msg);
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
    read_text("[[tlb]]\nlevel = 1\nkind = \"data\"\nentries = 32\nways = \"full\"\n", TLB_EINVAL,
              "no set-associative", 0, 0);
    read_text("[[tlb]]\nlevel = 2\nentries = 3000\nways = 24\n", TLB_EINVAL, "not a power-of-two", 0, 0);
    read_text("[[tlb]]\nlevel = 2\nentries = 2048\nways = 12\n[tlb.index]\ntype = \"xor\"\n", TLB_EINVAL,
              "hashed set index", 0, 0);
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
