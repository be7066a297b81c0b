/* pypto C prelude: types, index helpers and vectorisable math shared by every program. */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>      /* non-temporal stores (pp_store) */
#endif
#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>      /* fp16 -> fp32 conversion (pp_widen_row) */
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
/* Streamed stores are weakly ordered: the runtime fences once after each batch of tasks,
   before their successors or the caller may read what they wrote (rt.c pp_work); the
   task's own later loads see them without a fence. */

/* The fixed tree over 16 float lanes (codegen/c.py lane_tree): lane k += lane k + 8, then
   + 4, + 2, + 1, as vector adds (the loop form stays scalar): the same additions, the same
   bits. The lanes are read in one 64-byte copy: a partial copy of the array keeps gcc from
   holding it in a register, and the reduction loop before it then adds through the stack
   (a store-forwarding chain that made layernorm 4096 x 4096 2.1x slower). Compilers
   without __builtin_shufflevector and __builtin_convertvector (gcc before 12: no
   PP_VEC_BUILTINS), or PP_SUM16_LOOP, take the loop form. */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
#define PP_VEC_BUILTINS 1
#endif
#if defined(PP_VEC_BUILTINS) && !defined(PP_SUM16_LOOP)
typedef float pp_f16v __attribute__((vector_size(64)));
typedef float pp_f8 __attribute__((vector_size(32)));
typedef float pp_f4 __attribute__((vector_size(16)));
static inline float pp_sum16(const float *l) {
    pp_f16v v;
    memcpy(&v, l, 64);
    pp_f8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7)
            + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    pp_f4 c = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
    return (c[0] + c[2]) + (c[1] + c[3]);
}
#else
static inline float pp_sum16(const float *l) {
    float a[8], c[4];
    for (int k = 0; k < 8; k++) a[k] = l[k] + l[k + 8];
    for (int k = 0; k < 4; k++) c[k] = a[k] + a[k + 4];
    return (c[0] + c[2]) + (c[1] + c[3]);
}
#endif

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

/* dst[0:16] = the 16 bf16 / fp16 values at src as fp32, in whole vectors: the same values
   as pp_bf2f / pp_h2f (codegen/c_rows.py widen: a row pass's chunk reads these). */
enum { PP_F32, PP_F16, PP_BF16 };
static inline void pp_widen16(float *restrict dst, const uint16_t *src, int dt) {
#if defined(PP_VEC_BUILTINS)
    typedef uint16_t u16x16 __attribute__((vector_size(32), aligned(2)));
    typedef uint32_t u32x16 __attribute__((vector_size(64)));
    if (dt == PP_BF16) {
        u16x16 h;
        memcpy(&h, src, 32);
        u32x16 u = __builtin_convertvector(h, u32x16) << 16;
        memcpy(dst, &u, 64);
        return;
    }
#endif
#if defined(__AVX512F__)
    if (dt == PP_F16) {
        _mm512_storeu_ps(dst, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)src)));
        return;
    }
#endif
    for (int k = 0; k < 16; k++) dst[k] = dt == PP_BF16 ? pp_bf2f(src[k]) : pp_h2f(src[k]);
}

/* dst[0:32] = src[0:32] rounded to bf16 / fp16 (dt), the bits of pp_f2bf / pp_f2h, in whole
   vectors where the CPU converts (codegen/c_rows.py row_sink: a pass storing a 16-bit row
   narrows each 64-byte piece with this; gcc makes six or more instructions of pp_f2bf per
   vector). AVX512_BF16's conversion rounds to nearest even and quiets NaNs as pp_f2bf does
   but flushes fp32 subnormals to zero, so a piece holding one takes the loop. AVX-512's
   fp16 conversion is IEEE round-to-nearest-even like pp_f2h; an fp32 subnormal becomes
   zero in fp16 either way, so MXCSR's DAZ cannot change a bit. */
static inline void pp_narrow32(uint16_t *restrict dst, const float *restrict src, int dt) {
#if defined(__AVX512BF16__) && defined(__AVX512DQ__)
    if (dt == PP_BF16) {
        __m512 lo = _mm512_loadu_ps(src), hi = _mm512_loadu_ps(src + 16);
        if (!(_mm512_fpclass_ps_mask(lo, 0x20) | _mm512_fpclass_ps_mask(hi, 0x20))) {
            _mm512_storeu_si512((void *)dst, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
            return;
        }
    }
#endif
#if defined(__AVX512F__)
    if (dt == PP_F16) {
        const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        _mm256_storeu_si256((__m256i *)dst, _mm512_cvtps_ph(_mm512_loadu_ps(src), rn));
        _mm256_storeu_si256((__m256i *)(dst + 16), _mm512_cvtps_ph(_mm512_loadu_ps(src + 16), rn));
        return;
    }
#endif
    for (int k = 0; k < 32; k++) dst[k] = dt == PP_BF16 ? pp_f2bf(src[k]) : pp_f2h(src[k]);
}

/* tmatmul on the host: c[0:m, 0:n] = (init) or += op(a)[0:m, 0:k] . op(b)[0:k, 0:n],
   accumulated in fp32. Each operand has its own row stride (ldc, lda, ldb) and is read in
   place from L1 tiles or GM; a transposed operand (at, bt) is stored as its transpose:
   op(a)[i][q] = a[q * lda + i], op(b)[q][j] = b[j * ldb + q]. Rows of c from m and columns
   from n on are left as they are; with init and k = 0 the m x n corner becomes zero.
   Every element of c is accumulated in k order, one fused multiply-add per k, starting from
   c (or from 0 with init): c[i][j] = fma(a[i][k-1], b[k-1][j], ... fma(a[i][0], b[0][j],
   c0)). No blocking below changes that order, so the result depends neither on the tile
   sizes nor on the thread (tests/unit/codegen/test_matmul_kernel.py checks it bit for bit).
   The blocking (bench/matmul.py measures it):
   - k is walked in chunks of PP_KC. Per chunk, op(b)[k0:k0+kc, 0:n] is packed into the
     workspace W as panels of PP_NR columns (kc x PP_NR floats each, contiguous, zero past
     n), widened from fp16/bf16 on the way; a transposed b is transposed 8 x 8 at a time.
     A packed panel stays in L1 while every row block of a reads it.
   - fp32 a is read in place by broadcasts, transposed or not (packing it cost more than it
     won for the sizes of a task's call); fp16/bf16 a is widened per chunk into W. Rows are
     walked in blocks of up to PP_MC, each over every panel, so that the block of a stays in
     L2 while the panels pass.
   - The micro-kernel keeps a PP_MR x PP_NR block of c in registers (PP_NV vectors of PP_VW
     floats per row), GNU C vector types rather than intrinsics; the loops carry unroll
     pragmas, without which gcc keeps the block in memory. The shape is chosen when the code
     is compiled on the running machine (-march=native): AVX-512 8 x 32 (16 of 32 zmm
     accumulate), AVX/AVX2 6 x 16 (12 of 16 ymm), SSE 6 x 8.
   - The last rows (fewer than PP_MR) take the same kernel with a run-time row count, a
     read in place (padding them to a whole block cost 2-3% at the examples' 128-row tiles
     on AVX2, where 128 = 21 x 6 + 2); the last columns (fewer than PP_NR) run on a copy of
     their c block (the panel is zero past n).
   Workspace (floats): PP_NR_MAX-rounded n times min(k, PP_KC) for the panels, plus m times
   min(k, PP_KC) when a is fp16/bf16 (codegen/c_plan.py plans it with the same constants). */
#if defined(__AVX512F__)
#define PP_VW 16          /* floats per vector */
#define PP_MR 8           /* rows of c per register block */
#elif defined(__AVX__)
#define PP_VW 8
#define PP_MR 6
#else
#define PP_VW 4
#define PP_MR 6
#endif
#define PP_NV 2                   /* vectors per row of a register block */
#define PP_NR (PP_VW * PP_NV)     /* columns of c per register block (a packed panel) */
#define PP_NR_MAX 32              /* the largest PP_NR, as c_plan.py sizes the workspace */
#define PP_KC 256                 /* k steps per packed chunk (c_plan.py: the same) */
#define PP_MC 144                 /* rows per block of a (a multiple of every PP_MR) */
#if PP_NR > PP_NR_MAX || PP_MC % PP_MR
#error "pp_matmul: the blocking exceeds the workspace c_plan.py plans"
#endif
#define PP_UNROLL _Pragma("GCC unroll 32")
#define PP_UNROLL_K _Pragma("GCC unroll 4")
typedef float pp_vf __attribute__((vector_size(PP_VW * 4), aligned(4)));

/* dst[0:n] = x[0:n] as fp32; a loop per dtype so that each vectorises */
static inline void pp_widen_row(float *restrict dst, const void *x, int dt, int64_t n) {
    if (dt == PP_BF16) {
        const uint16_t *s = (const uint16_t *)x;
        for (int64_t j = 0; j < n; j++) dst[j] = pp_bf2f(s[j]);
        return;
    }
    if (dt == PP_F16) {           /* exact, branch-free (pp_h2f); F16C where the CPU has it */
        const uint16_t *s = (const uint16_t *)x;
        int64_t j = 0;
#if defined(__AVX512F__)
        for (; j + 16 <= n; j += 16)
            _mm512_storeu_ps(dst + j, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + j))));
#elif defined(__F16C__)
        for (; j + 8 <= n; j += 8)
            _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + j))));
#endif
        for (; j < n; j++) dst[j] = pp_h2f(s[j]);
        return;
    }
    memcpy(dst, x, (size_t)n * 4);
}

/* pb = b[0:kc, 0:n] (row stride ldb, element q * ldb + j) as panels of PP_NR columns, each
   kc x PP_NR floats, fp32, zero past n. Row by row (a row's lines are adjacent, which the
   hardware prefetchers follow; rows are often 16 KiB apart, which they do not), with the
   row PP_PF ahead prefetched by hand. */
#define PP_PF 8
static void pp_pack_b(float *restrict pb, const void *b, int dt, int64_t ldb, int64_t kc,
                      int64_t n) {
    const int64_t es = dt == PP_F32 ? 4 : 2, n0 = n / PP_NR * PP_NR;
    for (int64_t q = 0; q < kc; q++) {
        const char *row = (const char *)b + q * ldb * es;
        if (q + PP_PF < kc)
            for (int64_t o = 0; o < n * es; o += 64) __builtin_prefetch(row + PP_PF * ldb * es + o);
        float *p = pb + q * PP_NR;
        if (dt == PP_F32)
            for (int64_t j0 = 0; j0 < n0; j0 += PP_NR)
                *(pp_vf *)(p + j0 * kc) = *(const pp_vf *)((const float *)row + j0),
                *(pp_vf *)(p + j0 * kc + PP_VW) = *(const pp_vf *)((const float *)row + j0 + PP_VW);
        else
            for (int64_t j0 = 0; j0 < n0; j0 += PP_NR)
                pp_widen_row(p + j0 * kc, row + j0 * es, dt, PP_NR);
        if (n0 < n) {                 /* the last, partial panel: zero past n */
            pp_widen_row(p + n0 * kc, row + n0 * es, dt, n - n0);
            for (int64_t j = n - n0; j < PP_NR; j++) p[n0 * kc + j] = 0.0f;
        }
    }
}

/* p[u * PP_NR + t] = r[t][u] for t, u < 8: eight rows of 8 floats into 8 columns of a panel */
static inline void pp_put8x8(float *restrict p, const float *const *r) {
#if defined(__AVX__)
    __m256 x[8], y[8];
    for (int t = 0; t < 8; t++) x[t] = _mm256_loadu_ps(r[t]);
    for (int t = 0; t < 8; t += 2) {
        y[t] = _mm256_unpacklo_ps(x[t], x[t + 1]);
        y[t + 1] = _mm256_unpackhi_ps(x[t], x[t + 1]);
    }
    for (int t = 0; t < 8; t += 4) {
        x[t] = _mm256_shuffle_ps(y[t], y[t + 2], 0x44);
        x[t + 1] = _mm256_shuffle_ps(y[t], y[t + 2], 0xee);
        x[t + 2] = _mm256_shuffle_ps(y[t + 1], y[t + 3], 0x44);
        x[t + 3] = _mm256_shuffle_ps(y[t + 1], y[t + 3], 0xee);
    }
    for (int t = 0; t < 4; t++) {
        _mm256_storeu_ps(p + t * PP_NR, _mm256_permute2f128_ps(x[t], x[t + 4], 0x20));
        _mm256_storeu_ps(p + (t + 4) * PP_NR, _mm256_permute2f128_ps(x[t], x[t + 4], 0x31));
    }
#else
    for (int u = 0; u < 8; u++)
        for (int t = 0; t < 8; t++) p[u * PP_NR + t] = r[t][u];
#endif
}

/* pp_pack_b for a transposed b: op(b)[q][j] = b[j * ldb + q]. Eight columns at a time (rows
   of the stored b, contiguous in q), widened first when fp16/bf16, transposed 8 x 8 into
   the panel; columns past n are zero. */
static void pp_pack_bt(float *restrict pb, const void *b, int dt, int64_t ldb, int64_t kc,
                       int64_t n) {
    static const float zero[PP_KC];
    float wide[8 * PP_KC];
    const int64_t es = dt == PP_F32 ? 4 : 2, npad = pp_cdiv(n, PP_NR) * PP_NR;
    for (int64_t j0 = 0; j0 < npad; j0 += 8) {
        const float *r[8];
        for (int t = 0; t < 8; t++) {
            const char *src = (const char *)b + (j0 + t) * ldb * es;
            if (j0 + t >= n)
                r[t] = zero;
            else if (dt == PP_F32)
                r[t] = (const float *)src;
            else
                pp_widen_row(wide + t * PP_KC, src, dt, kc), r[t] = wide + t * PP_KC;
        }
        float *p = pb + j0 / PP_NR * PP_NR * kc + j0 % PP_NR;
        int64_t q = 0;
        for (; q + 8 <= kc; q += 8) {
            const float *rq[8];
            for (int t = 0; t < 8; t++) rq[t] = r[t] + q;
            pp_put8x8(p + q * PP_NR, rq);
        }
        for (; q < kc; q++)
            for (int t = 0; t < 8; t++) p[q * PP_NR + t] = r[t][q];
    }
}

/* c[0:rows, 0:PP_NR] (row stride ldc) = (zero ? 0 : c) + op(a) . pb over kc steps, with
   op(a)[i][q] = a[i * si + q * sq] (si, sq constants once inlined: lda and 1, or 1 and lda)
   and pb a packed panel; rows is PP_MR (a constant once inlined: the block lives in
   registers) or fewer */
static inline __attribute__((always_inline)) void pp_mm_block(
        float *c, int64_t ldc, const float *restrict a, int64_t si, int64_t sq,
        const float *restrict pb, int64_t kc, int zero, int rows) {
    pp_vf acc[PP_MR][PP_NV];
    if (zero) {
        PP_UNROLL for (int i = 0; i < rows; i++)
            PP_UNROLL for (int v = 0; v < PP_NV; v++) acc[i][v] = (pp_vf){0};
    } else {
        PP_UNROLL for (int i = 0; i < rows; i++)
            PP_UNROLL for (int v = 0; v < PP_NV; v++) acc[i][v] = *(const pp_vf *)(c + i * ldc + PP_VW * v);
    }
    PP_UNROLL_K for (int64_t q = 0; q < kc; q++) {
        const pp_vf *bq = (const pp_vf *)(pb + q * PP_NR);
        pp_vf bv[PP_NV];
        PP_UNROLL for (int v = 0; v < PP_NV; v++) bv[v] = bq[v];
        PP_UNROLL for (int i = 0; i < rows; i++) {
            const float ai = a[i * si + q * sq];
            PP_UNROLL for (int v = 0; v < PP_NV; v++) acc[i][v] += ai * bv[v];
        }
    }
    PP_UNROLL for (int i = 0; i < rows; i++)
        PP_UNROLL for (int v = 0; v < PP_NV; v++) *(pp_vf *)(c + i * ldc + PP_VW * v) = acc[i][v];
}

/* one register block of c at (rows, cols) <= (PP_MR, PP_NR): whole columns in place, the
   last columns on a copy of c's block (the panel is zero past cols; the padding's sums are
   dropped) */
static inline __attribute__((always_inline)) void pp_mm_tile(
        float *c, int64_t ldc, const float *a, int64_t si, int64_t sq, const float *pb,
        int64_t kc, int rows, int64_t cols, int zero) {
    if (cols == PP_NR) {
        pp_mm_block(c, ldc, a, si, sq, pb, kc, zero, rows);
        return;
    }
    float t[PP_MR * PP_NR];
    if (!zero)
        for (int i = 0; i < rows; i++)
            for (int64_t j = 0; j < PP_NR; j++) t[i * PP_NR + j] = j < cols ? c[i * ldc + j] : 0.0f;
    pp_mm_block(t, PP_NR, a, si, sq, pb, kc, zero, rows);
    for (int i = 0; i < rows; i++) memcpy(c + i * ldc, t + i * PP_NR, (size_t)cols * 4);
}

/* c[0:m, 0:n] (+)= op(a)[0:m, 0:kc] . pb over one k chunk: row blocks of PP_MC rows, each
   over every panel; op(a)[i][q] = a[i * si + q * sq] */
static inline __attribute__((always_inline)) void pp_mm_chunk(
        float *c, int64_t ldc, const float *a, int64_t si, int64_t sq, const float *pb,
        int64_t kc, int64_t m, int64_t n, int zero) {
    const int64_t m0 = m / PP_MR * PP_MR;
    for (int64_t i0 = 0; i0 < m; i0 += PP_MC) {
        const int64_t i1 = pp_min(m, i0 + PP_MC);
        for (int64_t j0 = 0; j0 < n; j0 += PP_NR) {
            const int64_t cols = pp_min(PP_NR, n - j0);
            const float *p = pb + j0 * kc;
            for (int64_t i = i0; i < pp_min(i1, m0); i += PP_MR)
                pp_mm_tile(c + i * ldc + j0, ldc, a + i * si, si, sq, p, kc, PP_MR, cols, zero);
            if (i1 > m0)
                pp_mm_tile(c + m0 * ldc + j0, ldc, a + m0 * si, si, sq, p, kc, (int)(m - m0),
                           cols, zero);
        }
    }
}

static void pp_matmul(float *restrict c, int64_t ldc, const void *a, int64_t lda, int adt,
                      int at, const void *b, int64_t ldb, int bdt, int bt, int64_t m,
                      int64_t n, int64_t k, int init, float *restrict W) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        if (init)
            for (int64_t i = 0; i < m; i++) memset(c + i * ldc, 0, (size_t)n * 4);
        return;
    }
    const int64_t kcap = pp_min(k, PP_KC), npad = pp_cdiv(n, PP_NR_MAX) * PP_NR_MAX;
    const int64_t aes = adt == PP_F32 ? 4 : 2, bes = bdt == PP_F32 ? 4 : 2;
    float *pb = W, *wa = W + npad * kcap;
    for (int64_t k0 = 0; k0 < k; k0 += PP_KC) {
        const int64_t kc = pp_min(PP_KC, k - k0);
        const int zero = init && k0 == 0;
        if (bt)
            pp_pack_bt(pb, (const char *)b + k0 * bes, bdt, ldb, kc, n);
        else
            pp_pack_b(pb, (const char *)b + k0 * ldb * bes, bdt, ldb, kc, n);
        /* op(a)[i][q] of this chunk at af[i * si + q * sq] */
        const float *af;
        int64_t si, sq;
        if (adt == PP_F32) {
            af = (const float *)a + (at ? k0 * lda : k0), si = at ? 1 : lda, sq = at ? lda : 1;
        } else if (at) {              /* widen rows k0.. of the stored a: kc x m, stride m */
            for (int64_t q = 0; q < kc; q++)
                pp_widen_row(wa + q * m, (const char *)a + (k0 + q) * lda * aes, adt, m);
            af = wa, si = 1, sq = m;
        } else {                      /* widen this chunk of a's rows: m x kc, stride kc */
            for (int64_t i = 0; i < m; i++)
                pp_widen_row(wa + i * kc, (const char *)a + (i * lda + k0) * aes, adt, kc);
            af = wa, si = kc, sq = 1;
        }
        if (sq == 1)
            pp_mm_chunk(c, ldc, af, si, 1, pb, kc, m, n, zero);
        else
            pp_mm_chunk(c, ldc, af, 1, sq, pb, kc, m, n, zero);
    }
}
