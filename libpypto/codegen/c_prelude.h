/* pypto C prelude: types, index helpers and vectorisable math shared by every program. */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>      /* non-temporal stores (pp_store) */
#endif

typedef void (*pp_prog)(void *const *T, const int64_t *S, char *B);

/* Before a loop over the ACC_LANES lanes of a reduction: keep it a loop, which gcc turns into
   one vector operation, rather than unrolling it into scalar code first. */
#define PP_LANES _Pragma("GCC unroll 1")

static inline int64_t pp_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t pp_mod(int64_t a, int64_t b) { return a - pp_floordiv(a, b) * b; }
static inline int64_t pp_cdiv(int64_t a, int64_t b) { return -pp_floordiv(-a, b); }
static inline int64_t pp_min(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t pp_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* tstore into a big output bypasses the caches with non-temporal stores: the output is not
   read again soon, and no read-for-ownership of its lines halves the traffic of a store.
   Smaller outputs take ordinary stores and stay in the cache for whoever reads them next. */
#define PP_STREAM_BYTES (16 << 20)
static inline int pp_stream(int64_t tensor_bytes) { return tensor_bytes >= PP_STREAM_BYTES; }
static inline void pp_store(void *dst, const void *src, int64_t n, int stream) {
#if defined(__SSE2__)
    if (stream && n >= 256) {
        char *d = (char *)dst;
        const char *s = (const char *)src;
        int64_t head = (int64_t)(-(uintptr_t)d & 63);   /* up to a cache-line boundary */
        memcpy(d, s, (size_t)head);
        d += head, s += head, n -= head;
        for (; n >= 64; d += 64, s += 64, n -= 64)
            for (int q = 0; q < 64; q += 16)
                _mm_stream_si128((__m128i *)(d + q), _mm_loadu_si128((const __m128i *)(s + q)));
        memcpy(d, s, (size_t)n);
        return;
    }
#endif
    memcpy(dst, src, (size_t)n);
}
/* 64 bytes made in registers into GM: streamed (see pp_store) when asked and aligned */
static inline void pp_put64(void *dst, const void *src, int stream) {
#if defined(__SSE2__)
    if (stream && !((uintptr_t)dst & 15)) {
        for (int q = 0; q < 64; q += 16)
            _mm_stream_si128((__m128i *)((char *)dst + q),
                             _mm_loadu_si128((const __m128i *)((const char *)src + q)));
        return;
    }
#endif
    memcpy(dst, src, 64);
}
/* after a streaming tstore: order its stores before whatever the task does next */
static inline void pp_store_end(int stream) {
#if defined(__SSE2__)
    if (stream) _mm_sfence();
#endif
    (void)stream;
}

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

/* fp16 is stored as its bits (uint16_t, like bf16) and converted with integer and float
   arithmetic that gcc vectorises on any x86 vector ISA (its _Float16 conversions do not
   vectorise in gcc 12, and need AVX-512 FP16 or F16C). Exact: the same bits as IEEE
   round-to-nearest-even conversion for every float (checked against the hardware's over all
   2^32 inputs); NaN stays NaN (quiet, sign and top payload bits kept, as the hardware does).
   Selects are written as masks: nested conditionals keep gcc from vectorising for AVX2. */
static inline float pp_fbits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t pp_ubits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float pp_h2f(uint16_t h) {
    uint32_t e = (uint32_t)(h & 0x7c00u), u = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t inf = -(uint32_t)(e == 0x7c00u), sub = -(uint32_t)(e == 0);
    uint32_t nrm = u + (112u << 23) + (inf & (112u << 23));     /* rebias; inf/NaN: all ones */
    uint32_t den = pp_ubits(pp_fbits(u + (113u << 23)) - pp_fbits(113u << 23));  /* exact */
    return pp_fbits((nrm & ~sub) | (den & sub) | ((uint32_t)(h & 0x8000u) << 16));
}
static inline uint16_t pp_f2h(float f) {
    uint32_t v = pp_ubits(f), sign = v & 0x80000000u, a = v ^ sign;
    const uint32_t magic = 126u << 23;     /* below 2^-14 the float add rounds to a subnormal */
    uint32_t sub = pp_ubits(pp_fbits(a) + pp_fbits(magic)) - magic;
    uint32_t nrm = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;   /* ties to even */
    uint32_t nan = -(uint32_t)(a > 0x7f800000u), big = -(uint32_t)(a >= (143u << 23)),
             low = -(uint32_t)(a < (113u << 23));
    uint32_t o = (low & sub) | (~low & nrm);
    o = (big & 0x7c00u) | (~big & o);
    o = (nan & (0x7e00u | ((a >> 13) & 0x3ffu))) | (~nan & o);
    return (uint16_t)(o | (sign >> 16));
}

/* Vector math. With glibc's libmvec (compiler.py passes -DPP_MVEC and links -lmvec when the
   compiler can), the float functions of math.h are declared SIMD-enabled here, as glibc's own
   math.h does only under -ffast-math: gcc then vectorises a loop over tanhf, expf, erff, powf
   ... into calls of libmvec's vector variants (_ZGVeN16v_tanhf for AVX-512, _ZGVdN8v_ for
   AVX2, _ZGVbN4v_ for SSE), without -ffast-math's licence to reorder anything else.
   libmvec's float variants are within 4 ulp (glibc's manual; tests/unit/codegen/
   test_vecmath.py states the bound per function). The scalar tail of such a loop calls the
   scalar libm function, which may differ from the vector variant in the last bit: a result
   depends on the element's value and its place in the tile, never on the thread.
   Without libmvec (another C library) the declarations are plain and only exp and sigmoid,
   through pp_expf below, vectorise. */
#if defined(PP_MVEC) && defined(__GNUC__)
#define PP_SIMD __attribute__((simd("notinbranch")))
#else
#define PP_SIMD
#endif
PP_SIMD float expf(float);
PP_SIMD float exp2f(float);
PP_SIMD float expm1f(float);
PP_SIMD float logf(float);
PP_SIMD float log2f(float);
PP_SIMD float log10f(float);
PP_SIMD float log1pf(float);
PP_SIMD float sinf(float);
PP_SIMD float cosf(float);
PP_SIMD float tanf(float);
PP_SIMD float asinf(float);
PP_SIMD float acosf(float);
PP_SIMD float atanf(float);
PP_SIMD float sinhf(float);
PP_SIMD float coshf(float);
PP_SIMD float tanhf(float);
PP_SIMD float asinhf(float);
PP_SIMD float acoshf(float);
PP_SIMD float atanhf(float);
PP_SIMD float erff(float);
PP_SIMD float erfcf(float);
PP_SIMD float cbrtf(float);
PP_SIMD float powf(float, float);
PP_SIMD float atan2f(float, float);
PP_SIMD float hypotf(float, float);

#if defined(PP_MVEC)
static inline float pp_expf(float x) { return expf(x); }
#else
/* exp(x) in float: range reduction by ln2 and a degree-6 polynomial; within 2 ulp, written
   without branches so that loops over tiles vectorise. Above ln(FLT_MAX) (88.72...) n is 128
   and p >= 1, so the scaling below overflows to +inf by itself; hi = 89 only bounds n (the
   same bits as an explicit select of +inf, checked over every float input). */
static inline float pp_expf(float x) {
    const float hi = 89.0f, lo = -103.972084f;
    float xc = x > hi ? hi : (x < lo ? lo : x);
    float n = nearbyintf(xc * 1.44269504088896341f);
    float r = xc - n * 0.693145751953125f;
    r = r - n * 1.428606765330187045e-06f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666418f
              + r * (0.00833345205f + r * 0.00138888899f)))));
    /* scale by 2^n in two steps so that n down to -150 stays representable (both halves
       are exact powers of two and p * 2^n1 is exact, so the split does not change bits) */
    int32_t ni = (int32_t)n;
    int32_t n1 = ni >> 1, n2 = ni - n1;
    union { uint32_t u; float f; } s1, s2;
    s1.u = (uint32_t)(n1 + 127) << 23;
    s2.u = (uint32_t)(n2 + 127) << 23;
    float res = p * s1.f * s2.f;
    return x != x ? x : res;
}
#endif

/* tmatmul on the host: c[0:m, 0:n] += a[0:m, 0:k] . b[0:k, 0:n], accumulated in fp32; every
   operand has its own row stride (ldc, lda, ldb), so a and b may be read in place from L1
   tiles or GM. Rows of c from m and columns from n on are left as they are.
   Every element of c is accumulated in k order, one fused multiply-add per k, whatever the
   blocking below: the result does not depend on the tile sizes or on the thread.
   The micro-kernel keeps a PP_MR x PP_NR block of c in registers: GNU C vector types (not
   intrinsics), which gcc maps onto AVX-512 (or AVX2, or SSE) registers; it reads b in place
   (the tile is hot in the cache: packing it did not pay). fp16/bf16 operands are first
   widened to fp32 in the workspace W (m*k floats for a, then k*n for b). Rows and columns
   beyond whole blocks take a plain loop. */
enum { PP_F32, PP_F16, PP_BF16 };
#define PP_MR 8           /* rows of c per register block */
#define PP_NR 32          /* columns of c per register block: two 16-float vectors */
#define PP_KC 256         /* k steps per pass over a block: its strip of b stays in L1/L2 */
typedef float pp_f32x16 __attribute__((vector_size(64), aligned(4)));

static inline float pp_elem(const void *p, int dt, int64_t i) {
    if (dt == PP_BF16) return pp_bf2f(((const uint16_t *)p)[i]);
#ifdef __FLT16_MAX__                   /* the compiler has _Float16 */
    if (dt == PP_F16) return (float)((const _Float16 *)p)[i];
#endif
    return ((const float *)p)[i];
}

/* c[0:PP_MR, 0:PP_NR] += a[0:PP_MR, 0:kc] . b[0:kc, 0:PP_NR]  (row strides ldc, lda, ldb) */
static inline void pp_mm_block(float *c, int64_t ldc, const float *a, int64_t lda,
                               const float *b, int64_t ldb, int64_t kc) {
    enum { NV = PP_NR / 16 };
    pp_f32x16 acc[PP_MR][NV];
    for (int i = 0; i < PP_MR; i++)
        for (int v = 0; v < NV; v++) acc[i][v] = *(const pp_f32x16 *)(c + i * ldc + 16 * v);
    for (int64_t k = 0; k < kc; k++) {
        const pp_f32x16 *bk = (const pp_f32x16 *)(b + k * ldb);
        for (int i = 0; i < PP_MR; i++)
            for (int v = 0; v < NV; v++) acc[i][v] += a[i * lda + k] * bk[v];
    }
    for (int i = 0; i < PP_MR; i++)
        for (int v = 0; v < NV; v++) *(pp_f32x16 *)(c + i * ldc + 16 * v) = acc[i][v];
}

/* x[0:rows, 0:cols] (row stride ld) as fp32: x itself when it is fp32, else widened into w */
static const float *pp_widen(const void *x, int dt, int64_t ld, int64_t rows, int64_t cols,
                             float *w, int64_t *ldw) {
    if (dt == PP_F32) {
        *ldw = ld;
        return (const float *)x;
    }
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) w[i * cols + j] = pp_elem(x, dt, i * ld + j);
    *ldw = cols;
    return w;
}

static void pp_matmul(float *restrict c, int64_t ldc, const void *a, int64_t lda, int adt,
                      const void *b, int64_t ldb, int bdt, int64_t m, int64_t n, int64_t k,
                      float *restrict W) {
    int64_t la, lb;
    const float *af = pp_widen(a, adt, lda, m, k, W, &la);
    const float *bf = pp_widen(b, bdt, ldb, k, n, W + (adt == PP_F32 ? 0 : m * k), &lb);
    const int64_t M0 = m / PP_MR * PP_MR, N0 = n / PP_NR * PP_NR;   /* whole blocks */
    for (int64_t k0 = 0; k0 < k; k0 += PP_KC) {
        const int64_t kc = pp_min(PP_KC, k - k0);
        for (int64_t j0 = 0; j0 < N0; j0 += PP_NR) {
            for (int64_t i0 = 0; i0 < M0; i0 += PP_MR)
                pp_mm_block(c + i0 * ldc + j0, ldc, af + i0 * la + k0, la, bf + k0 * lb + j0, lb,
                            kc);
            for (int64_t i = M0; i < m; i++)              /* rows below the last block */
                for (int64_t q = k0; q < k0 + kc; q++) {
                    const float aiq = af[i * la + q];
                    for (int64_t j = j0; j < j0 + PP_NR; j++) c[i * ldc + j] += aiq * bf[q * lb + j];
                }
        }
        for (int64_t i = 0; i < m; i++)                   /* columns right of the last block */
            for (int64_t q = k0; q < k0 + kc; q++) {
                const float aiq = af[i * la + q];
                for (int64_t j = N0; j < n; j++) c[i * ldc + j] += aiq * bf[q * lb + j];
            }
    }
}
