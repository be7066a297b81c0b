/* The machine's limits for make bench (bench/limits.py): STREAM triad bandwidth and the fp32
   FMA rate, with a given number of threads. Built with pypto's own compiler flags. A run
   takes the wall time, or (cpu) the largest of its threads' CPU times: on a machine other
   processes load, what a thread's core did while it ran. */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define PP_MAXT 64

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct { float *a; const float *b, *c; int64_t lo, hi; float s; double cpu; } triad_job;

static void *triad_part(void *p) {
    triad_job *j = (triad_job *)p;
    double c0 = cpu_s();
    float *restrict a = j->a;
    const float *restrict b = j->b, *restrict c = j->c;
    for (int64_t i = j->lo; i < j->hi; i++) a[i] = b[i] + j->s * c[i];
    j->cpu = cpu_s() - c0;
    return NULL;
}

/* The best of `reps` triads a = b + s c over n floats, in seconds (threads split the range). */
double bench_triad(float *a, const float *b, const float *c, int64_t n, int threads, int reps,
                   int cpu) {
    if (threads < 1) threads = 1;
    if (threads > PP_MAXT) threads = PP_MAXT;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        triad_job job[PP_MAXT];
        pthread_t th[PP_MAXT];
        double t0 = now_s();
        for (int k = 0; k < threads; k++) {
            job[k] = (triad_job){a, b, c, n * k / threads, n * (k + 1) / threads, 3.0f, 0};
            if (k > 0) pthread_create(&th[k], NULL, triad_part, &job[k]);
        }
        triad_part(&job[0]);
        for (int k = 1; k < threads; k++) pthread_join(th[k], NULL);
        double t = now_s() - t0;
        if (cpu) {
            t = 0;
            for (int k = 0; k < threads; k++) t = job[k].cpu > t ? job[k].cpu : t;
        }
        if (t < best) best = t;
    }
    return best;
}

#define NACC 12
#define LANES 16

typedef struct { int64_t iters; float sink; double cpu; } fma_job;

static void *fma_part(void *p) {
    fma_job *j = (fma_job *)p;
    double c0 = cpu_s();
    float acc[NACC][LANES];
    for (int k = 0; k < NACC; k++)
        for (int l = 0; l < LANES; l++) acc[k][l] = (float)(k + l) * 1e-3f;
    const float x = 0.999999f, y = 1e-7f;
    for (int64_t it = 0; it < j->iters; it++)
        for (int k = 0; k < NACC; k++)
            for (int l = 0; l < LANES; l++) acc[k][l] = acc[k][l] * x + y;
    float s = 0;
    for (int k = 0; k < NACC; k++)
        for (int l = 0; l < LANES; l++) s += acc[k][l];
    j->sink = s;
    j->cpu = cpu_s() - c0;
    return NULL;
}

/* fp32 FLOP/s of independent multiply-add chains on `threads` threads (the best of reps). */
double bench_fma(int64_t iters, int threads, int reps, int cpu) {
    if (threads < 1) threads = 1;
    if (threads > PP_MAXT) threads = PP_MAXT;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        fma_job job[PP_MAXT];
        pthread_t th[PP_MAXT];
        double t0 = now_s();
        for (int k = 0; k < threads; k++) {
            job[k] = (fma_job){iters, 0, 0};
            if (k > 0) pthread_create(&th[k], NULL, fma_part, &job[k]);
        }
        fma_part(&job[0]);
        for (int k = 1; k < threads; k++) pthread_join(th[k], NULL);
        double t = now_s() - t0;
        if (cpu) {
            t = 0;
            for (int k = 0; k < threads; k++) t = job[k].cpu > t ? job[k].cpu : t;
        }
        if (t < best) best = t;
    }
    return 2.0 * NACC * LANES * (double)iters * threads / best;
}
