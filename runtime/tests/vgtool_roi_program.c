/* A program with a region of interest (tlblab/roi.h): 64 pages written inside it, one byte each,
 * and a checksum outside it. Natively the marks do nothing and the checksum must come out;
 * under tlblab's Valgrind tool (ctest vgtool_roi_stream, tests/test_vgtool.py) the marks bracket
 * exactly the 64 stores. */
#include <stdio.h>
#include <stdlib.h>

#include "tlblab/roi.h"

#define PAGES 64
static unsigned char pages[PAGES * 4096];

int main(void)
{
   unsigned long sum = 0;
   for (int i = 0; i < PAGES * 4096; i += 512)
      sum += pages[i]; /* initialisation: not in the region */
   TLBLAB_ROI_BEGIN();
   for (int p = 0; p < PAGES; p++)
      ((volatile unsigned char *)pages)[p * 4096 + 8] = (unsigned char)(p + 1);
   TLBLAB_ROI_END();
   for (int p = 0; p < PAGES; p++)
      sum += pages[p * 4096 + 8];
   if (sum != (unsigned long)PAGES * (PAGES + 1) / 2) {
      fprintf(stderr, "roi program: checksum %lu, expected %d\n", sum, PAGES * (PAGES + 1) / 2);
      return 1;
   }
   return 0;
}
