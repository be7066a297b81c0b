/* pypto Pro runtime, part 2: clusters on threads (codegen/pro_c.py). */
#define PP_STACK (1 << 20)

typedef struct pp_launch {
    void *const *T; const int64_t *S; const double *F;
    int64_t block_dim, next;
    int64_t err_cluster; int err;
    pthread_mutex_t lock;
} pp_launch;

static __thread pp_launch *pp_cur_launch;
static __thread pp_cl *pp_cur_cl;
static __thread pp_co *pp_cur_co;

static void pp_entry(void) {
    pp_co *co = pp_cur_co;
    pp_fn fn = (co->id == 0 && (pp_mixed || !pp_vector)) ? pp_cube : pp_vector;
    fn(pp_cur_cl, co, pp_cur_launch->T, pp_cur_launch->S, pp_cur_launch->F);
    co->done = 1;
    pp_cur_cl->progress++;
}

/* One cluster: 0 when done, an instruction's error index, or -2 for a deadlock. */
static int pp_run_cluster(pp_cl *cl, int64_t c) {
    cl->ncores = pp_mixed ? 3 : 1;
    cl->progress = 0;
    memset(cl->down, 0, sizeof cl->down);
    memset(cl->up, 0, sizeof cl->up);
    memset(cl->sub, 0, sizeof cl->sub);
    for (int k = 0; k < cl->ncores; k++) {
        pp_co *co = &cl->co[k];
        co->id = pp_mixed ? k : (pp_vector ? 1 : 0);
        co->g0 = pp_mixed ? (k == 0 ? c : 2 * c + k - 1) : c;
        co->err = co->done = 0;
        for (int s = 0; s < PP_NSPACES; s++) memset(co->buf[s], 0, (size_t)pp_space_bytes[s]);
        getcontext(&co->ctx);
        co->ctx.uc_stack.ss_sp = co->stack;
        co->ctx.uc_stack.ss_size = PP_STACK;
        co->ctx.uc_link = &cl->sched;
        pp_cur_co = co;
        makecontext(&co->ctx, pp_entry, 0);
        co->id = pp_mixed ? k : co->id;
    }
    for (;;) {
        int alive = 0;
        int64_t before = cl->progress;
        for (int k = 0; k < cl->ncores; k++) {
            pp_co *co = &cl->co[k];
            if (co->done) continue;
            pp_cur_co = co;
            swapcontext(&cl->sched, &co->ctx);
            if (co->err) return co->err;
            alive |= !co->done;
        }
        if (!alive) return 0;
        if (cl->progress == before) return -2;
    }
}

static void *pp_worker(void *arg) {
    pp_launch *L = (pp_launch *)arg;
    pp_cl *cl = (pp_cl *)calloc(1, sizeof(pp_cl));
    int ok = cl != 0;
    for (int k = 0; ok && k < 3; k++) {
        cl->co[k].stack = (char *)malloc(PP_STACK);
        ok = cl->co[k].stack != 0;
        for (int s = 0; ok && s < PP_NSPACES; s++) {
            cl->co[k].buf[s] = (char *)malloc((size_t)pp_space_bytes[s] + 64);
            ok = cl->co[k].buf[s] != 0;
        }
    }
    pp_cur_launch = L;
    pp_cur_cl = cl;
    for (;;) {
        pthread_mutex_lock(&L->lock);
        int64_t c = L->next++;
        int stop = c >= L->block_dim || (L->err && c > L->err_cluster);
        pthread_mutex_unlock(&L->lock);
        if (stop) break;
        int err = ok ? pp_run_cluster(cl, c) : -3;
        if (err) {
            pthread_mutex_lock(&L->lock);
            if (!L->err || c < L->err_cluster) { L->err = err; L->err_cluster = c; }
            pthread_mutex_unlock(&L->lock);
        }
    }
    for (int k = 0; cl && k < 3; k++) {
        free(cl->co[k].stack);
        for (int s = 0; s < PP_NSPACES; s++) free(cl->co[k].buf[s]);
    }
    free(cl);
    return 0;
}

/* Run block_dim clusters on `threads` threads; 0, an instruction's error index (1-based),
   -2 a cross-core deadlock, -3 out of memory. *cluster: the first failing cluster. */
int pypto_pro_run(int64_t block_dim, int threads, void *const *T, const int64_t *S,
                  const double *F, int64_t *cluster) {
    pp_launch L = {T, S, F, block_dim, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};
    if (threads < 1) threads = 1;
    if (threads > block_dim) threads = (int)block_dim;
    pthread_t tid[256];
    if (threads > 256) threads = 256;
    for (int i = 1; i < threads; i++) pthread_create(&tid[i], 0, pp_worker, &L);
    pp_worker(&L);
    for (int i = 1; i < threads; i++) pthread_join(tid[i], 0);
    *cluster = L.err_cluster;
    return L.err;
}
