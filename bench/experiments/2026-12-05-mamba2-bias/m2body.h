typedef struct { double s[4], abs[4]; } Out;
#define BODY(NAME, T) \
static void NAME(int L, int D, Out *o) { \
  double *x = rd("x"), *dy = rd("dy"), *Alog = rd("A_log"), *wdt = rd("wdt"), *bdt = rd("bdt"), *wB = rd("wB"), *bB = rd("bB"), \
    *wC = rd("wC"), *bC = rd("bC"), *Wz = rd("Wz"), *bz = rd("bz"), *Ds = rd("Dskip"); \
  int K = 64; T r = (T)(1.0 / sqrt((double)D)); \
  T *pdt = calloc(L, sizeof(T)), *Bt = calloc(L, sizeof(T)), *Ct = calloc(L, sizeof(T)); \
  T *z = calloc((size_t)L*D, sizeof(T)), *h = calloc((size_t)L*D, sizeof(T)), *a = calloc((size_t)L*D, sizeof(T)); \
  T eA = (T)exp(Alog[0]); \
  for (int t = 0; t < L; t++) { T s1 = 0, s2 = 0, s3 = 0; \
    for (int c = 0; c < D; c++) { s1 += (T)wdt[c]*(T)x[t*D+c]; s2 += (T)wB[c]*(T)x[t*D+c]; s3 += (T)wC[c]*(T)x[t*D+c]; } \
    pdt[t] = (T)bdt[0] + r*s1; Bt[t] = (T)bB[0] + r*s2; Ct[t] = (T)bC[0] + r*s3; \
    for (int c = 0; c < D; c++) { int hd = c / K, j = c % K; T s = (T)bz[c]; \
      for (int i = 0; i < K; i++) s += (T)x[t*D+hd*K+i]*WR((T)Wz[((long)hd*K+i)*K+j]); z[t*D+c] = s; } } \
  for (int t = 0; t < L; t++) { T dt = (T)log1p(exp((double)pdt[t])); \
    for (int c = 0; c < D; c++) { T av = (T)exp(-(double)(eA*dt)); a[t*D+c] = av; T b = dt*Bt[t]*(T)x[t*D+c]; \
      h[t*D+c] = t == 0 ? b : av*h[(t-1)*D+c] + b; } } \
  T *dh = calloc(D, sizeof(T)); double dAl = 0, dbdt = 0, dbB = 0, dbC = 0, aAl = 0, adbdt = 0, adbB = 0, adbC = 0; \
  for (int t = L - 1; t >= 0; t--) { T dt = (T)log1p(exp((double)pdt[t])), dB = 0, dC = 0, ddt = 0, dAlt = 0; \
    for (int c = 0; c < D; c++) { long e = (long)t*D+c; T zz = z[e], sg = (T)(1/(1+exp(-(double)zz))), g = zz*sg; \
      T dyv = (T)dy[e]; dC += dyv*g*h[e]; \
      T dhv = dyv*g*Ct[t] + (t + 1 < L ? a[e+D]*dh[c] : 0); dh[c] = dhv; \
      T dla = t == 0 ? 0 : dhv*a[e]*h[e-D]; \
      dB += dhv*dt*(T)x[e]; ddt += dhv*Bt[t]*(T)x[e] + dla*(-eA); dAlt += dla*(-eA*dt); } \
    T dp = ddt*(T)(1/(1+exp(-(double)pdt[t]))); \
    dAl += dAlt; aAl += fabs((double)dAlt); dbdt += dp; adbdt += fabs((double)dp); dbB += dB; adbB += fabs((double)dB); dbC += dC; adbC += fabs((double)dC); } \
  o->s[0] = dAl; o->s[1] = dbdt; o->s[2] = dbB; o->s[3] = dbC; o->abs[0] = aAl; o->abs[1] = adbdt; o->abs[2] = adbB; o->abs[3] = adbC; }
BODY(run_d, double)
BODY(run_f, float)
