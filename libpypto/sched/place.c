/* The list scheduler's loops in C: the same steps, in the same order, as sched/__init__.py
 * (bottom_levels, place with critical-path priority, the sweep of bounds), so the results
 * are bit-identical (built with -ffp-contract=off; sums run in instance order). The
 * Python functions stay the reference and the path without a C compiler;
 * tests/unit/sched/test_sched_native.py compares the two. sched/native.py calls these.
 *
 * Instances are 0 .. n-1, predecessors as CSR (pred_ptr, pred_idx: lower ids), program
 * kinds and core kinds coded 0 vector, 1 cube, 2 mixed (CORE_KINDS' order).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* bl[i] = dur[i] + the longest bl of its successors, one backward sweep */
void pp_bottom_levels(int64_t n, const double *dur, const int64_t *pred_ptr,
                      const int64_t *pred_idx, double *bl) {
    memcpy(bl, dur, (size_t)n * sizeof(double));
    for (int64_t i = n - 1; i >= 0; i--) {
        double b = bl[i];
        for (int64_t k = pred_ptr[i]; k < pred_ptr[i + 1]; k++) {
            int64_t p = pred_idx[k];
            if (dur[p] + b > bl[p]) bl[p] = dur[p] + b;
        }
    }
}

/* finish[i]: the earliest end on unlimited cores; via[i]: the predecessor it waited for
 * (the latest to finish, ties to the higher id), -1 if none; work[kind]: the sum of dur */
void pp_sweep(int64_t n, const double *dur, const int64_t *pred_ptr, const int64_t *pred_idx,
              const int32_t *kind, double *finish, int64_t *via, double *work) {
    for (int64_t i = 0; i < n; i++) {
        finish[i] = dur[i];
        via[i] = -1;
        if (pred_ptr[i + 1] > pred_ptr[i]) {
            double best = 0;
            int64_t bp = -1;
            for (int64_t k = pred_ptr[i]; k < pred_ptr[i + 1]; k++) {
                int64_t p = pred_idx[k];
                if (bp < 0 || finish[p] > best || (finish[p] == best && p > bp)) {
                    best = finish[p];
                    bp = p;
                }
            }
            via[i] = bp;
            finish[i] += best;
        }
        work[kind[i]] += dur[i];
    }
}

typedef struct { int64_t *v; int64_t n; } Heap;

static void hpush(Heap *h, int64_t x) {
    int64_t k = h->n++;
    while (k > 0 && h->v[(k - 1) / 2] > x) {
        h->v[k] = h->v[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h->v[k] = x;
}

static int64_t hpop(Heap *h) {
    int64_t top = h->v[0], last = h->v[--h->n], k = 0;
    for (;;) {
        int64_t c = 2 * k + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->v[c + 1] < h->v[c]) c++;
        if (h->v[c] >= last) break;
        h->v[k] = h->v[c];
        k = c;
    }
    if (h->n) h->v[k] = last;
    return top;
}

/* running instances: a min-heap of (end, core) */
typedef struct { double e; int64_t c; } Busy;

static int earlier(Busy a, Busy b) { return a.e < b.e || (a.e == b.e && a.c < b.c); }

static void bpush(Busy *h, int64_t *n, Busy x) {
    int64_t k = (*n)++;
    while (k > 0 && earlier(x, h[(k - 1) / 2])) {
        h[k] = h[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h[k] = x;
}

static Busy bpop(Busy *h, int64_t *n) {
    Busy top = h[0], last = h[--(*n)];
    int64_t k = 0;
    for (;;) {
        int64_t c = 2 * k + 1;
        if (c >= *n) break;
        if (c + 1 < *n && earlier(h[c + 1], h[c])) c++;
        if (!earlier(h[c], last)) break;
        h[k] = h[c];
        k = c;
    }
    if (*n) h[k] = last;
    return top;
}

static const int ALLOWED[3][2] = {{0, 2}, {1, 2}, {2, -1}};

/* List scheduling by rank (the instances sorted by priority: rank[i], inst[rank]).
 * Returns 0, -1 when memory ran out, or the number of instances left when none can start. */
int64_t pp_place(int64_t n, const int64_t *rank, const int64_t *inst, const int32_t *kind,
                 const int64_t *succ_off, const int64_t *succ, const int64_t *npred,
                 int64_t ncores, const int32_t *core_kind, const double *dur,
                 const double *gm_bytes, const double *gm_alone, double hbm, int32_t use_gm,
                 double *start, double *end, int32_t *core) {
    int64_t *waiting = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    int64_t *rq = malloc((size_t)(3 * (n ? n : 1)) * sizeof(int64_t));
    int64_t *fq = malloc((size_t)(3 * (ncores ? ncores : 1)) * sizeof(int64_t));
    Busy *running = malloc((size_t)(ncores ? ncores : 1) * sizeof(Busy));
    int64_t *inst_on = malloc((size_t)(ncores ? ncores : 1) * sizeof(int64_t));
    int32_t *pool_of = malloc((size_t)(ncores ? ncores : 1) * sizeof(int32_t));
    if (!waiting || !rq || !fq || !running || !inst_on || !pool_of) {
        free(waiting); free(rq); free(fq); free(running); free(inst_on); free(pool_of);
        return -1;
    }
    Heap ready[3], free_[3];
    int has_kind[3] = {0, 0, 0}, has_core[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        ready[k].v = rq + k * (n ? n : 1);
        ready[k].n = 0;
        free_[k].v = fq + k * (ncores ? ncores : 1);
        free_[k].n = 0;
    }
    for (int64_t c = 0; c < ncores; c++) {
        hpush(&free_[core_kind[c]], c);
        has_core[core_kind[c]] = 1;
    }
    for (int64_t i = 0; i < n; i++) {
        waiting[i] = npred[i];
        has_kind[kind[i]] = 1;
        if (!waiting[i]) hpush(&ready[kind[i]], rank[i]);
    }
    int64_t nrun = 0, done = 0, left = 0;
    double t = 0.0, hbm_free = 0.0;
    while (done < n) {
        for (;;) {          /* start what can start at t, highest priority first */
            int best = -1;
            for (int q = 0; q < 3; q++) {
                if (!has_kind[q] || !ready[q].n) continue;
                int any = 0;
                for (int a = 0; a < 2; a++) {
                    int k = ALLOWED[q][a];
                    if (k >= 0 && has_core[k] && free_[k].n) any = 1;
                }
                if (any && (best < 0 || ready[q].v[0] < ready[best].v[0])) best = q;
            }
            if (best < 0) break;
            int64_t i = inst[hpop(&ready[best])];
            int pk = -1;
            for (int a = 0; a < 2; a++) {
                int k = ALLOWED[best][a];
                if (k >= 0 && has_core[k] && free_[k].n &&
                    (pk < 0 || free_[k].v[0] < free_[pk].v[0]))
                    pk = k;
            }
            int64_t c = hpop(&free_[pk]);
            double e = t + dur[i];
            if (use_gm && hbm != 0.0) {
                double nb = gm_bytes[i], alone = gm_alone[i];
                if (nb > 0) {
                    hbm_free = (hbm_free > t ? hbm_free : t) + nb / hbm;
                    if (hbm_free > t + alone) e += hbm_free - (t + alone);
                }
            }
            start[i] = t;
            end[i] = e;
            core[i] = (int32_t)c;
            inst_on[c] = i;
            pool_of[c] = pk;
            Busy b = {e, c};
            bpush(running, &nrun, b);
        }
        if (!nrun) {
            left = n - done;
            break;
        }
        t = running[0].e;
        while (nrun && running[0].e == t) {
            Busy b = bpop(running, &nrun);
            int64_t i = inst_on[b.c];
            hpush(&free_[pool_of[b.c]], b.c);
            done++;
            for (int64_t k = succ_off[i]; k < succ_off[i + 1]; k++) {
                int64_t j = succ[k];
                if (!--waiting[j]) hpush(&ready[kind[j]], rank[j]);
            }
        }
    }
    free(waiting); free(rq); free(fq); free(running); free(inst_on); free(pool_of);
    return left;
}
