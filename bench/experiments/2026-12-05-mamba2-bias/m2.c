#include "npy.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
static const char *dir;
static double *rd(const char *n) { char p[512], e[512]; double *d; long sh[4]; int nd;
  snprintf(p, sizeof p, "%s/%s.npy", dir, n); if (npy_read(p, &d, sh, &nd, e, sizeof e)) { fprintf(stderr, "%s\n", e); exit(1);} return d; }
#include <string.h>
#include <stdint.h>
static int BFW;
static float bf16r(float f) { uint32_t u; memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); u &= 0xffff0000u; memcpy(&f, &u, 4); return f; }
#define WR(v) (BFW ? (__typeof__(v))bf16r((float)(v)) : (v))
#define T_ double
#include "m2body.h"
#undef T_
int main(int argc, char **argv) {
  dir = argv[1]; int L = atoi(argv[2]), D = atoi(argv[3]);
  Out o64, o32, o32b; run_d(L, D, &o64); run_f(L, D, &o32); BFW = 1; run_f(L, D, &o32b);
  const char *nm[] = {"dA_log","dbdt","dbB","dbC"};
  double *k[4] = {rd("dA_log"), rd("dbdt"), rd("dbB"), rd("dbC")};
  for (int i = 0; i < 4; i++)
    printf("%-7s ref64 % .6e  fp32-naive rel %.2e  fp32+bf16 Wz rel %.2e  kernel rel %.2e   cond(sum|terms|/|sum|) %.1f\n", nm[i], o64.s[i],
      fabs(o32.s[i]-o64.s[i])/fabs(o64.s[i]), fabs(o32b.s[i]-o64.s[i])/fabs(o64.s[i]), fabs(k[i][0]-o64.s[i])/fabs(o64.s[i]), o64.abs[i]/fabs(o64.s[i]));
}
