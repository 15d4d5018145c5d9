/* MiBench susan's algorithm (seed 004 Table 1: "Recognize image corner and edge"), for tracing
 * under Valgrind Lackey: SUSAN (Smith & Brady 1997) smoothing, edge and corner responses over a
 * greyscale image, each from the USAN of a pixel: the pixels of a 37-pixel circular mask whose
 * brightness is close to the centre's, weighted through a brightness look-up table (MiBench's
 * setup_brightness_lut, threshold t = 20, form 6). MiBench's input_small.pgm is not
 * redistributed here: with no file the program generates a W x H image (default 76 x 95) of
 * shapes and noise from a fixed LCG; `susan FILE.pgm` reads a binary PGM (P5) instead.
 * Prints counts and a checksum. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int MASK[37][2] = {
    {-3, -1}, {-3, 0}, {-3, 1}, {-2, -2}, {-2, -1}, {-2, 0}, {-2, 1}, {-2, 2}, {-1, -3},
    {-1, -2}, {-1, -1}, {-1, 0}, {-1, 1}, {-1, 2}, {-1, 3}, {0, -3}, {0, -2}, {0, -1},
    {0, 0},   {0, 1},   {0, 2},  {0, 3},  {1, -3}, {1, -2}, {1, -1}, {1, 0},  {1, 1},
    {1, 2},   {1, 3},   {2, -2}, {2, -1}, {2, 0},  {2, 1},  {2, 2},  {3, -1}, {3, 0}, {3, 1},
};

static unsigned long long lcg(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL; /* 64-bit on ILP32 too */
    return *s >> 33;
}

static unsigned char *read_pgm(const char *path, int *w, int *h) {
    FILE *f = fopen(path, "rb");
    int maxv;
    if (!f || fscanf(f, "P5 %d %d %d", w, h, &maxv) != 3 || maxv > 255) {
        fprintf(stderr, "susan: %s: expected a binary PGM (P5) of 8-bit pixels\n", path);
        exit(2);
    }
    fgetc(f);
    unsigned char *img = malloc((size_t)*w * *h);
    if (fread(img, 1, (size_t)*w * *h, f) != (size_t)*w * *h) {
        fprintf(stderr, "susan: %s: image data is short\n", path);
        exit(2);
    }
    fclose(f);
    return img;
}

int main(int argc, char **argv) {
    int w = 76, h = 95;
    unsigned char *img = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-s") == 0 && i + 2 < argc) { w = atoi(argv[++i]); h = atoi(argv[++i]); }
        else img = read_pgm(argv[i], &w, &h);
    }
    if (w < 8 || h < 8) { fprintf(stderr, "susan: image must be at least 8 x 8\n"); return 2; }
    if (!img) {
        unsigned long long s = 4;
        img = malloc((size_t)w * h);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int v = 40;
                if (x > w / 5 && x < w / 2 && y > h / 6 && y < h / 2) v = 200;
                int dx = x - 2 * w / 3, dy = y - 2 * h / 3;
                if (dx * dx + dy * dy < (w / 6) * (w / 6)) v = 140;
                img[y * w + x] = (unsigned char)(v + lcg(&s) % 12);
            }
    }
    /* Brightness LUT, indexed by centre - pixel + 258 (MiBench: bp = malloc(516)). */
    unsigned char *bp = malloc(516);
    for (int k = -256; k < 257; k++) {
        double t = k / 20.0;
        bp[k + 258] = (unsigned char)(100.0 * exp(-t * t * t * t * t * t));
    }
    int *r = calloc((size_t)w * h, sizeof *r);
    unsigned char *smooth = malloc((size_t)w * h);
    memcpy(smooth, img, (size_t)w * h);
    const int max_no_edges = 2650, max_no_corners = 1850;
    long edges = 0, corners = 0;
    unsigned long sum = 0;
    /* Smoothing: USAN-weighted mean over the mask (MiBench susan -s). */
    for (int y = 3; y < h - 3; y++)
        for (int x = 3; x < w - 3; x++) {
            int c = img[y * w + x], total = 0, area = 0;
            for (int m = 0; m < 37; m++) {
                int p = img[(y + MASK[m][0]) * w + x + MASK[m][1]];
                int wgt = bp[c - p + 258];
                total += wgt * p;
                area += wgt;
            }
            smooth[y * w + x] = (unsigned char)(area ? total / area : c);
        }
    /* Edges (susan -e) and corners (susan -c): the USAN area n against a geometric threshold. */
    for (int y = 3; y < h - 3; y++)
        for (int x = 3; x < w - 3; x++) {
            int c = smooth[y * w + x], n = 100, cx = 0, cy = 0;
            for (int m = 0; m < 37; m++) {
                int b = bp[c - smooth[(y + MASK[m][0]) * w + x + MASK[m][1]] + 258];
                n += b;
                cy += MASK[m][0] * b;
                cx += MASK[m][1] * b;
            }
            if (n <= max_no_edges) { r[y * w + x] = max_no_edges - n; edges++; }
            if (n <= max_no_corners && (cx * cx + cy * cy) > (n * n) / 2) corners++;
        }
    for (int i = 0; i < w * h; i++) sum = sum * 31 + (unsigned long)r[i] + smooth[i];
    printf("%d x %d: %ld edge pixels, %ld corner candidates, checksum %lu\n", w, h, edges, corners, sum);
    free(img); free(bp); free(r); free(smooth);
    return 0;
}
