/* pypto Pro runtime, part 1: a cluster's cores and its cross-core events (codegen/pro_c.py).
   The cores of one cluster run as ucontext coroutines on one thread; a core switches away
   only at a cross-core wait that is not satisfied yet. */
#include <ucontext.h>
#include <pthread.h>

#define PP_NSPACES 8         /* ub, l1, l0a, l0b, l0c, bias, scale_left, scale_right
                                (codegen/pro_c.py SPACES) */
static inline float pp_relu_f(float x) { return x > 0.0f ? x : 0.0f; }
static inline int64_t pp_relu_i(int64_t x) { return x > 0 ? x : 0; }

/* What the clusters of a launch with a grid-wide sync share (sync_all, INTER_BLOCK): every
   cluster is resident; a worker thread runs its share of them as coroutines and sleeps on
   cv when none of its cores can move until another thread's do. */
typedef struct pp_grid {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t progress;               /* bumped by every grid set and arrival */
    int64_t n[2];                   /* cores per kind: 0 cube, 1 vector */
    int64_t *sets[2][16];           /* INTER_BLOCK: sets per core (by block index) */
    int64_t least[2][16];           /* the fewest sets of any core of the kind */
    int64_t arrivals[3], members[3];/* sync_all per core_type: MIX, AIV_ONLY, AIC_ONLY */
    int live, blocked, stop, deadlock;
} pp_grid;

typedef struct pp_co {
    char *buf[PP_NSPACES];   /* ub, l1, l0a, l0b, l0c, bias, scale_left, scale_right */
    int64_t g0;              /* the block index this core sees */
    int id, err, done;       /* id 0: the cube core of a mixed cluster, 1 and 2: its vectors */
    int64_t gwait[16];       /* INTER_BLOCK waits done, per event */
    int64_t rounds[3];       /* sync_all rounds reached, per core_type */
    ucontext_t ctx;
    char *stack;
} pp_co;

typedef struct pp_cl {
    pp_co co[3];
    int ncores, err, done;
    int64_t progress;
    int down[3][16], up[3][16], sub[3][16];   /* events waiting to be taken, per core */
    int uni[2][16];          /* UNICAST_BLOCK: [0] for a vector core, [1] for the cube */
    pp_grid *grid;
    ucontext_t sched;
} pp_cl;

typedef void (*pp_fn)(pp_cl *, pp_co *, void *const *, const int64_t *, const double *);

static inline void pp_yield(pp_cl *cl, pp_co *co) { swapcontext(&co->ctx, &cl->sched); }

/* Modes (system.py): 0 INTRA_BLOCK, 1 INTER_SUBBLOCK, 2 UNICAST_BLOCK. INTRA_BLOCK: a cube
   set is one event for each vector core; a vector set is one for the cube, which waits until
   both vectors have set. INTER_SUBBLOCK: vector to vector. UNICAST_BLOCK: one signal between
   the cube and one vector core. */
static inline void pp_cross_set(pp_cl *cl, pp_co *co, int64_t e, int mode) {
    if (mode == 1) cl->sub[3 - co->id][e]++;
    else if (mode == 2) cl->uni[co->id != 0][e]++;
    else if (co->id == 0) { cl->down[1][e]++; cl->down[2][e]++; }
    else cl->up[co->id][e]++;
    cl->progress++;
}

static inline int pp_cross_ready(pp_cl *cl, pp_co *co, int64_t e, int mode) {
    if (mode == 1) return cl->sub[co->id][e] > 0;
    if (mode == 2) return cl->uni[co->id == 0][e] > 0;
    if (co->id == 0) return cl->up[1][e] > 0 && cl->up[2][e] > 0;
    return cl->down[co->id][e] > 0;
}

static inline void pp_cross_take(pp_cl *cl, pp_co *co, int64_t e, int mode) {
    if (mode == 1) cl->sub[co->id][e]--;
    else if (mode == 2) cl->uni[co->id == 0][e]--;
    else if (co->id == 0) { cl->up[1][e]--; cl->up[2][e]--; }
    else cl->down[co->id][e]--;
    cl->progress++;
}

static inline void pp_grid_bump(pp_cl *cl, pp_grid *g) {
    g->progress++;
    g->blocked = 0;                 /* every sleeper has something new to look at */
    pthread_cond_broadcast(&g->cv);
    cl->progress++;
}

/* INTER_BLOCK: a core's n-th wait completes once every core of its kind has set n times. */
static inline void pp_grid_set(pp_cl *cl, pp_co *co, int64_t e) {
    pp_grid *g = cl->grid;
    int k = co->id != 0;
    pthread_mutex_lock(&g->mu);
    int64_t *s = g->sets[k][e], old = s[co->g0]++;
    if (old == g->least[k][e]) {
        int64_t m = s[0];
        for (int64_t i = 1; i < g->n[k]; i++) if (s[i] < m) m = s[i];
        g->least[k][e] = m;
    }
    pp_grid_bump(cl, g);
    pthread_mutex_unlock(&g->mu);
}

static inline void pp_grid_wait(pp_cl *cl, pp_co *co, int64_t e) {
    pp_grid *g = cl->grid;
    int k = co->id != 0;
    for (;;) {
        pthread_mutex_lock(&g->mu);
        int ok = g->least[k][e] > co->gwait[e];
        pthread_mutex_unlock(&g->mu);
        if (ok) break;
        pp_yield(cl, co);
    }
    co->gwait[e]++;
    cl->progress++;
}

/* sync_all: arrive, then wait until every member of the core_type has arrived as often. */
static inline void pp_sync_all(pp_cl *cl, pp_co *co, int kind) {
    pp_grid *g = cl->grid;
    int64_t r = ++co->rounds[kind];
    pthread_mutex_lock(&g->mu);
    g->arrivals[kind]++;
    pp_grid_bump(cl, g);
    pthread_mutex_unlock(&g->mu);
    for (;;) {
        pthread_mutex_lock(&g->mu);
        int ok = g->arrivals[kind] >= r * g->members[kind];
        pthread_mutex_unlock(&g->mu);
        if (ok) break;
        pp_yield(cl, co);
    }
    cl->progress++;
}
