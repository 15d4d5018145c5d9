/* MiBench basicmath_small's algorithm (seed 004 Table 1: "Mathematical calculations"), for
 * tracing under Valgrind Lackey: cubic equations solved in closed form over MiBench's small grid
 * of coefficients, integer square roots by the bit-by-bit method, degree/radian conversions.
 * Compute-bound with a few stack slots per iteration, which is why seed 004 §V saw the fewest
 * TLB misses on it. `-q` prints only a checksum. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#define PI 3.14159265358979323846

static void solve_cubic(double a, double b, double c, double d, int *solutions, double *x) {
    double a1 = b / a, a2 = c / a, a3 = d / a;
    double q = (a1 * a1 - 3.0 * a2) / 9.0;
    double r = (2.0 * a1 * a1 * a1 - 9.0 * a1 * a2 + 27.0 * a3) / 54.0;
    double r2_q3 = r * r - q * q * q;
    if (r2_q3 <= 0) {
        double theta = acos(r / sqrt(q * q * q));
        *solutions = 3;
        x[0] = -2.0 * sqrt(q) * cos(theta / 3.0) - a1 / 3.0;
        x[1] = -2.0 * sqrt(q) * cos((theta + 2.0 * PI) / 3.0) - a1 / 3.0;
        x[2] = -2.0 * sqrt(q) * cos((theta + 4.0 * PI) / 3.0) - a1 / 3.0;
    } else {
        *solutions = 1;
        x[0] = pow(sqrt(r2_q3) + fabs(r), 1 / 3.0);
        x[0] += q / x[0];
        x[0] *= (r < 0.0) ? 1 : -1;
        x[0] -= a1 / 3.0;
    }
}

struct int_sqrt { unsigned sqrt, frac; };

static void usqrt(unsigned long x, struct int_sqrt *q) {
    unsigned long a = 0, r = 0, e = 0;
    for (int i = 0; i < 32; i++) {
        r = (r << 2) + ((x >> 30) & 3);
        x <<= 2;
        a <<= 1;
        e = (a << 1) + 1;
        if (r >= e) { r -= e; a++; }
    }
    q->sqrt = (unsigned)(a >> 16);
    q->frac = (unsigned)(a & 0xffff);
}

int main(int argc, char **argv) {
    int quiet = argc > 1 && strcmp(argv[1], "-q") == 0;
    double x[3], sum = 0;
    int solutions;
    struct int_sqrt q;
    static const double fixed[][4] = {
        {1.0, -10.5, 32.0, -30.0}, {1.0, -4.5, 17.0, -30.0}, {1.0, -3.5, 22.0, -31.0},
        {1.0, -13.7, 1.0, -35.0}, {3.0, 12.34, 5.0, 12.0}, {-8.0, -67.89, 6.0, -23.6},
        {45.0, 8.67, 7.5, 34.0}, {-12.0, -1.7, 5.3, 16.0},
    };
    for (unsigned i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        solve_cubic(fixed[i][0], fixed[i][1], fixed[i][2], fixed[i][3], &solutions, x);
        for (int k = 0; k < solutions; k++) sum += x[k];
        if (!quiet) printf("Solutions: %d %f\n", solutions, x[0]);
    }
    /* MiBench basicmath_small's grid of coefficients. */
    for (double a1 = 1; a1 < 10; a1++)
        for (double b1 = 10; b1 > 0; b1--)
            for (double c1 = 5; c1 < 15; c1 += 0.5)
                for (double d1 = -1; d1 > -11; d1--) {
                    solve_cubic(a1, b1, c1, d1, &solutions, x);
                    for (int k = 0; k < solutions; k++) sum += x[k];
                }
    for (unsigned long i = 0; i < 1001; i += 2) { usqrt(i, &q); sum += q.sqrt; }
    usqrt(0x3fed0169UL, &q);
    sum += q.sqrt;
    for (double d = 0.0; d <= 360.0; d += 1.0) sum += d * PI / 180.0;
    for (double r = 0.0; r <= 2 * PI + 1e-6; r += PI / 180.0) sum += r * 180.0 / PI;
    printf("checksum %.6f\n", sum);
    return 0;
}
