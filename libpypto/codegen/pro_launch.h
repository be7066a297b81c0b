/* pypto Pro runtime, part 2: the launch on the worker pool of libpypto/runtime/rt.c
   (compiled after this source, as for Tensor mode; codegen/pro_c.py).

   Without a grid-wide sync a cluster is one task of the pool (pypto_run): block_dim tasks
   with no dependencies, taken in index order by the workers, each worker running its
   cluster's cores as coroutines in its arena (the cluster struct, the cores' stacks and
   buffers); rt.c records each task's start, end and worker. With a grid-wide sync
   (pp_grid_wide: sync_all or an INTER_BLOCK event) every cluster must be resident at once,
   so there are as many tasks as workers taking part (never more: pypto_pool_size), task s
   holding clusters s, s + T, s + 2T, ... as coroutines in memory of its own; a worker whose
   cores all wait sleeps until another worker's cores move; when every worker sleeps with
   nothing changed, or the last ones finish while the rest sleep, it is a deadlock.
   Errors: the lowest cluster's is reported. Without a grid sync every cluster runs to its
   end, so that is deterministic; with one, the first error stops every worker, so when
   two clusters would fail, which one is reported may depend on timing (pypto-run runs the
   Pro runner first, which reports the first in its fixed order). */
#define PP_STACK (1 << 20)
#define PP_ALIGN64(n) (((n) + 63) & ~(int64_t)63)
/* a cluster's memory: the struct, then per core (PP_NCORES) a stack and the five buffers, each
   buffer 64 bytes longer than its space and 64-byte aligned (PP_CORE_BUF_BYTES, pro_c.py) */
#define PP_CL_BYTES (PP_ALIGN64((int64_t)sizeof(pp_cl)) + PP_NCORES * ((int64_t)PP_STACK + \
                                                                     PP_CORE_BUF_BYTES))

typedef struct pp_job {
    void *const *T; const int64_t *S; const double *F;
    int64_t block_dim, shares;
    int32_t *errs;            /* per cluster: 0, an error index, -2 deadlock, -3 memory */
    pp_grid grid;
} pp_job;

int pypto_run(int64_t ntasks, const int32_t *prog, void *const *tensors,
              const int64_t *tensor_off, const int64_t *scalars, const int64_t *scalar_off,
              int32_t *npred, const int64_t *succ_off, const int64_t *succ, int nthreads,
              int64_t *t_start, int64_t *t_end, int32_t *t_core);
int pypto_pool_size(int n);

static __thread pp_job *pp_cur_job;
static __thread pp_cl *pp_cur_cl;
static __thread pp_co *pp_cur_co;

static void pp_entry(void) {
    pp_co *co = pp_cur_co;
    pp_cl *cl = pp_cur_cl;
    pp_fn fn = (co->id == 0 && (pp_mixed || !pp_vector)) ? pp_cube : pp_vector;
    fn(cl, co, pp_cur_job->T, pp_cur_job->S, pp_cur_job->F);
    co->done = 1;
    cl->progress++;
}

/* A cluster in PP_CL_BYTES of memory at m (64-byte aligned), ready to run cluster c. */
static pp_cl *pp_start(char *m, int64_t c, pp_grid *grid) {
    pp_cl *cl = (pp_cl *)m;
    memset(cl, 0, sizeof *cl);
    m += PP_ALIGN64((int64_t)sizeof(pp_cl));
    cl->ncores = pp_mixed ? 3 : 1;
    cl->grid = grid;
    for (int k = 0; k < cl->ncores; k++) {
        pp_co *co = &cl->co[k];
        co->stack = m;
        m += PP_STACK;
        for (int s = 0; s < PP_NSPACES; s++) {
            co->buf[s] = m;
            memset(m, 0, (size_t)pp_space_bytes[s]);
            m += PP_ALIGN64(pp_space_bytes[s] + 64);
        }
        co->id = pp_mixed ? k : (pp_vector ? 1 : 0);
        co->g0 = pp_mixed ? (k == 0 ? c : 2 * c + k - 1) : c;
        getcontext(&co->ctx);
        co->ctx.uc_stack.ss_sp = co->stack;
        co->ctx.uc_stack.ss_size = PP_STACK;
        co->ctx.uc_link = &cl->sched;
        makecontext(&co->ctx, pp_entry, 0);
    }
    return cl;
}

/* One turn of each live core; cl->done when all finished, cl->err on an error. */
static void pp_sweep(pp_cl *cl) {
    int alive = 0;
    pp_cur_cl = cl;
    for (int k = 0; k < cl->ncores; k++) {
        pp_co *co = &cl->co[k];
        if (co->done) continue;
        pp_cur_co = co;
        swapcontext(&cl->sched, &co->ctx);
        if (co->err) { cl->err = co->err; return; }
        alive |= !co->done;
    }
    cl->done = !alive;
}

/* One cluster, alone: 0, an error index, or -2 when its cores wait for each other. */
static int pp_run_cluster(pp_cl *cl) {
    for (;;) {
        int64_t before = cl->progress;
        pp_sweep(cl);
        if (cl->err) return cl->err;
        if (cl->done) return 0;
        if (cl->progress == before) return -2;
    }
}

/* Task s of a grid launch: clusters s, s + T, ... resident together. */
static void pp_grid_share(pp_job *J, int64_t s) {
    pp_grid *g = &J->grid;
    int64_t n = (J->block_dim - s + J->shares - 1) / J->shares;
    char *mem = NULL;
    pp_cl **cls = (pp_cl **)calloc((size_t)n, sizeof(pp_cl *));
    if (!cls || posix_memalign((void **)&mem, 64, (size_t)(n * PP_CL_BYTES))) {
        J->errs[s] = -3;
        mem = NULL;
        pthread_mutex_lock(&g->mu);
        g->stop = 1;
    } else {
        for (int64_t i = 0; i < n; i++)
            cls[i] = pp_start(mem + i * PP_CL_BYTES, s + i * J->shares, g);
        for (;;) {                              /* the lock is held at every break */
            pthread_mutex_lock(&g->mu);
            int64_t seen = g->progress;
            if (g->stop) break;
            pthread_mutex_unlock(&g->mu);
            int64_t before = 0, after = 0;
            int alive = 0, failed = 0;
            for (int64_t i = 0; i < n && !failed; i++) {
                pp_cl *cl = cls[i];
                if (cl->done) continue;
                before += cl->progress;
                pp_sweep(cl);
                after += cl->progress;
                if (cl->err) { J->errs[s + i * J->shares] = cl->err; failed = 1; }
                alive |= !cl->done;
            }
            pthread_mutex_lock(&g->mu);
            if (failed) { g->stop = 1; pthread_cond_broadcast(&g->cv); }
            if (failed || !alive) break;
            /* blocked counts the sleepers that saw the current progress: a bump resets it */
            if (after == before && g->progress == seen && !g->stop) {
                g->blocked++;
                if (g->blocked == g->live) {
                    g->deadlock = g->stop = 1;
                    pthread_cond_broadcast(&g->cv);
                }
                while (g->progress == seen && !g->stop) pthread_cond_wait(&g->cv, &g->mu);
                if (g->progress == seen) g->blocked--;
            }
            pthread_mutex_unlock(&g->mu);
        }
    }
    g->live--;
    if (!g->stop && g->live > 0 && g->blocked == g->live) g->deadlock = g->stop = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    free(mem);
    free(cls);
}

/* The task program rt.c runs: T[0] is the job, S[0] the task index, B the worker's arena. */
static void pp_task(void *const *T, const int64_t *S, char *B) {
    pp_job *J = (pp_job *)T[0];
    pp_cur_job = J;
    if (pp_grid_wide) { pp_grid_share(J, S[0]); return; }
    J->errs[S[0]] = pp_run_cluster(pp_start(B, S[0], NULL));
}

const pp_prog pypto_programs[] = {pp_task};
const int pypto_num_programs = 1;
const int64_t pypto_arena_bytes = PP_CL_BYTES;

static int pp_grid_init(pp_grid *g, int64_t block_dim, int64_t shares) {
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->n[0] = (pp_mixed || !pp_vector) ? block_dim : 0;
    g->n[1] = pp_vector ? (pp_mixed ? 2 * block_dim : block_dim) : 0;
    g->members[0] = g->n[0] + g->n[1];
    g->members[1] = g->n[1];
    g->members[2] = g->n[0];
    g->live = (int)shares;
    for (int k = 0; k < 2; k++)
        for (int e = 0; e < 16; e++) {
            g->sets[k][e] = (int64_t *)calloc((size_t)(g->n[k] > 0 ? g->n[k] : 1), sizeof(int64_t));
            if (!g->sets[k][e]) return 0;
        }
    return 1;
}

/* Run block_dim clusters on `threads` workers. Returns 0, an instruction's error index
   (1-based, the first failing cluster's in *cluster), -2 a deadlock (*cluster -1 when a
   grid-wide sync deadlocked), -3 out of memory. Per task: t_start, t_end (ns) and t_core
   (the worker), *ntasks of them (block_dim, or the workers of a grid launch). */
int pypto_pro_run(int64_t block_dim, int threads, void *const *T, const int64_t *S,
                  const double *F, int64_t *cluster, int64_t *t_start, int64_t *t_end,
                  int32_t *t_core, int64_t *ntasks) {
    pp_job J;
    memset(&J, 0, sizeof J);
    J.T = T; J.S = S; J.F = F; J.block_dim = block_dim;
    if (threads < 1) threads = 1;
    if (threads > block_dim) threads = (int)block_dim;
    int64_t n = block_dim;
    if (pp_grid_wide) {
        int have = pypto_pool_size(threads);
        n = have < threads ? have : threads;
        if (n < 1) return -3;
    }
    J.shares = n;
    *ntasks = n;
    J.errs = (int32_t *)calloc((size_t)block_dim, sizeof(int32_t));
    int32_t *tab32 = (int32_t *)calloc((size_t)(2 * n), sizeof(int32_t));
    int64_t *tab = (int64_t *)calloc((size_t)(3 * n + 2), sizeof(int64_t));
    int ok = J.errs && tab32 && tab && (!pp_grid_wide || pp_grid_init(&J.grid, block_dim, n));
    int rc = ok ? 0 : -3;
    if (ok) {
        void *job[1] = {&J};
        int64_t *idx = tab, *zero = tab + n, *succ_off = tab + 2 * n;
        for (int64_t t = 0; t < n; t++) idx[t] = t;
        if (pypto_run(n, tab32, job, zero, idx, idx, tab32 + n, succ_off, succ_off,
                      pp_grid_wide ? (int)n : threads, t_start, t_end, t_core) != 0) rc = -3;
    }
    for (int64_t c = 0; rc == 0 && c < block_dim; c++)
        if (J.errs[c] > 0 || J.errs[c] == -3) { rc = J.errs[c]; *cluster = c; }
    for (int64_t c = 0; rc == 0 && c < block_dim; c++)
        if (J.errs[c]) { rc = J.errs[c]; *cluster = c; }
    if (rc == 0 && J.grid.deadlock) { rc = -2; *cluster = -1; }
    for (int k = 0; k < 2; k++) for (int e = 0; e < 16; e++) free(J.grid.sets[k][e]);
    if (pp_grid_wide && J.errs && tab32 && tab) {
        pthread_mutex_destroy(&J.grid.mu);
        pthread_cond_destroy(&J.grid.cv);
    }
    free(J.errs); free(tab32); free(tab);
    return rc;
}
