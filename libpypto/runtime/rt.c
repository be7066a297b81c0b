/* pypto host runtime: run task instances on a pool of threads in dependency order (MPMD).

   Tasks arrive in schedule order (their index is their priority). A task becomes ready when
   its last predecessor finishes. The ready tasks are an interval of consecutive indices
   [lo, hi) (the tasks ready from the start, and each that becomes ready at hi) and a heap of
   the rest: the interval costs nothing per task, the heap a logarithm's worth of cache lines.
   Idle workers take the ready task with the lowest index, and with it, up to the task's
   batch count (a table the JIT plans: instances of little work each), the ready tasks that
   directly follow it in index order with the same program,
   while enough ready work stays for the other workers: one lock and one wake-up per batch
   instead of per task. Each task still records its own start and end (in a batch, a task's
   start is the end of the one before it: one clock read per task).
   Every worker owns a scratch arena (the core's on-chip buffers) and records when each task
   started and ended, and on which worker. Compiled together with the emitted programs. */
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>            /* _mm_sfence: the batch's streamed stores, then its end */
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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
    const int32_t *batch;         /* per task: most tasks taken with it (NULL: 1) */
    int nthreads;                 /* workers of this run */
    /* shared state */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t *heap;                /* ready tasks outside [lo, hi) */
    int64_t heap_n;
    int64_t lo, hi;               /* ready tasks lo, lo + 1, ..., hi - 1 */
    int64_t remaining;
    int64_t running;              /* tasks taken and not finished */
    struct timespec t0;
    int64_t arena_bytes;
    int failed;
} pp_run_state;


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

static int64_t pp_ready(const pp_run_state *st) { return st->heap_n + (st->hi - st->lo); }

/* The lowest ready index, -1 when none is ready. */
static int64_t pp_lowest(const pp_run_state *st) {
    if (st->lo < st->hi && (st->heap_n == 0 || st->lo < st->heap[0])) return st->lo;
    return st->heap_n > 0 ? st->heap[0] : -1;
}

/* The lowest ready task (some task is ready), taken. */
static int64_t pp_take(pp_run_state *st) {
    int64_t t = pp_lowest(st);
    if (t == st->lo && st->lo < st->hi) st->lo++;     /* a task is in one place only */
    else pp_heap_pop(st);
    return t;
}

/* Task s became ready. */
static void pp_readied(pp_run_state *st, int64_t s) {
    if (s == st->hi && st->lo < st->hi) st->hi++;
    else if (st->lo == st->hi && (st->heap_n == 0 || s < st->heap[0]))
        st->lo = s, st->hi = s + 1;
    else
        pp_heap_push(st, s);
}

/* How many tasks to run from t on (t already taken, the lock held): t and the ready tasks
   t + 1, t + 2, ... of t's program while they are the lowest ready, up to t's batch count
   and to a share that leaves the other workers as much ready work as this one takes. */
static int64_t pp_take_batch(pp_run_state *st, int64_t t) {
    if (!st->batch || st->batch[t] <= 1) return 1;
    int64_t cap = st->batch[t], fair = pp_ready(st) / (2 * (int64_t)st->nthreads) + 1;
    if (cap > fair) cap = fair;
    int64_t n = 1;
    while (n < cap && pp_lowest(st) == t + n && st->prog[t + n] == st->prog[t]) {
        pp_take(st);
        n++;
    }
    return n;
}

/* One worker's share of a run: take ready tasks until none remain. A worker that finds no
   ready task while none is running and some remain has found a cycle in the tables: the run
   fails instead of waiting forever. */
static void pp_work(pp_run_state *st, int core, char *arena) {
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (pp_ready(st) == 0 && st->remaining > 0 && !st->failed) {
            if (st->running == 0) {
                st->failed = 1;
                pthread_cond_broadcast(&st->cv);
                break;
            }
            pthread_cond_wait(&st->cv, &st->mu);
        }
        if (st->remaining == 0 || st->failed) break;
        int64_t t = pp_take(st), n = pp_take_batch(st, t);
        st->running += n;
        pthread_mutex_unlock(&st->mu);
        int64_t at = pp_now_ns(&st->t0);
        for (int64_t u = t; u < t + n; u++) {
            st->t_start[u] = at;
            pypto_programs[st->prog[u]](st->tensors + st->tensor_off[u],
                                        st->scalars + st->scalar_off[u], arena);
            st->t_end[u] = at = pp_now_ns(&st->t0);
            st->t_core[u] = core;
        }
#if defined(__SSE2__)
        /* the tasks' non-temporal stores (pp_store, pp_put64) are weakly ordered: globally
           visible before the lock that tells their successors, on any worker, and the
           caller that they are done; one fence per batch, not one per task (a fence waits
           for the core's write-combining buffers: 2.3x the time of a run of 1-row tasks) */
        _mm_sfence();
#endif
        pthread_mutex_lock(&st->mu);
        st->running -= n;
        int woke = 0;
        for (int64_t k = st->succ_off[t]; k < st->succ_off[t + n]; k++) {
            int64_t s = st->succ[k];
            if (--st->npred[s] == 0) {
                pp_readied(st, s);
                woke++;
            }
        }
        st->remaining -= n;
        if (st->remaining == 0 || woke > 1)
            pthread_cond_broadcast(&st->cv);
        else if (woke == 1)
            pthread_cond_signal(&st->cv);
    }
    pthread_mutex_unlock(&st->mu);
}

/* The worker pool of this library: threads and their arenas (the cores' buffers) live from
   the first run to the end of the process, so a run neither starts threads nor pays the page
   faults of fresh arenas. Worker 0 is the calling thread. Runs are serialised.

   A run with one worker (one thread asked for, or one task) never touches the pool: the caller
   runs it alone. Otherwise the caller wakes only the workers that take part, each on its own
   condition variable, and starts working at once. A woken worker joins the run only while it
   is open; when the caller finds no task left it closes the run and waits only for the workers
   that joined, so a worker that wakes late (the OS is slow to schedule it) costs the caller
   nothing: it finds the run closed and sleeps again. */
#define PP_MAX_THREADS 256
static struct {
    pthread_mutex_t run_mu;         /* one run at a time */
    pthread_mutex_t mu;
    pthread_cond_t wake_cv[PP_MAX_THREADS], done_cv;
    int nthreads;                   /* workers started, the caller included */
    char *arena[PP_MAX_THREADS];
    pthread_t th[PP_MAX_THREADS];
    uint64_t generation;            /* bumped for every run */
    uint64_t seen[PP_MAX_THREADS];  /* the last generation each pool thread looked at */
    int active;                     /* pool threads inside the current run */
    int run_threads;                /* workers taking part in the current run */
    pp_run_state *st;               /* the open run, NULL once the caller closed it */
} pp_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

static void *pp_pool_thread(void *p) {
    int core = (int)(intptr_t)p;
    pthread_mutex_lock(&pp_pool.mu);
    for (;;) {
        while (pp_pool.generation == pp_pool.seen[core] || core >= pp_pool.run_threads
               || pp_pool.st == NULL) {
            pp_pool.seen[core] = pp_pool.generation;
            pthread_cond_wait(&pp_pool.wake_cv[core], &pp_pool.mu);
        }
        pp_pool.seen[core] = pp_pool.generation;
        pp_run_state *st = pp_pool.st;
        pp_pool.active++;
        pthread_mutex_unlock(&pp_pool.mu);
        pp_work(st, core, pp_pool.arena[core]);
        pthread_mutex_lock(&pp_pool.mu);
        if (--pp_pool.active == 0) pthread_cond_signal(&pp_pool.done_cv);
    }
    return NULL;
}

/* fork(): the child has only the thread that forked. Preparing takes the pool's locks, so no
   run is half-way and no lock is held by a thread the child will not have; the child then
   forgets the pool threads (their arenas are kept for the next ones) and grows a new pool
   on its first run. Without this, a run in the child of a process that had run this library
   would wait forever for workers that do not exist. */
static void pp_fork_prepare(void) {
    pthread_mutex_lock(&pp_pool.run_mu);
    pthread_mutex_lock(&pp_pool.mu);
}

static void pp_fork_parent(void) {
    pthread_mutex_unlock(&pp_pool.mu);
    pthread_mutex_unlock(&pp_pool.run_mu);
}

static void pp_fork_child(void) {
    for (int c = 0; c < PP_MAX_THREADS; c++)       /* their waiters are gone */
        pthread_cond_init(&pp_pool.wake_cv[c], NULL);
    pthread_cond_init(&pp_pool.done_cv, NULL);
    if (pp_pool.nthreads > 1) pp_pool.nthreads = 1;
    pp_pool.active = 0;
    pp_pool.st = NULL;
    pthread_mutex_unlock(&pp_pool.mu);
    pthread_mutex_unlock(&pp_pool.run_mu);
}

static char *pp_new_arena(void) {
    char *a = NULL;
    return posix_memalign((void **)&a, 64, pypto_arena_bytes > 0 ? (size_t)pypto_arena_bytes : 64)
        ? NULL : a;
}

/* Grow the pool to n workers; returns how many there are (fewer if the system refuses). */
static int pp_pool_grow(int n) {
    static int fork_safe = 0, cv_ready = 0;
    if (n > PP_MAX_THREADS) n = PP_MAX_THREADS;
    if (!fork_safe) fork_safe = pthread_atfork(pp_fork_prepare, pp_fork_parent, pp_fork_child) == 0;
    if (!cv_ready) {
        for (int c = 0; c < PP_MAX_THREADS; c++) pthread_cond_init(&pp_pool.wake_cv[c], NULL);
        pthread_cond_init(&pp_pool.done_cv, NULL);
        cv_ready = 1;
    }
    if (pp_pool.nthreads == 0) {
        if (!pp_pool.arena[0]) pp_pool.arena[0] = pp_new_arena();
        if (!pp_pool.arena[0]) return 0;
        pp_pool.nthreads = 1;
    }
    while (pp_pool.nthreads < n) {
        int core = pp_pool.nthreads;
        if (!pp_pool.arena[core]) pp_pool.arena[core] = pp_new_arena();   /* kept after a fork */
        if (!pp_pool.arena[core]) break;
        pthread_mutex_lock(&pp_pool.mu);
        pp_pool.seen[core] = pp_pool.generation;
        int rc = pthread_create(&pp_pool.th[core], NULL, pp_pool_thread, (void *)(intptr_t)core);
        if (rc == 0) pp_pool.nthreads++;
        pthread_mutex_unlock(&pp_pool.mu);
        if (rc != 0) { free(pp_pool.arena[core]); pp_pool.arena[core] = NULL; break; }
    }
    return pp_pool.nthreads;
}

/* Grow the pool to n workers (the caller included); how many there are. A launch whose
   tasks must all run at once (a Pro kernel with a grid-wide sync, codegen/pro_launch.h)
   asks first and makes no more tasks than workers. */
int pypto_pool_size(int n) {
    pthread_mutex_lock(&pp_pool.run_mu);
    int have = pp_pool_grow(n);
    pthread_mutex_unlock(&pp_pool.run_mu);
    return have;
}

/* Run st on `use` workers, the caller being worker 0 (run_mu held). */
static void pp_run_on_pool(pp_run_state *st, int use) {
    if (use <= 1) {
        pp_work(st, 0, pp_pool.arena[0]);
        return;
    }
    pthread_mutex_lock(&pp_pool.mu);
    pp_pool.st = st;
    pp_pool.run_threads = use;
    pp_pool.generation++;
    for (int c = 1; c < use; c++) pthread_cond_signal(&pp_pool.wake_cv[c]);
    pthread_mutex_unlock(&pp_pool.mu);
    pp_work(st, 0, pp_pool.arena[0]);
    pthread_mutex_lock(&pp_pool.mu);
    pp_pool.st = NULL;                          /* closed: late wakers go back to sleep */
    while (pp_pool.active > 0)
        pthread_cond_wait(&pp_pool.done_cv, &pp_pool.mu);
    pthread_mutex_unlock(&pp_pool.mu);
}

/* A run, the caller holding run_mu; the timeline's clock starts when the workers are ready.
   Returns 0 on success, -1 if no arena could be allocated or the run failed. */
static int pp_run(int64_t ntasks, const int32_t *prog, void *const *tensors,
                  const int64_t *tensor_off, const int64_t *scalars, const int64_t *scalar_off,
                  int32_t *npred, const int64_t *succ_off, const int64_t *succ, int nthreads,
                  int64_t *t_start, int64_t *t_end, int32_t *t_core, const int32_t *batch) {
    pp_run_state st;
    memset(&st, 0, sizeof st);
    st.ntasks = ntasks; st.prog = prog; st.tensors = tensors; st.tensor_off = tensor_off;
    st.scalars = scalars; st.scalar_off = scalar_off; st.npred = npred;
    st.succ_off = succ_off; st.succ = succ;
    st.t_start = t_start; st.t_end = t_end; st.t_core = t_core; st.batch = batch;
    st.arena_bytes = pypto_arena_bytes;
    st.remaining = ntasks;
    st.heap = (int64_t *)malloc(sizeof(int64_t) * (size_t)(ntasks > 0 ? ntasks : 1));
    if (!st.heap) return -1;
    pthread_mutex_init(&st.mu, NULL);
    pthread_cond_init(&st.cv, NULL);
    for (int64_t t = 0; t < ntasks; t++)
        if (npred[t] == 0) pp_readied(&st, t);
    if (nthreads < 1) nthreads = 1;
    if (ntasks < nthreads) nthreads = ntasks > 1 ? (int)ntasks : 1;   /* no idle workers */
    int have = pp_pool_grow(nthreads);
    int rc = 0;
    if (have == 0) {
        rc = -1;
    } else {
        clock_gettime(CLOCK_MONOTONIC, &st.t0);
        st.nthreads = have < nthreads ? have : nthreads;
        pp_run_on_pool(&st, st.nthreads);
        if (st.failed || st.remaining != 0) rc = -1;
    }
    pthread_mutex_destroy(&st.mu);
    pthread_cond_destroy(&st.cv);
    free(st.heap);
    return rc;
}

/* Returns 0 on success, -1 if no arena could be allocated or the run failed. */
int pypto_run(int64_t ntasks, const int32_t *prog, void *const *tensors, const int64_t *tensor_off,
              const int64_t *scalars, const int64_t *scalar_off, int32_t *npred,
              const int64_t *succ_off, const int64_t *succ, int nthreads,
              int64_t *t_start, int64_t *t_end, int32_t *t_core) {
    pthread_mutex_lock(&pp_pool.run_mu);
    int rc = pp_run(ntasks, prog, tensors, tensor_off, scalars, scalar_off, npred, succ_off,
                    succ, nthreads, t_start, t_end, t_core, NULL);
    pthread_mutex_unlock(&pp_pool.run_mu);
    return rc;
}

/* One launch of a prepared plan (libpypto/runtime/executable.py, Launcher, mirrors this
   struct): the parameters' data pointers come as arguments (at most PP_DIRECT of them; with
   more, nargs is 0 and the caller has set them in bufs), then the flat tensor table is filled
   from the buffer pointers (the parameters and the workspaces) through the slot of each
   entry, the dependency counts are reset from their initial values, and the wall time of
   the run is recorded. All of it under run_mu, so concurrent launches of one plan take
   turns. The caller prepares everything once per plan: a call from Python is one foreign
   call. */
#define PP_DIRECT 8
typedef struct {
    int64_t ntasks, nslots, nargs;
    const int32_t *prog;
    void **tensors;               /* nslots entries, filled here */
    const int64_t *slot;          /* per entry of tensors: its index in bufs */
    void **bufs;                  /* the parameters (the first nargs), then the workspaces */
    const int64_t *tensor_off, *scalars, *scalar_off;
    const int32_t *npred0;        /* initial unfinished predecessors */
    int32_t *npred;               /* scratch, ntasks entries */
    const int64_t *succ_off, *succ;
    int64_t *t_start, *t_end;
    int32_t *t_core;
    const int32_t *batch;         /* per task: most tasks taken with it (pp_take_batch) */
    int64_t wall_ns;              /* out */
} pp_launch;

int pypto_launch(pp_launch *L, int nthreads, void *p0, void *p1, void *p2, void *p3, void *p4,
                 void *p5, void *p6, void *p7) {
    void *direct[PP_DIRECT] = {p0, p1, p2, p3, p4, p5, p6, p7};
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_mutex_lock(&pp_pool.run_mu);
    for (int64_t k = 0; k < L->nargs && k < PP_DIRECT; k++) L->bufs[k] = direct[k];
    for (int64_t k = 0; k < L->nslots; k++) L->tensors[k] = L->bufs[L->slot[k]];
    if (L->ntasks > 0) memcpy(L->npred, L->npred0, sizeof(int32_t) * (size_t)L->ntasks);
    int rc = pp_run(L->ntasks, L->prog, L->tensors, L->tensor_off, L->scalars, L->scalar_off,
                    L->npred, L->succ_off, L->succ, nthreads, L->t_start, L->t_end, L->t_core,
                    L->batch);
    L->wall_ns = pp_now_ns(&t0);
    pthread_mutex_unlock(&pp_pool.run_mu);
    return rc;
}


/* The call-plan cache's hit in one foreign call (libpypto/jit.py, _FastCall, mirrors this
   struct): the arguments come as the Python objects themselves, and a plan runs only if each
   is a numpy array of exactly the type, rank, sizes, dtype object and flags (C-contiguous,
   aligned, writeable) the plan was made for; its data pointer is then read from the array
   and the launch runs as pypto_launch. The array's layout (where the data pointer, rank,
   sizes, dtype and flags sit in numpy's array object) was probed from Python on a live
   array when the library was loaded. Returns PP_FAST_MISS when an argument does not match
   (the caller then takes the full path, which checks everything), else pypto_launch's
   result. The caller holds a reference to every argument for the call. */
#define PP_FAST_MISS (-2)
#define PP_FAST_RANK 8
typedef struct {
    int64_t nargs;                           /* tensor arguments */
    const void *type;                        /* numpy.ndarray */
    int64_t off_type, off_data, off_nd, off_dims, off_descr, off_flags;
    int64_t flags_mask;
    int64_t nd[PP_DIRECT], flags[PP_DIRECT], param[PP_DIRECT];  /* param: its launch slot */
    const void *descr[PP_DIRECT];
    int64_t dims[PP_DIRECT][PP_FAST_RANK];
    pp_launch *L;
} pp_fast;

static int pp_fast_arg(const pp_fast *F, int64_t i, const char *o, void **data) {
    if (!o || *(const void *const *)(o + F->off_type) != F->type) return 0;
    if (*(const int *)(o + F->off_nd) != F->nd[i]) return 0;
    if (*(const void *const *)(o + F->off_descr) != F->descr[i]) return 0;
    if ((*(const int *)(o + F->off_flags) & F->flags_mask) != F->flags[i]) return 0;
    const int64_t *dims = *(const int64_t *const *)(o + F->off_dims);
    for (int64_t d = 0; d < F->nd[i]; d++)
        if (dims[d] != F->dims[i][d]) return 0;
    *data = *(void *const *)(o + F->off_data);
    return 1;
}

int pypto_fast(pp_fast *F, int nthreads, const char *a0, const char *a1, const char *a2,
               const char *a3, const char *a4, const char *a5, const char *a6,
               const char *a7) {
    const char *args[PP_DIRECT] = {a0, a1, a2, a3, a4, a5, a6, a7};
    void *p[PP_DIRECT] = {0};
    if (F->nargs > PP_DIRECT) return PP_FAST_MISS;
    for (int64_t i = 0; i < F->nargs; i++) {
        void *data;
        if (!pp_fast_arg(F, i, args[i], &data)) return PP_FAST_MISS;
        if (F->param[i] >= 0) p[F->param[i]] = data;
    }
    return pypto_launch(F->L, nthreads, p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
}

#ifdef PYPTO_STANDALONE
/* A run in a process of its own: the sanitized build (pypto-run --sanitize) is this program.

   Usage: KERNEL JOB RESULT. JOB holds the task tables, the thread count of each run and every
   tensor, each tensor and each table in an allocation of exactly its size, so that
   AddressSanitizer sees a task reach past a tensor and the runtime past a table. RESULT gets
   the status, each run's wall time, the last run's timeline and the tensors the job asks
   back. The format is written down once, in libpypto/runtime/executable.py (run_standalone). */
#include <stdio.h>

typedef struct { int64_t n; char *p; } pp_blob;

enum { PP_THREADS, PP_PROG, PP_TENSOR_OFF, PP_SCALARS, PP_SCALAR_OFF, PP_NPRED, PP_SUCC_OFF,
       PP_SUCC, PP_SLOTS, PP_NTABLES };

static int pp_read_i64(FILE *f, int64_t *v) { return fread(v, sizeof *v, 1, f) == 1; }

static int pp_read_blob(FILE *f, pp_blob *b) {
    void *p = NULL;
    if (!pp_read_i64(f, &b->n) || b->n < 0) return 0;
    if (posix_memalign(&p, 64, b->n > 0 ? (size_t)b->n : 1)) return 0;
    b->p = (char *)p;
    return b->n == 0 || fread(b->p, 1, (size_t)b->n, f) == (size_t)b->n;
}

static int pp_write_blob(FILE *f, const void *p, int64_t n) {
    return fwrite(&n, sizeof n, 1, f) == 1 && (n == 0 || fwrite(p, 1, (size_t)n, f) == (size_t)n);
}

static int pp_bad(const char *what) {
    fprintf(stderr, "pypto standalone: %s\n", what);
    return 2;
}

typedef struct {
    int64_t ntasks, nbufs;
    pp_blob tab[PP_NTABLES];
    pp_blob *buf;
    int64_t *back;                /* per tensor: 1 if RESULT gets it back */
} pp_job;

static int pp_read_job(const char *path, pp_job *job) {
    FILE *f = fopen(path, "rb");
    char magic[8];
    int ok = f && fread(magic, 1, 8, f) == 8 && !memcmp(magic, "PPJOB001", 8)
             && pp_read_i64(f, &job->ntasks) && pp_read_i64(f, &job->nbufs)
             && job->ntasks >= 0 && job->nbufs >= 0;
    for (int i = 0; ok && i < PP_NTABLES; i++) ok = pp_read_blob(f, &job->tab[i]);
    if (ok) {
        job->buf = (pp_blob *)calloc((size_t)(job->nbufs ? job->nbufs : 1), sizeof(pp_blob));
        job->back = (int64_t *)calloc((size_t)(job->nbufs ? job->nbufs : 1), sizeof(int64_t));
        ok = job->buf && job->back;
    }
    for (int64_t b = 0; ok && b < job->nbufs; b++)
        ok = pp_read_i64(f, &job->back[b]) && pp_read_blob(f, &job->buf[b]);
    if (f) fclose(f);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 3) return pp_bad("usage: KERNEL JOB RESULT");
    pp_job job;
    memset(&job, 0, sizeof job);
    if (!pp_read_job(argv[1], &job)) return pp_bad("unreadable job");
    int64_t n = job.ntasks, nt = n > 0 ? n : 1;
    int64_t nslots = job.tab[PP_SLOTS].n / 8, nruns = job.tab[PP_THREADS].n / 8;
    const int64_t *slot = (const int64_t *)job.tab[PP_SLOTS].p;
    const int64_t *threads = (const int64_t *)job.tab[PP_THREADS].p;
    void **ptrs = (void **)malloc(sizeof(void *) * (size_t)(nslots ? nslots : 1));
    int64_t *t_start = (int64_t *)calloc((size_t)nt, 8), *t_end = (int64_t *)calloc((size_t)nt, 8);
    int32_t *t_core = (int32_t *)calloc((size_t)nt, 4);
    int32_t *npred = (int32_t *)malloc((size_t)(job.tab[PP_NPRED].n ? job.tab[PP_NPRED].n : 1));
    int64_t *walls = (int64_t *)calloc((size_t)(nruns ? nruns : 1), 8);
    if (!ptrs || !t_start || !t_end || !t_core || !npred || !walls) return pp_bad("out of memory");
    for (int64_t s = 0; s < nslots; s++) {
        if (slot[s] < 0 || slot[s] >= job.nbufs) return pp_bad("a tensor slot out of range");
        ptrs[s] = job.buf[slot[s]].p;
    }
    int rc = 0;
    for (int64_t r = 0; r < nruns && rc == 0; r++) {
        struct timespec t0;
        memcpy(npred, job.tab[PP_NPRED].p, (size_t)job.tab[PP_NPRED].n);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        rc = pypto_run(n, (const int32_t *)job.tab[PP_PROG].p, ptrs,
                       (const int64_t *)job.tab[PP_TENSOR_OFF].p,
                       (const int64_t *)job.tab[PP_SCALARS].p,
                       (const int64_t *)job.tab[PP_SCALAR_OFF].p, npred,
                       (const int64_t *)job.tab[PP_SUCC_OFF].p,
                       (const int64_t *)job.tab[PP_SUCC].p, (int)threads[r],
                       t_start, t_end, t_core);
        walls[r] = pp_now_ns(&t0);
    }
    FILE *o = fopen(argv[2], "wb");
    int64_t rc64 = rc;
    int ok = o && fwrite("PPRES001", 1, 8, o) == 8 && fwrite(&rc64, 8, 1, o) == 1
             && pp_write_blob(o, walls, nruns * 8) && pp_write_blob(o, t_start, nt * 8)
             && pp_write_blob(o, t_end, nt * 8) && pp_write_blob(o, t_core, nt * 4);
    for (int64_t b = 0; ok && b < job.nbufs; b++)
        if (job.back[b]) ok = pp_write_blob(o, job.buf[b].p, job.buf[b].n);
    if (o && fclose(o) != 0) ok = 0;
    for (int i = 0; i < PP_NTABLES; i++) free(job.tab[i].p);
    for (int64_t b = 0; b < job.nbufs; b++) free(job.buf[b].p);
    free(job.buf); free(job.back); free(ptrs); free(t_start); free(t_end); free(t_core);
    free(npred); free(walls);
    return ok ? 0 : pp_bad("cannot write the result");
}
#endif
