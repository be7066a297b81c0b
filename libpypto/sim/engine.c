/* The simulator's event engine in C: the same model, event for event, as engine.py.
 *
 * engine.py is the reference; this file runs the same steps in the same order (the heap
 * ordered by (time, sequence number), the work stack last in first out, the same sums in
 * the same order, no fused multiply-add: built with -ffp-contract=off), so every event,
 * busy sum and byte count comes out bit-identical. tests/unit/sim/test_native.py compares
 * the two event by event. libpypto/sim/native.py packs the streams into the arrays below
 * and reads the results back.
 *
 * A template is one flattened instruction stream (flatten.py's Stream as parallel arrays);
 * a run is a template on a core from a start time, with its own GM keys (kbase indexes
 * `keys`: the L2 key id of each of the template's GM instructions, -1 for none). Two
 * drivers start the runs: tasks (Tensor mode: instances to free cores as their
 * predecessors finish, as sim/__init__.py's _Dispatcher) and waves (Pro clusters, as
 * _Waves).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BUCKET 64.0

typedef struct {
    /* templates: instructions tpl_off[t] .. tpl_off[t + 1] - 1 */
    int64_t ntpl;
    const int64_t *tpl_off;
    const int32_t *tpl_prog;
    /* per instruction */
    const int32_t *pipe;
    const double *dur;
    const int32_t *gslot;      /* -1: on chip; else its index among the template's GM ones */
    const double *nbytes;
    const double *rate;
    const int8_t *store;
    const int32_t *op;
    const int32_t *npred;
    const int64_t *succ_off;   /* CSR over the instructions; indices local to the template */
    const int32_t *succ;
    const int64_t *flag_off;
    const int32_t *flag;
    const int64_t *xflag_off;  /* cross-core key ids */
    const int64_t *xflag;
    const int64_t *post_off;
    const int64_t *post;
    const int64_t *need_off;
    const int64_t *need;
    /* GM keys of the runs and the sizes of the id spaces */
    const int64_t *keys;
    int64_t nkeys;             /* L2 key ids are 0 .. nkeys - 1 */
    int64_t nxkeys;            /* cross-core key ids are 0 .. nxkeys - 1 */
    /* the machine */
    int64_t ncores;
    int64_t npipes;
    double hbm, l2_bw, l2_bytes, l2_hit, l2_miss, launch, dispatch;
    int32_t has_l2, write_back;
    int64_t max_events;
    /* outputs */
    double *busy;              /* ncores x npipes */
    int32_t *ev_core, *ev_pipe, *ev_prog, *ev_op;
    double *ev_start, *ev_end;
    int64_t *flow_a, *flow_b;
    double *counters;          /* hbm_read, hbm_write, l2_hit_bytes, l2_write_bytes */
    int64_t *counts;           /* nevents, nkept, nev (kept), nflows, stuck waiters */
} Sim;

typedef struct Run {
    int64_t tpl, base, n, left, tag, kbase, live;   /* live: its index in Eng.live */
    int32_t core, pool;
    double t0, end;
    int32_t *wait;
    double *ready;
    int64_t *evid;
} Run;

typedef struct { double t; int64_t seq; int32_t kind, i; Run *r; } Item;
enum { EV_BEGIN = 0, EV_TRANSFER = 1, EV_DONE = 2 };

typedef struct { Run *r; int32_t i; } Work;

typedef struct { Work *w; int64_t n, cap; } WorkVec;

typedef struct { double *used; int64_t n; double cap; } Calendar;

typedef struct {
    Sim *s;
    Item *heap; int64_t nheap, capheap, seq;
    WorkVec work;
    double now;
    Calendar hbm, l2;
    /* L2: a doubly linked LRU list over key ids */
    int64_t *prev, *next, head, tail;
    int8_t *in_l2, *dirty;
    double *size, *avail, l2_used;
    /* cross-core mail */
    int8_t *mail_set;
    double *mail_t;
    int64_t *poster;
    WorkVec *waiters;
    int64_t nev, nflows, nevents, nkept;
    int (*done)(void *, Run *);
    void *driver;
    Run **live;                /* the runs not yet done (freed at the end if stuck) */
    int64_t nlive, caplive;
    int oom;
} Eng;

static void *xcalloc(Eng *e, size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) e->oom = 1;
    return p;
}

static void push_work(Eng *e, WorkVec *v, Run *r, int32_t i) {
    if (v->n == v->cap) {
        int64_t cap = v->cap ? 2 * v->cap : 64;
        Work *w = realloc(v->w, (size_t)cap * sizeof(Work));
        if (!w) { e->oom = 1; return; }
        v->w = w;
        v->cap = cap;
    }
    v->w[v->n].r = r;
    v->w[v->n].i = i;
    v->n++;
}

/* -- the heap: (t, seq) ascending, as heapq orders engine.py's tuples ----------------- */

static int before(const Item *a, const Item *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void at(Eng *e, double t, int32_t kind, Run *r, int32_t i) {
    if (e->nheap == e->capheap) {
        int64_t cap = e->capheap ? 2 * e->capheap : 1024;
        Item *h = realloc(e->heap, (size_t)cap * sizeof(Item));
        if (!h) { e->oom = 1; return; }
        e->heap = h;
        e->capheap = cap;
    }
    Item it = {t, ++e->seq, kind, i, r};
    int64_t k = e->nheap++;
    while (k > 0) {
        int64_t p = (k - 1) / 2;
        if (!before(&it, &e->heap[p])) break;
        e->heap[k] = e->heap[p];
        k = p;
    }
    e->heap[k] = it;
}

static Item pop(Eng *e) {
    Item top = e->heap[0], last = e->heap[--e->nheap];
    int64_t k = 0, n = e->nheap;
    for (;;) {
        int64_t c = 2 * k + 1;
        if (c >= n) break;
        if (c + 1 < n && before(&e->heap[c + 1], &e->heap[c])) c++;
        if (!before(&e->heap[c], &last)) break;
        e->heap[k] = e->heap[c];
        k = c;
    }
    if (n) e->heap[k] = last;
    return top;
}

/* -- shared resources: 64-cycle buckets, as engine.Calendar ---------------------------- */

static double reserve(Eng *e, Calendar *c, double t0, double nbytes, double rate) {
    if (nbytes <= 0) return t0;
    int64_t b = (int64_t)floor(t0 / BUCKET);
    double t = t0, rem = nbytes;
    for (;;) {
        if (b >= c->n) {
            int64_t n = b + 4096;
            double *u = realloc(c->used, (size_t)n * sizeof(double));
            if (!u) { e->oom = 1; return t0; }
            memset(u + c->n, 0, (size_t)(n - c->n) * sizeof(double));
            c->used = u;
            c->n = n;
        }
        double end = (double)(b + 1) * BUCKET;
        double a = c->cap - c->used[b], r = rate * (end - t);
        double room = r < a ? r : a;
        if (room >= rem) {
            c->used[b] += rem;
            return t + rem * (end - t) / room;
        }
        if (room > 0) {
            c->used[b] += room;
            rem -= room;
        }
        b++;
        t = end;
    }
}

/* -- L2 ---------------------------------------------------------------------------- */

static void unlink_key(Eng *e, int64_t k) {
    int64_t p = e->prev[k], n = e->next[k];
    if (p >= 0) e->next[p] = n; else e->head = n;
    if (n >= 0) e->prev[n] = p; else e->tail = p;
    e->in_l2[k] = 0;
}

static void append_key(Eng *e, int64_t k) {
    e->prev[k] = e->tail;
    e->next[k] = -1;
    if (e->tail >= 0) e->next[e->tail] = k; else e->head = k;
    e->tail = k;
    e->in_l2[k] = 1;
}

static void cache(Eng *e, int64_t key, double nbytes, double avail, int dirty) {
    Sim *s = e->s;
    if (!s->has_l2 || key < 0 || nbytes > s->l2_bytes) return;
    if (e->in_l2[key]) {
        unlink_key(e, key);
        e->l2_used -= e->size[key];
    }
    while (e->l2_used + nbytes > s->l2_bytes && e->head >= 0) {
        int64_t k = e->head;
        unlink_key(e, k);
        e->l2_used -= e->size[k];
        if (e->dirty[k]) {
            reserve(e, &e->hbm, e->now, e->size[k], s->hbm);
            s->counters[1] += e->size[k];
        }
    }
    append_key(e, key);
    e->size[key] = nbytes;
    e->avail[key] = avail;
    e->dirty[key] = (int8_t)dirty;
    e->l2_used += nbytes;
}

/* -- streams ------------------------------------------------------------------------- */

static void flows(Eng *e, Run *r, int64_t g, int32_t i) {
    Sim *s = e->s;
    int64_t me = r->evid[i];
    if (me < 0 || e->nflows >= s->max_events) return;
    for (int64_t k = s->flag_off[g]; k < s->flag_off[g + 1]; k++) {
        int64_t ev = r->evid[s->flag[k]];
        if (ev >= 0 && e->nflows < s->max_events) {
            s->flow_a[e->nflows] = ev;
            s->flow_b[e->nflows++] = me;
        }
    }
    for (int64_t k = s->xflag_off[g]; k < s->xflag_off[g + 1]; k++) {
        int64_t ev = e->poster[s->xflag[k]];
        if (ev >= 0 && e->nflows < s->max_events) {
            s->flow_a[e->nflows] = ev;
            s->flow_b[e->nflows++] = me;
        }
    }
}

static void finish(Eng *e, Run *r, int32_t i, double start, double end) {
    Sim *s = e->s;
    int64_t g = r->base + i;
    int32_t pipe = s->pipe[g];
    s->busy[r->core * s->npipes + pipe] += end - start;
    e->nevents++;
    if (end > start) {
        e->nkept++;
        if (e->nev < s->max_events) {
            int64_t k = e->nev++;
            r->evid[i] = k;
            s->ev_core[k] = r->core;
            s->ev_pipe[k] = pipe;
            s->ev_start[k] = start;
            s->ev_end[k] = end;
            s->ev_prog[k] = s->tpl_prog[r->tpl];
            s->ev_op[k] = s->op[g];
        }
        if (s->flag_off[g + 1] > s->flag_off[g] || s->xflag_off[g + 1] > s->xflag_off[g])
            flows(e, r, g, i);
    }
    if (s->post_off[g + 1] > s->post_off[g]) {
        int64_t ev = s->flag_off[g + 1] > s->flag_off[g] ? r->evid[s->flag[s->flag_off[g]]] : -1;
        for (int64_t k = s->post_off[g]; k < s->post_off[g + 1]; k++) {
            int64_t key = s->post[k];
            e->poster[key] = ev;
            e->mail_set[key] = 1;
            e->mail_t[key] = end;
            WorkVec *w = &e->waiters[key];
            for (int64_t j = 0; j < w->n; j++) push_work(e, &e->work, w->w[j].r, w->w[j].i);
            w->n = 0;
        }
    }
    for (int64_t k = s->succ_off[g]; k < s->succ_off[g + 1]; k++) {
        int32_t j = s->succ[k];
        if (end > r->ready[j]) r->ready[j] = end;
        if (--r->wait[j] == 0) push_work(e, &e->work, r, j);
    }
    if (end > r->end) r->end = end;
    if (--r->left == 0) at(e, r->end, EV_DONE, r, 0);
}

static void transfer(Eng *e, Run *r, int32_t i) {
    Sim *s = e->s;
    int64_t g = r->base + i;
    int64_t key = s->keys[r->kbase + s->gslot[g]];
    double nbytes = s->nbytes[g], rate = s->rate[g], t = e->now, end;
    double begin = t + s->dur[g];
    if (s->store[g] && s->has_l2 && s->write_back && key >= 0 && nbytes <= s->l2_bytes) {
        end = reserve(e, &e->l2, begin + s->l2_hit, nbytes, rate);
        s->counters[3] += nbytes;
        cache(e, key, nbytes, end, 1);
    } else if (s->store[g]) {
        end = reserve(e, &e->hbm, begin, nbytes, rate);
        s->counters[1] += nbytes;
        cache(e, key, nbytes, end, 0);
    } else if (s->has_l2 && key >= 0 && e->in_l2[key]) {
        unlink_key(e, key);
        append_key(e, key);
        end = reserve(e, &e->l2, begin + s->l2_hit, nbytes, rate);
        if (e->avail[key] > end) end = e->avail[key];
        s->counters[2] += nbytes;
    } else {
        end = reserve(e, &e->hbm, begin + (s->has_l2 ? s->l2_miss : 0.0), nbytes, rate);
        s->counters[0] += nbytes;
        cache(e, key, nbytes, end, 0);
    }
    finish(e, r, i, t, end);
}

static void ready(Eng *e, Run *r, int32_t i) {
    Sim *s = e->s;
    int64_t g = r->base + i;
    double t = r->ready[i];
    if (s->need_off[g + 1] > s->need_off[g]) {
        for (int64_t k = s->need_off[g]; k < s->need_off[g + 1]; k++) {
            int64_t key = s->need[k];
            if (!e->mail_set[key]) {
                push_work(e, &e->waiters[key], r, i);
                return;
            }
            if (e->mail_t[key] > t) t = e->mail_t[key];
        }
        r->ready[i] = t;
    }
    if (s->gslot[g] >= 0) at(e, t, EV_TRANSFER, r, i);
    else finish(e, r, i, t, t + s->dur[g]);
}

static void drain(Eng *e) {
    while (e->work.n && !e->oom) {
        Work w = e->work.w[--e->work.n];
        ready(e, w.r, w.i);
    }
}

static Run *start(Eng *e, int64_t tpl, int32_t core, double t0, int64_t tag, int64_t kbase) {
    Sim *s = e->s;
    int64_t base = s->tpl_off[tpl], n = s->tpl_off[tpl + 1] - base;
    Run *r = malloc(sizeof(Run));
    char *mem = malloc((size_t)(n ? n : 1) * (sizeof(int32_t) + sizeof(double) + sizeof(int64_t)));
    if (e->nlive == e->caplive) {
        int64_t cap = e->caplive ? 2 * e->caplive : 256;
        Run **l = realloc(e->live, (size_t)cap * sizeof(Run *));
        if (l) { e->live = l; e->caplive = cap; }
    }
    if (!r || !mem || e->nlive == e->caplive) { free(r); free(mem); e->oom = 1; return NULL; }
    r->live = e->nlive;
    e->live[e->nlive++] = r;
    r->tpl = tpl; r->base = base; r->n = n; r->left = n; r->tag = tag; r->kbase = kbase;
    r->core = core; r->pool = -1; r->t0 = t0; r->end = t0;
    r->ready = (double *)mem;
    r->evid = (int64_t *)(mem + (size_t)(n ? n : 1) * sizeof(double));
    r->wait = (int32_t *)(mem + (size_t)(n ? n : 1) * (sizeof(double) + sizeof(int64_t)));
    for (int64_t i = 0; i < n; i++) {
        r->wait[i] = s->npred[base + i];
        r->ready[i] = t0;
        r->evid[i] = -1;
    }
    if (!n) {
        at(e, t0, EV_DONE, r, 0);
        return r;
    }
    for (int64_t i = 0; i < n; i++)
        if (r->wait[i] == 0) push_work(e, &e->work, r, (int32_t)i);
    drain(e);
    return r;
}

static void free_run(Eng *e, Run *r) {
    Run *last = e->live[--e->nlive];
    last->live = r->live;
    e->live[r->live] = last;
    free(r->ready);
    free(r);
}

static int init(Eng *e, Sim *s) {
    memset(e, 0, sizeof(*e));
    e->s = s;
    e->hbm.cap = s->hbm * BUCKET;
    e->l2.cap = s->l2_bw * BUCKET;
    int64_t nk = s->nkeys, nx = s->nxkeys;
    e->prev = xcalloc(e, (size_t)nk, sizeof(int64_t));
    e->next = xcalloc(e, (size_t)nk, sizeof(int64_t));
    e->in_l2 = xcalloc(e, (size_t)nk, 1);
    e->dirty = xcalloc(e, (size_t)nk, 1);
    e->size = xcalloc(e, (size_t)nk, sizeof(double));
    e->avail = xcalloc(e, (size_t)nk, sizeof(double));
    e->head = e->tail = -1;
    e->mail_set = xcalloc(e, (size_t)nx, 1);
    e->mail_t = xcalloc(e, (size_t)nx, sizeof(double));
    e->poster = xcalloc(e, (size_t)nx, sizeof(int64_t));
    e->waiters = xcalloc(e, (size_t)nx, sizeof(WorkVec));
    return e->oom ? -1 : 0;
}

static int64_t stuck(Eng *e) {
    int64_t n = 0;
    for (int64_t k = 0; k < e->s->nxkeys; k++) n += e->waiters[k].n;
    return n;
}

static void release(Eng *e) {
    Sim *s = e->s;
    s->counts[0] = e->nevents;
    s->counts[1] = e->nkept;
    s->counts[2] = e->nev;
    s->counts[3] = e->nflows;
    s->counts[4] = e->waiters ? stuck(e) : 0;
    while (e->nlive) free_run(e, e->live[e->nlive - 1]);
    free(e->live);
    free(e->heap);
    free(e->work.w);
    free(e->hbm.used);
    free(e->l2.used);
    free(e->prev); free(e->next); free(e->in_l2); free(e->dirty); free(e->size); free(e->avail);
    free(e->mail_set); free(e->mail_t); free(e->poster);
    if (e->waiters)
        for (int64_t k = 0; k < s->nxkeys; k++) free(e->waiters[k].w);
    free(e->waiters);
}

static void run_heap(Eng *e, void (*begin)(void *)) {
    at(e, e->s->launch, EV_BEGIN, NULL, 0);
    while (e->nheap && !e->oom) {
        Item it = pop(e);
        e->now = it.t;
        if (it.kind == EV_BEGIN) begin(e->driver);
        else if (it.kind == EV_TRANSFER) transfer(e, it.r, it.i);
        else {
            e->done(e->driver, it.r);
            free_run(e, it.r);
        }
        drain(e);
    }
}

/* -- Tensor mode: task instances to free cores ---------------------------------------- */

typedef struct { int64_t *v; int64_t n; } Heap64;     /* a min-heap of ids */

static void hpush(Heap64 *h, int64_t x) {
    int64_t k = h->n++;
    while (k > 0 && h->v[(k - 1) / 2] > x) {
        h->v[k] = h->v[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h->v[k] = x;
}

static int64_t hpop(Heap64 *h) {
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

typedef struct {
    Eng *e;
    int64_t n;
    const int32_t *tpl, *kind;     /* kind: 0 vector, 1 cube, 2 mixed (CORE_KINDS' order) */
    const int64_t *kbase, *npred, *succ_off, *succ;
    const int32_t *core_kind;      /* 0 vector, 1 cube, 2 mixed */
    int64_t *waiting;
    Heap64 ready[3], free_[3];
    int32_t *out_core;
    double *out_t0, *out_end;
    int64_t finished;
} Tasks;

/* the core kinds that run a program of each kind, as sim/__init__.py's CORE_KINDS */
static const int ALLOWED[3][2] = {{0, 2}, {1, 2}, {2, -1}};

static void dispatch(Tasks *d) {
    Eng *e = d->e;
    for (int kind = 0; kind < 3; kind++) {
        Heap64 *q = &d->ready[kind];
        while (q->n && !e->oom) {
            int64_t best = -1;
            int bk = -1;
            for (int a = 0; a < 2; a++) {
                int k = ALLOWED[kind][a];
                if (k >= 0 && d->free_[k].n && (best < 0 || d->free_[k].v[0] < best)) {
                    best = d->free_[k].v[0];
                    bk = k;
                }
            }
            if (best < 0) break;
            hpop(&d->free_[bk]);
            int64_t i = hpop(q);
            Run *r = start(e, d->tpl[i], (int32_t)best, e->now + e->s->dispatch, i,
                           d->kbase[i]);
            if (r) r->pool = bk;
        }
    }
}

static int task_done(void *p, Run *r) {
    Tasks *d = p;
    int64_t i = r->tag;
    d->out_core[i] = r->core;
    d->out_t0[i] = r->t0;
    d->out_end[i] = r->end;
    d->finished++;
    hpush(&d->free_[r->pool], r->core);
    for (int64_t k = d->succ_off[i]; k < d->succ_off[i + 1]; k++) {
        int64_t j = d->succ[k];
        if (--d->waiting[j] == 0) hpush(&d->ready[d->kind[j]], j);
    }
    dispatch(d);
    return 0;
}

static void tasks_begin(void *p) {
    Tasks *d = p;
    for (int64_t i = 0; i < d->n; i++)
        if (d->waiting[i] == 0) hpush(&d->ready[d->kind[i]], i);
    dispatch(d);
}

/* Returns 0, or -1 when memory ran out; finished instances in counts[5]. */
int pp_sim_tasks(Sim *s, int64_t n, const int32_t *tpl, const int32_t *kind,
                 const int64_t *kbase, const int64_t *npred, const int64_t *succ_off,
                 const int64_t *succ, const int32_t *core_kind, int32_t *out_core,
                 double *out_t0, double *out_end) {
    Eng e;
    Tasks d;
    memset(&d, 0, sizeof(d));
    int rc = init(&e, s);
    d.e = &e; d.n = n; d.tpl = tpl; d.kind = kind; d.kbase = kbase; d.npred = npred;
    d.succ_off = succ_off; d.succ = succ; d.core_kind = core_kind;
    d.out_core = out_core; d.out_t0 = out_t0; d.out_end = out_end;
    d.waiting = xcalloc(&e, (size_t)n, sizeof(int64_t));
    for (int k = 0; k < 3; k++) {
        d.ready[k].v = xcalloc(&e, (size_t)n, sizeof(int64_t));
        d.free_[k].v = xcalloc(&e, (size_t)s->ncores, sizeof(int64_t));
    }
    if (rc == 0 && !e.oom) {
        for (int64_t i = 0; i < n; i++) d.waiting[i] = npred[i];
        for (int64_t c = 0; c < s->ncores; c++) hpush(&d.free_[core_kind[c]], c);
        e.done = task_done;
        e.driver = &d;
        run_heap(&e, tasks_begin);
    }
    int oom = e.oom;
    release(&e);
    s->counts[5] = d.finished;
    free(d.waiting);
    for (int k = 0; k < 3; k++) { free(d.ready[k].v); free(d.free_[k].v); }
    return oom ? -1 : 0;
}

/* -- Pro mode: clusters in waves ------------------------------------------------------- */

typedef struct {
    Eng *e;
    int64_t nclusters, slots;
    const int64_t *mem_off, *mem_tpl, *mem_kbase;
    const int32_t *mem_core;
    int64_t *left;
    double *c_t0, *c_end;       /* outputs: each cluster's start and end */
} Waves;

static void launch_cluster(Waves *w, int64_t c) {
    Eng *e = w->e;
    w->left[c] = w->mem_off[c + 1] - w->mem_off[c];
    w->c_t0[c] = w->c_end[c] = e->now;
    for (int64_t m = w->mem_off[c]; m < w->mem_off[c + 1] && !e->oom; m++)
        start(e, w->mem_tpl[m], w->mem_core[m], e->now, c, w->mem_kbase[m]);
}

static int wave_done(void *p, Run *r) {
    Waves *w = p;
    int64_t c = r->tag;
    w->left[c]--;
    if (r->end > w->c_end[c]) w->c_end[c] = r->end;
    if (w->left[c] == 0 && c + w->slots < w->nclusters) launch_cluster(w, c + w->slots);
    return 0;
}

static void waves_begin(void *p) {
    Waves *w = p;
    for (int64_t c = 0; c < w->slots && c < w->nclusters; c++) launch_cluster(w, c);
}

int pp_sim_waves(Sim *s, int64_t nclusters, int64_t slots, const int64_t *mem_off,
                 const int64_t *mem_tpl, const int32_t *mem_core, const int64_t *mem_kbase,
                 double *c_t0, double *c_end) {
    Eng e;
    Waves w = {&e, nclusters, slots, mem_off, mem_tpl, mem_kbase, mem_core, NULL, c_t0, c_end};
    int rc = init(&e, s);
    w.left = xcalloc(&e, (size_t)nclusters, sizeof(int64_t));
    if (rc == 0 && !e.oom) {
        e.done = wave_done;
        e.driver = &w;
        run_heap(&e, waves_begin);
    }
    int oom = e.oom;
    release(&e);
    free(w.left);
    return oom ? -1 : 0;
}

/* -- L2 key ids: equal rows, equal ids (first occurrence order) ------------------------- */

int pp_intern_rows(const int64_t *rows, int64_t n, int64_t w, int64_t *ids, int64_t *nids) {
    int64_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    int64_t *table = malloc((size_t)cap * sizeof(int64_t));   /* row index, or -1 */
    if (!table) return -1;
    memset(table, 0xff, (size_t)cap * sizeof(int64_t));
    int64_t next = 0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t *row = rows + i * w;
        if (row[0] < 0) { ids[i] = -1; continue; }
        uint64_t h = 1469598103934665603ULL;
        for (int64_t k = 0; k < w; k++) h = (h ^ (uint64_t)row[k]) * 1099511628211ULL;
        h ^= h >> 29;
        int64_t slot = (int64_t)(h & (uint64_t)(cap - 1));
        for (;;) {
            int64_t j = table[slot];
            if (j < 0) {
                table[slot] = i;
                ids[i] = next++;
                break;
            }
            if (!memcmp(rows + j * w, row, (size_t)w * sizeof(int64_t))) {
                ids[i] = ids[j];
                break;
            }
            slot = (slot + 1) & (cap - 1);
        }
    }
    free(table);
    *nids = next;
    return 0;
}
