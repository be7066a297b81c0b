/* pypto host runtime: run task instances on a pool of threads in dependency order (MPMD).

   Tasks arrive in schedule order (their index is their priority). A task becomes ready when
   its last predecessor finishes; idle workers take the ready task with the lowest index.
   Every worker owns a scratch arena (the core's on-chip buffers) and records when each task
   started and ended, and on which worker. Compiled together with the emitted programs. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

typedef struct {
    int64_t ntasks;
    const int32_t *prog;          /* program index per task */
    void *const *tensors;         /* flat tensor pointer table */
    const int64_t *tensor_off;    /* per task: index of its first pointer in tensors */
    const int64_t *scalars;       /* flat scalar table */
    const int64_t *scalar_off;    /* per task: index of its first scalar */
    int32_t *npred;               /* per task: unfinished predecessors (consumed) */
    const int64_t *succ_off;      /* CSR successors: succ[succ_off[t] .. succ_off[t + 1]) */
    const int64_t *succ;
    int64_t *t_start, *t_end;     /* ns since the run began */
    int32_t *t_core;
    /* shared state */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t *heap;
    int64_t heap_n;
    int64_t remaining;
    struct timespec t0;
    int64_t arena_bytes;
    int failed;
} pp_run_state;

typedef struct {
    pp_run_state *st;
    int core;
} pp_worker_arg;

static int64_t pp_now_ns(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)(t.tv_sec - t0->tv_sec) * 1000000000LL + (t.tv_nsec - t0->tv_nsec);
}

static void pp_heap_push(pp_run_state *st, int64_t v) {
    int64_t i = st->heap_n++;
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (st->heap[p] <= v) break;
        st->heap[i] = st->heap[p];
        i = p;
    }
    st->heap[i] = v;
}

static int64_t pp_heap_pop(pp_run_state *st) {
    int64_t top = st->heap[0], last = st->heap[--st->heap_n], i = 0;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= st->heap_n) break;
        if (c + 1 < st->heap_n && st->heap[c + 1] < st->heap[c]) c++;
        if (last <= st->heap[c]) break;
        st->heap[i] = st->heap[c];
        i = c;
    }
    if (st->heap_n > 0) st->heap[i] = last;
    return top;
}

static void *pp_worker(void *p) {
    pp_worker_arg *wa = (pp_worker_arg *)p;
    pp_run_state *st = wa->st;
    char *arena = NULL;
    if (posix_memalign((void **)&arena, 64, st->arena_bytes > 0 ? (size_t)st->arena_bytes : 64)) {
        pthread_mutex_lock(&st->mu);
        st->failed = 1;
        pthread_cond_broadcast(&st->cv);
        pthread_mutex_unlock(&st->mu);
        return NULL;
    }
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (st->heap_n == 0 && st->remaining > 0 && !st->failed)
            pthread_cond_wait(&st->cv, &st->mu);
        if (st->remaining == 0 || st->failed) break;
        int64_t t = pp_heap_pop(st);
        pthread_mutex_unlock(&st->mu);
        st->t_start[t] = pp_now_ns(&st->t0);
        pypto_programs[st->prog[t]](st->tensors + st->tensor_off[t], st->scalars + st->scalar_off[t],
                                    arena);
        st->t_end[t] = pp_now_ns(&st->t0);
        st->t_core[t] = wa->core;
        pthread_mutex_lock(&st->mu);
        int woke = 0;
        for (int64_t k = st->succ_off[t]; k < st->succ_off[t + 1]; k++) {
            int64_t s = st->succ[k];
            if (--st->npred[s] == 0) {
                pp_heap_push(st, s);
                woke++;
            }
        }
        st->remaining--;
        if (st->remaining == 0)
            pthread_cond_broadcast(&st->cv);
        else if (woke > 1)
            pthread_cond_broadcast(&st->cv);
        else if (woke == 1)
            pthread_cond_signal(&st->cv);
    }
    pthread_mutex_unlock(&st->mu);
    free(arena);
    return NULL;
}

/* Returns 0 on success, -1 if a thread or arena could not be created. */
int pypto_run(int64_t ntasks, const int32_t *prog, void *const *tensors, const int64_t *tensor_off,
              const int64_t *scalars, const int64_t *scalar_off, int32_t *npred,
              const int64_t *succ_off, const int64_t *succ, int nthreads,
              int64_t *t_start, int64_t *t_end, int32_t *t_core) {
    pp_run_state st;
    memset(&st, 0, sizeof st);
    st.ntasks = ntasks; st.prog = prog; st.tensors = tensors; st.tensor_off = tensor_off;
    st.scalars = scalars; st.scalar_off = scalar_off; st.npred = npred;
    st.succ_off = succ_off; st.succ = succ;
    st.t_start = t_start; st.t_end = t_end; st.t_core = t_core;
    st.arena_bytes = pypto_arena_bytes;
    st.remaining = ntasks;
    st.heap = (int64_t *)malloc(sizeof(int64_t) * (size_t)(ntasks > 0 ? ntasks : 1));
    if (!st.heap) return -1;
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.cv, NULL);
    for (int64_t t = 0; t < ntasks; t++)
        if (npred[t] == 0) pp_heap_push(&st, t);
    clock_gettime(CLOCK_MONOTONIC, &st.t0);
    if (nthreads < 1) nthreads = 1;
    pthread_t *th = (pthread_t *)malloc(sizeof(pthread_t) * (size_t)nthreads);
    pp_worker_arg *args = (pp_worker_arg *)malloc(sizeof(pp_worker_arg) * (size_t)nthreads);
    int started = 1, rc = 0;
    for (int i = 0; i < nthreads; i++) { args[i].st = &st; args[i].core = i; }
    for (int i = 1; i < nthreads; i++) {
        if (pthread_create(&th[i], NULL, pp_worker, &args[i]) != 0) break;
        started++;
    }
    pp_worker(&args[0]);
    for (int i = 1; i < started; i++) pthread_join(th[i], NULL);
    if (st.failed || st.remaining != 0) rc = -1;
    pthread_mutex_destroy(&st.mu);
    pthread_cond_destroy(&st.cv);
    free(st.heap); free(th); free(args);
    return rc;
}
