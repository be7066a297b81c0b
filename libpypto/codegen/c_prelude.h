/* pypto C prelude: types, index helpers and vectorisable math shared by every program. */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

typedef void (*pp_prog)(void *const *T, const int64_t *S, char *B);

static inline int64_t pp_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t pp_mod(int64_t a, int64_t b) { return a - pp_floordiv(a, b) * b; }
static inline int64_t pp_cdiv(int64_t a, int64_t b) { return -pp_floordiv(-a, b); }
static inline int64_t pp_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t pp_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* bf16 is stored as the upper half of an fp32; conversion rounds to nearest even. */
static inline float pp_bf2f(uint16_t h) {
    union { uint32_t u; float f; } v;
    v.u = (uint32_t)h << 16;
    return v.f;
}
static inline uint16_t pp_f2bf(float f) {
    union { uint32_t u; float f; } v;
    v.f = f;
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40u); /* NaN */
    return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
}

/* exp(x) in float: range reduction by ln2 and a degree-6 polynomial; within 2 ulp, written
   without branches so that loops over tiles vectorise. */
static inline float pp_expf(float x) {
    const float hi = 88.7228317f, lo = -103.972084f;
    float xc = x > hi ? hi : (x < lo ? lo : x);
    float n = nearbyintf(xc * 1.44269504088896341f);
    float r = xc - n * 0.693145751953125f;
    r = r - n * 1.428606765330187045e-06f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666418f
              + r * (0.00833345205f + r * 0.00138888899f)))));
    /* scale by 2^n in two steps so that n down to -150 stays representable */
    int32_t ni = (int32_t)n;
    int32_t n1 = ni / 2, n2 = ni - n1;
    union { uint32_t u; float f; } s1, s2;
    s1.u = (uint32_t)(n1 + 127) << 23;
    s2.u = (uint32_t)(n2 + 127) << 23;
    float res = p * s1.f * s2.f;
    res = x > hi ? INFINITY : res;
    return x != x ? x : res;
}

static inline float pp_tanhf(float x) { return tanhf(x); }
