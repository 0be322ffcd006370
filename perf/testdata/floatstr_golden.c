// Generates floatstr_golden.txt: nccl-tests' getFloatStr (src/util.cu, the
// snprintf version of nccl-tests 2.17+) and its "%6g"/"%8g" #wrong and
// #bitdiff columns, as glibc prints them.
//
//   gcc -O2 -o /tmp/floatstr_golden floatstr_golden.c && /tmp/floatstr_golden > floatstr_golden.txt
//
// Line format: "f <value as %a> <width> |<getFloatStr>|" and
// "g <value as %a> <width> |<%*g>|".
#include <stdio.h>
#include <stdint.h>

static void getFloatStr(double value, int width, char* str) {
  if (snprintf(str, width+1, "%*.2f", width, value) <= width) return;
  if (snprintf(str, width+1, "%*.1f", width, value) <= width) return;
  if (snprintf(str, width+1, "%*.0f", width, value) <= width) return;
  snprintf(str, width+1, width >= 7 ? "%*.1e" : "%*.0e", width, value);
}

static const double fixed[] = {
  0, 0.001, 0.004, 0.005, 0.006, 0.0049999, 0.01, 0.125, 0.5, 0.994, 0.995, 0.996, 1, 9.99, 9.994, 9.995, 9.996,
  14.15, 12.45, 99.99, 99.994, 99.995, 99.996, 314.22, 999.99, 999.994, 999.995, 999.996, 1000, 1708.6,
  3282.98, 9999.94, 9999.95, 9999.96, 12345.678, 99999.4, 99999.5, 99999.96, 123456.7, 999999.4, 999999.5,
  1e6, 1234567, 9999999.4, 9999999.5, 1.2e7, 98765432.1, 1e8, 1e9, 123456789012.0, 1e15, 1e99, 1e100, 1.5e300,
};

static uint64_t state = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state; }

int main(void) {
  char buf[64];
  int widths[] = {6, 7};
  for (unsigned i = 0; i < sizeof(fixed)/sizeof(fixed[0]); i++) {
    for (int w = 0; w < 2; w++) {
      getFloatStr(fixed[i], widths[w], buf);
      printf("f %a %d |%s|\n", fixed[i], widths[w], buf);
    }
  }
  // Random values over 1e-4 .. 1e13, log-uniform, and rounded to 2 decimals
  // (what a time or bandwidth looks like), half of them.
  for (int i = 0; i < 2000; i++) {
    double mant = (double)(next() % 1000000) / 1000000.0 * 9 + 1;   // [1, 10)
    int exp = (int)(next() % 18) - 4;
    double v = mant;
    for (int e = 0; e < exp; e++) v *= 10;
    for (int e = 0; e > exp; e--) v /= 10;
    if (i % 2) v = (double)(long long)(v * 100 + 0.5) / 100;
    for (int w = 0; w < 2; w++) {
      getFloatStr(v, widths[w], buf);
      printf("f %a %d |%s|\n", v, widths[w], buf);
    }
  }
  // #wrong ("%6g") and #bitdiff ("%8g") of element counts.
  static const double counts[] = {0, 1, 7, 99, 100000, 123456, 999999, 1000000, 1234567, 9999999, 12345678, 1048576, 268435456, 4294967296.0};
  for (unsigned i = 0; i < sizeof(counts)/sizeof(counts[0]); i++) {
    snprintf(buf, sizeof buf, "%6g", counts[i]);
    printf("g %a 6 |%s|\n", counts[i], buf);
    snprintf(buf, sizeof buf, "%8g", counts[i]);
    printf("g %a 8 |%s|\n", counts[i], buf);
  }
  return 0;
}
