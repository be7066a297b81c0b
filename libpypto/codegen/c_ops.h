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
