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
