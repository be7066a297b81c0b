/* pypto C op helpers: elementwise semantics that C operators do not give directly. Each
   matches numpy: NaN propagates through max/min, remainder takes the divisor's sign,
   integer division floors. */
static inline float pp_fmax(float a, float b) { return (a > b || a != a) ? a : b; }
static inline float pp_fmin(float a, float b) { return (a < b || a != a) ? a : b; }
static inline float pp_fremainder(float a, float b) {
    float r = fmodf(a, b);
    return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}
static inline int64_t pp_ifloordiv(int64_t a, int64_t b) {
    if (b == 0) return 0;
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t pp_iremainder(int64_t a, int64_t b) {
    return b == 0 ? 0 : a - pp_ifloordiv(a, b) * b;
}
static inline int64_t pp_ifmod(int64_t a, int64_t b) { return b == 0 ? 0 : a % b; }
static inline int64_t pp_igcd(int64_t a, int64_t b) {
    uint64_t x = a < 0 ? -(uint64_t)a : (uint64_t)a, y = b < 0 ? -(uint64_t)b : (uint64_t)b;
    while (y) { uint64_t t = x % y; x = y; y = t; }
    return (int64_t)x;
}

/* Stable argsort of n keys (merge sort on indices): equal keys keep their order; NaN sorts
   last ascending and first descending. */
#define PP_ARGSORT(NAME, T, ISNAN)                                                           \
static void NAME(const T *key, int64_t *idx, int64_t n, int desc) {                          \
    int64_t tmp_small[256];                                                                  \
    int64_t *tmp = n <= 256 ? tmp_small : (int64_t *)malloc(sizeof(int64_t) * (size_t)n);    \
    for (int64_t i = 0; i < n; i++) idx[i] = i;                                              \
    for (int64_t w = 1; w < n; w *= 2) {                                                     \
        for (int64_t lo = 0; lo < n; lo += 2 * w) {                                          \
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;     \
            int64_t a = lo, b = mid, k = lo;                                                 \
            while (a < mid && b < hi) {                                                      \
                T ka = key[idx[a]], kb = key[idx[b]];                                        \
                int take_b;                                                                  \
                if (ISNAN(ka) || ISNAN(kb)) take_b = desc ? (ISNAN(kb) && !ISNAN(ka))        \
                                                          : (ISNAN(ka) && !ISNAN(kb));       \
                else take_b = desc ? (kb > ka) : (kb < ka);                                  \
                tmp[k++] = take_b ? idx[b++] : idx[a++];                                     \
            }                                                                                \
            while (a < mid) tmp[k++] = idx[a++];                                             \
            while (b < hi) tmp[k++] = idx[b++];                                              \
        }                                                                                    \
        for (int64_t i = 0; i < n; i++) idx[i] = tmp[i];                                     \
    }                                                                                        \
    if (tmp != tmp_small) free(tmp);                                                         \
}
#define PP_NOT_NAN(x) 0
#define PP_IS_NAN(x) ((x) != (x))
PP_ARGSORT(pp_argsort_f, float, PP_IS_NAN)
PP_ARGSORT(pp_argsort_i, int64_t, PP_NOT_NAN)

/* cast with a CastMode and a SaturationMode (runtime/cast.py is the definition in numpy).
   Modes: 0 rint (ties to even), 1 round (ties away from 0), 2 floor, 3 ceil, 4 trunc,
   5 odd. q is a float64 below 2^53 in magnitude wherever a fraction matters, so every step
   is exact. */
static inline double pp_rnd(double q, int mode) {
    switch (mode) {
    case 0: return nearbyint(q);
    case 1: return copysign(floor(fabs(q) + 0.5), q);
    case 2: return floor(q);
    case 3: return ceil(q);
    case 4: return trunc(q);
    default: {
        double t = trunc(q);
        return (t != q && fmod(t, 2.0) == 0.0) ? t + (q > 0 ? 1.0 : -1.0) : t;
    }
    }
}
/* x rounded to a binary float format of p mantissa bits, minimum exponent emin and largest
   finite value big (the result is exactly representable there). Overflow gives inf under
   rint and round and under floor (ceil) of a negative (positive) value, big otherwise;
   sat clamps every result to [-big, big]; NaN stays NaN. */
static inline double pp_fround(double x, int p, int emin, double big, int mode, int sat) {
    if (x != x || x == 0.0 || isinf(x)) return (sat && isinf(x)) ? copysign(big, x) : x;
    int ex;
    (void)frexp(fabs(x), &ex);
    int e = ex - 1 < emin ? emin : ex - 1;
    double ulp = ldexp(1.0, e - (p - 1));
    double y = pp_rnd(x / ulp, mode) * ulp;
    if (fabs(y) > big) {
        int to_inf = mode <= 1 || (mode == 2 && x < 0) || (mode == 3 && x > 0);
        y = (to_inf && !sat) ? copysign(INFINITY, x) : copysign(big, x);
    }
    return y;
}
/* float -> integer: rounded in the mode; NaN gives 0 and +-inf maxv / minv; with sat every
   value is clamped to [minv, maxv] (lo, hi: the same bounds as doubles), without it the value
   wraps modulo 2^64 here and modulo 2^bits in the caller's narrowing store. u64: the target
   is uint64 (values from 2^63 convert through uint64). */
static inline int64_t pp_f2i(double x, int mode, int sat, double lo, double hi, int64_t minv,
                             int64_t maxv, int u64) {
    if (x != x) return 0;
    if (isinf(x)) return x > 0 ? maxv : minv;
    double r = pp_rnd(x, mode);
    if (sat) {
        if (r >= hi) return maxv;
        if (r <= lo) return minv;
        return u64 ? (int64_t)(uint64_t)r : (int64_t)r;
    }
    double m = fmod(r, 18446744073709551616.0);
    if (m >= 9223372036854775808.0) m -= 18446744073709551616.0;
    else if (m < -9223372036854775808.0) m += 18446744073709551616.0;
    return (int64_t)m;
}
static inline int64_t pp_isat(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : (v > hi ? hi : v);
}
/* Philox4x32 (Salmon et al., SC 2011; Random123 constants): word idx % 4 of the block whose
   128-bit counter is (idx / 4 as two words, c2, c3) under key (k0, k1); runtime/philox.py is
   the same in numpy (pypto.uniform, pypto.normal) */
static inline uint32_t pp_philox(uint64_t idx, uint32_t k0, uint32_t k1, uint32_t c2,
                                 uint32_t c3, int rounds) {
    uint64_t blk = idx >> 2;
    uint32_t c[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), c2, c3};
    for (int r = 0; r < rounds; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[0] = n0; c[1] = (uint32_t)p1; c[2] = n2; c[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    return c[idx & 3];
}
/* fp8 e4m3fn / e5m2 and E8M0 (the MX scale) as stored bytes and back: decoding is exact;
   encoding rounds to nearest even through pp_fround (runtime/cast.py is the same in numpy):
   e4m3fn has no infinity, so what would be +-inf is NaN (sign kept), as ml_dtypes has it;
   an E8M0 byte is 2^(b - 127), 0xFF NaN, and is encoded from powers of two only */
static inline float pp_fp8_f(uint8_t b, int mbits, int bias, int fn) {
    int e = (b >> mbits) & ((1 << (7 - mbits)) - 1), m = b & ((1 << mbits) - 1);
    float s = (b & 0x80) ? -1.0f : 1.0f;
    if (fn ? (e == 15 && m == 7) : (e == 31)) return m || fn ? copysignf(NAN, s) : s * INFINITY;
    if (e == 0) return s * ldexpf((float)m, 1 - bias - mbits);
    return s * ldexpf((float)(m + (1 << mbits)), e - bias - mbits);
}
static inline float pp_e4m3_f(uint8_t b) { return pp_fp8_f(b, 3, 7, 1); }
static inline float pp_e5m2_f(uint8_t b) { return pp_fp8_f(b, 2, 15, 0); }
static inline float pp_e8m0_f(uint8_t b) { return b == 255 ? NAN : ldexpf(1.0f, b - 127); }
static inline uint8_t pp_f_fp8(double x, int mbits, int bias, double big, int fn) {
    uint8_t sign = signbit(x) ? 0x80 : 0;
    double y = pp_fround(x, mbits + 1, 1 - bias, big, 0, 0);
    if (y != y || (fn && isinf(y))) return sign | (fn ? 0x7F : 0x7E);
    if (isinf(y)) return sign | 0x7C;
    double a = fabs(y);
    if (a < ldexp(1.0, 1 - bias)) return sign | (uint8_t)ldexp(a, bias - 1 + mbits);
    int ex;
    double f = frexp(a, &ex);               /* a = f 2^ex, f in [0.5, 1) */
    int m = (int)ldexp(f * 2.0 - 1.0, mbits);
    return sign | (uint8_t)(((ex - 1 + bias) << mbits) | m);
}
static inline uint8_t pp_f_e4m3(float x) { return pp_f_fp8(x, 3, 7, 448.0, 1); }
static inline uint8_t pp_f_e5m2(float x) { return pp_f_fp8(x, 2, 15, 57344.0, 0); }
static inline uint8_t pp_f_e8m0(float x) {
    if (!(x > 0.0f) || isinf(x)) return 255;
    int b = ilogbf(x) + 127;
    return (uint8_t)(b < 0 ? 0 : b > 254 ? 254 : b);
}
/* does (va, ia) come before (vb, ib) in a long sort's bitonic network (runtime/interp.py
   `before`): positions >= n are padding, after everything; NaN last ascending and first
   descending; equal values in position order */
#define PP_BEFORE(NAME, T, ISNAN)                                                            \
static inline int NAME(T va, int64_t ia, T vb, int64_t ib, int64_t n, int desc) {            \
    int pa = ia >= n, pb = ib >= n;                                                          \
    if (pa | pb) return pa == pb ? ia < ib : pb;                                             \
    int na = ISNAN(va), nb = ISNAN(vb);                                                      \
    if (na | nb) return na == nb ? ia < ib : (desc ? na : nb);                               \
    if (va != vb) return desc ? va > vb : va < vb;                                           \
    return ia < ib;                                                                          \
}
PP_BEFORE(pp_before_f, float, PP_IS_NAN)
PP_BEFORE(pp_before_i, int64_t, PP_NOT_NAN)
