/* pypto Pro runtime, part 1: a cluster's cores and its cross-core events (codegen/pro_c.py).
   The cores of one cluster run as ucontext coroutines on one thread; a core switches away
   only at a cross-core wait that is not satisfied yet. */
#include <ucontext.h>
#include <pthread.h>

#define PP_NSPACES 6         /* ub, l1, l0a, l0b, l0c, bias (codegen/pro_c.py SPACES) */
static inline float pp_relu_f(float x) { return x > 0.0f ? x : 0.0f; }
static inline int64_t pp_relu_i(int64_t x) { return x > 0 ? x : 0; }

typedef struct pp_co {
    char *buf[PP_NSPACES];   /* ub, l1, l0a, l0b, l0c, bias */
    int64_t g0;              /* the block index this core sees */
    int id, err, done;       /* id 0: the cube core of a mixed cluster, 1 and 2: its vectors */
    ucontext_t ctx;
    char *stack;
} pp_co;

typedef struct pp_cl {
    pp_co co[3];
    int ncores;
    int64_t progress;
    int down[3][16], up[3][16], sub[3][16];   /* events waiting to be taken, per core */
    ucontext_t sched;
} pp_cl;

typedef void (*pp_fn)(pp_cl *, pp_co *, void *const *, const int64_t *, const double *);

static inline void pp_yield(pp_cl *cl, pp_co *co) { swapcontext(&co->ctx, &cl->sched); }

/* INTRA_BLOCK: a cube set is one event for each vector core; a vector set is one for the
   cube, which waits until both vectors have set. INTER_SUBBLOCK: vector to vector. */
static inline void pp_cross_set(pp_cl *cl, pp_co *co, int64_t e, int sub) {
    if (sub) cl->sub[3 - co->id][e]++;
    else if (co->id == 0) { cl->down[1][e]++; cl->down[2][e]++; }
    else cl->up[co->id][e]++;
    cl->progress++;
}

static inline int pp_cross_ready(pp_cl *cl, pp_co *co, int64_t e, int sub) {
    if (sub) return cl->sub[co->id][e] > 0;
    if (co->id == 0) return cl->up[1][e] > 0 && cl->up[2][e] > 0;
    return cl->down[co->id][e] > 0;
}

static inline void pp_cross_take(pp_cl *cl, pp_co *co, int64_t e, int sub) {
    if (sub) cl->sub[co->id][e]--;
    else if (co->id == 0) { cl->up[1][e]--; cl->up[2][e]--; }
    else cl->down[co->id][e]--;
    cl->progress++;
}
