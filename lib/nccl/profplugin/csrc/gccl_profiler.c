/*
 * gccl's NCCL profiler plugin: NCCL loads it through NCCL_PROFILER_PLUGIN
 * and calls it for collectives, point-to-point operations, proxy
 * operations and their steps, and kernel channels. It keeps the events in
 * a fixed buffer per communicator and, when the communicator is destroyed,
 * writes them as one Trace Event Format file per rank, with gccl's
 * conventions (lib/tef):
 *
 *   pid  the rank in the communicator;
 *   tid  c                     kernel channel c ("kernel" events);
 *        1000 + lane           the rank's operations ("op", "group");
 *        10000 + 100*c + lane  proxy operations of channel c and their
 *                              steps and waits ("proxy", "step", "wait");
 *        100000 + 100*c + lane kernel channel c's further lanes.
 *
 * Lanes: events that overlap in time without nesting (NCCL launches
 * operations asynchronously, and the proxy pipelines up to 8 steps of an
 * operation and serves several peers at once) go on separate tracks, so
 * that every track nests; an event goes on its parent's lane where it fits
 * inside it. Timestamps: CLOCK_REALTIME, in microseconds (nanosecond
 * decimals) from the start of the hour the communicator was created in
 * (otherData.ts_base_ns), so that the files of one host line up; kernel
 * channels come with GPU globaltimer stamps, moved onto that clock by the
 * smallest (CPU time seen - GPU stamp) over the rank's kernel events.
 *
 * Environment (read when a communicator is created):
 *   GCCL_PROFILER_OUTPUT  the file; %r rank, %p pid, %h host, %n the
 *                         communicator's ordinal in the process, %% a %
 *                         (default gccl-nccl-trace-r%r-%h-%p-c%n.json)
 *   GCCL_PROFILER_EVENTS  events kept per communicator (default 1048576);
 *                         the rest are counted as dropped
 *   GCCL_PROFILER_MASK    the events: names joined by commas (group, coll,
 *                         p2p, proxyop, proxystep, kernelch, all) or a
 *                         number (default coll,p2p,proxyop,proxystep,kernelch)
 *
 * It never stops NCCL: where it cannot trace it says why on stderr and
 * declines (init returns an error; NCCL runs on without it).
 *
 * The interface: ncclProfiler_v6 (NCCL 2.29 on), ncclProfiler_v5 (2.28)
 * and ncclProfiler_v4 (2.27); NCCL takes the newest it knows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* NCCL's result codes. */
enum { resOK = 0, resSystem = 2, resInternal = 3, resBadArg = 4 };

/* NCCL's event type bits (eActivationMask, and the descriptor's type). */
enum {
  evGroup = 1 << 0,
  evColl = 1 << 1,
  evP2p = 1 << 2,
  evProxyOp = 1 << 3,
  evProxyStep = 1 << 4,
  evKernelCh = 1 << 6,
};
#define EV_SUPPORTED (evGroup | evColl | evP2p | evProxyOp | evProxyStep | evKernelCh)
#define EV_DEFAULT (evColl | evP2p | evProxyOp | evProxyStep | evKernelCh)

/* NCCL's event states this plugin reads. */
enum {
  stSendGPUWait = 8,
  stSendWait = 9,
  stRecvWait = 10,
  stRecvFlushWait = 11,
  stRecvGPUWait = 12,
  stSendPeerWait = 20,
  stKernelChStop = 22,
};

typedef void (*logger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

/*
 * The event descriptor as NCCL passes it, up to the members read here. v4
 * has a one-byte type, v5 and v6 an eight-byte one; both are followed, at
 * offset 8, by the parent, the rank and a union of per-type members, the
 * same in v4, v5 and v6 for the types read here (v5 appends the parent
 * group to the collective's and the point-to-point's).
 */
struct descColl {
  uint64_t seq;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* dtype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
  void* group; /* v5 on */
};
struct descP2p {
  const char* func;
  void* buff;
  const char* dtype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void* group; /* v5 on */
};
struct descProxyOp {
  int pid; /* pid_t */
  uint8_t channel;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};
struct descKernelCh {
  uint8_t channel;
  uint64_t gpuStart;
};
struct desc {
  union {
    uint8_t v4;
    uint64_t v5;
  } type;
  void* parent;
  int rank;
  union {
    struct descColl coll;
    struct descP2p p2p;
    struct descProxyOp op;
    int step;
    struct descKernelCh kch;
  } u;
};
_Static_assert(offsetof(struct desc, parent) == 8, "descriptor: parent at 8");
_Static_assert(offsetof(struct desc, u) == 24, "descriptor: union at 24");
_Static_assert(offsetof(struct descColl, group) == 80, "collective: parent group at 80");
_Static_assert(offsetof(struct descP2p, group) == 40, "p2p: parent group at 40");
_Static_assert(offsetof(struct descKernelCh, gpuStart) == 8, "kernel channel: timer at 8");

/* The state arguments: the step's bytes, or the kernel's stop stamp. */
union stateArgs {
  size_t transSize;
  uint64_t gpuStop;
};

/* Kinds of events kept. */
enum { kGroup = 1, kColl, kP2p, kProxyOp, kStep, kKernel };

#define MAX_STATES 4

/*
 * One event. The thread that starts it fills it and then sets ready; the
 * thread that stops it (the same one for every type NCCL gives: the
 * caller's for groups and operations, the proxy's for the rest) writes
 * what it records and then stop. finalize reads ready, stop and nstates
 * (acquire) and then the rest.
 */
struct event {
  atomic_int ready;     /* 1 once filled: starter writes (release), finalize reads */
  atomic_llong stop;    /* ns, 0 until stopped: stopper writes (release), finalize reads */
  atomic_int nstates;   /* states recorded: the proxy thread writes (release), finalize reads */
  uint8_t kind, channel, isSend, nChannels;
  int parent;           /* index of the parent in this communicator's buffer, or -1 */
  int peer, rank, step, nSteps, chunkSize;
  long long start;      /* ns */
  uint64_t gpuStart, gpuStop;
  uint64_t seq;
  size_t count, transSize;
  uint8_t state[MAX_STATES];
  long long stateAt[MAX_STATES];
  char func[16], dtype[16], algo[16], proto[8];
};

/* One communicator's profiler. */
struct ctx {
  struct event* ev;
  long long cap;
  atomic_llong next;   /* slots claimed: startEvent's callers add (any thread) */
  atomic_llong drops;  /* events not kept for want of room: startEvent's callers add */
  int mask, version, rank, nranks, nnodes, ordinal, fd;
  int pid;
  uint64_t commId;
  long long base;      /* ns: CLOCK_REALTIME at the start of the hour of init */
  char path[4096], host[256], name[128];
};

static atomic_int contexts; /* communicators initialised in this process: init adds */

static long long now(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void copyStr(char* dst, size_t n, const char* src) {
  if (!src) {
    dst[0] = 0;
    return;
  }
  strncpy(dst, src, n - 1);
  dst[n - 1] = 0;
}

/* ---------- init: the environment ---------- */

static const struct {
  const char* name;
  int bits;
} maskNames[] = {
    {"group", evGroup},         {"coll", evColl},         {"p2p", evP2p}, {"proxyop", evProxyOp},
    {"proxystep", evProxyStep}, {"kernelch", evKernelCh}, {"all", EV_SUPPORTED},
};

/* parseMask reads GCCL_PROFILER_MASK; 0 on success. */
static int parseMask(const char* s, int* mask, char* err, size_t errn) {
  if (!s || !*s) {
    *mask = EV_DEFAULT;
    return 0;
  }
  char* end;
  errno = 0;
  long v = strtol(s, &end, 0);
  if (end != s && *end == 0) {
    if (errno || v <= 0 || (v & ~EV_SUPPORTED)) {
      snprintf(err, errn, "GCCL_PROFILER_MASK=%s: a number must be a non-empty set of the bits 0x%x (group 0x1, coll 0x2, p2p 0x4, proxyop 0x8, proxystep 0x10, kernelch 0x40)", s, EV_SUPPORTED);
      return -1;
    }
    *mask = (int)v;
  } else {
    int m = 0;
    const char* p = s;
    while (*p) {
      const char* q = p;
      while (*q && *q != ',') q++;
      size_t n = (size_t)(q - p);
      int found = 0;
      for (size_t i = 0; i < sizeof(maskNames) / sizeof(maskNames[0]); i++) {
        if (n == strlen(maskNames[i].name) && strncasecmp(p, maskNames[i].name, n) == 0) {
          m |= maskNames[i].bits;
          found = 1;
        }
      }
      if (!found) {
        snprintf(err, errn, "GCCL_PROFILER_MASK=%s: unknown event %.*s: valid are group, coll, p2p, proxyop, proxystep, kernelch, all (joined by commas), or a number", s, (int)n, p);
        return -1;
      }
      p = *q ? q + 1 : q;
    }
    *mask = m;
  }
  /* A step's peer and channel are its proxy operation's. */
  if (*mask & evProxyStep) *mask |= evProxyOp;
  return 0;
}

/* expandPath fills out from the GCCL_PROFILER_OUTPUT pattern; 0 on success. */
static int expandPath(const struct ctx* c, const char* pat, char* out, size_t n, char* err, size_t errn) {
  size_t o = 0;
  for (const char* p = pat; *p; p++) {
    char buf[300];
    const char* add = buf;
    if (*p != '%') {
      buf[0] = *p;
      buf[1] = 0;
    } else {
      switch (*++p) {
        case 'r': snprintf(buf, sizeof buf, "%d", c->rank); break;
        case 'p': snprintf(buf, sizeof buf, "%d", c->pid); break;
        case 'n': snprintf(buf, sizeof buf, "%d", c->ordinal); break;
        case 'h': add = c->host; break;
        case '%': add = "%"; break;
        default:
          snprintf(err, errn, "GCCL_PROFILER_OUTPUT=%s: unknown %%%c: valid are %%r (rank), %%p (pid), %%h (host), %%n (communicator ordinal), %%%%", pat, *p ? *p : ' ');
          return -1;
      }
    }
    size_t l = strlen(add);
    if (o + l >= n) {
      snprintf(err, errn, "GCCL_PROFILER_OUTPUT=%s: the path is longer than %zu bytes", pat, n - 1);
      return -1;
    }
    memcpy(out + o, add, l);
    o += l;
  }
  out[o] = 0;
  return 0;
}

static void say(const struct ctx* c, const char* msg) {
  fprintf(stderr, "gccl profiler (NCCL rank %d, pid %d): %s; NCCL runs on without this profiler for this communicator\n", c->rank, c->pid, msg);
}

static int initCommon(void** context, int* mask, uint64_t commId, const char* commName, int nNodes, int nRanks, int rank, int version) {
  if (!context || !mask) return resBadArg;
  *context = NULL;
  struct ctx* c = calloc(1, sizeof *c);
  if (!c) {
    fprintf(stderr, "gccl profiler (NCCL rank %d): out of memory; NCCL runs on without this profiler\n", rank);
    return resSystem;
  }
  c->version = version;
  c->rank = rank;
  c->nranks = nRanks;
  c->nnodes = nNodes;
  c->commId = commId;
  c->pid = (int)getpid();
  c->ordinal = atomic_fetch_add(&contexts, 1);
  c->fd = -1;
  copyStr(c->name, sizeof c->name, commName);
  if (gethostname(c->host, sizeof c->host) != 0) strcpy(c->host, "host");
  c->host[sizeof c->host - 1] = 0;
  char err[5120];
  const char* cap = getenv("GCCL_PROFILER_EVENTS");
  c->cap = 1 << 20;
  if (cap && *cap) {
    char* end;
    errno = 0;
    long long v = strtoll(cap, &end, 10);
    if (errno || *end || v < 1 || v > (1LL << 26)) {
      snprintf(err, sizeof err, "GCCL_PROFILER_EVENTS=%s: want a whole number of events from 1 to %lld", cap, 1LL << 26);
      goto fail;
    }
    c->cap = v;
  }
  if (parseMask(getenv("GCCL_PROFILER_MASK"), &c->mask, err, sizeof err)) goto fail;
  const char* pat = getenv("GCCL_PROFILER_OUTPUT");
  if (!pat || !*pat) pat = "gccl-nccl-trace-r%r-%h-%p-c%n.json";
  if (expandPath(c, pat, c->path, sizeof c->path, err, sizeof err)) goto fail;
  /* Open now: a path that cannot be written is said at once, not lost at the end. */
  c->fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (c->fd < 0) {
    snprintf(err, sizeof err, "cannot write the trace to %s (%s): set GCCL_PROFILER_OUTPUT to a writable path (%%r rank, %%p pid, %%h host, %%n communicator)", c->path, strerror(errno));
    goto fail;
  }
  c->ev = calloc((size_t)c->cap, sizeof *c->ev);
  if (!c->ev) {
    snprintf(err, sizeof err, "no memory for %lld events (GCCL_PROFILER_EVENTS)", c->cap);
    goto fail;
  }
  long long t = now();
  c->base = t - t % (3600LL * 1000000000LL);
  *mask = c->mask;
  *context = c;
  return resOK;
fail:
  say(c, err);
  if (c->fd >= 0) {
    close(c->fd);
    unlink(c->path);
  }
  free(c->ev);
  free(c);
  return resBadArg;
}

static int initV5(void** context, uint64_t commId, int* mask, const char* commName, int nNodes, int nRanks, int rank, logger_t log) {
  (void)log;
  return initCommon(context, mask, commId, commName, nNodes, nRanks, rank, 5);
}

static int initV6(void** context, uint64_t commId, int* mask, const char* commName, int nNodes, int nRanks, int rank, logger_t log) {
  (void)log;
  return initCommon(context, mask, commId, commName, nNodes, nRanks, rank, 6);
}

static int initV4(void** context, int* mask, const char* commName, uint64_t commHash, int nNodes, int nRanks, int rank, logger_t log) {
  (void)log;
  return initCommon(context, mask, commHash, commName, nNodes, nRanks, rank, 4);
}

/* ---------- events ---------- */

/* indexOf returns the event p points to in c's buffer, or -1: NCCL's
 * parent pointers are only followed where they are this plugin's own. */
static int indexOf(const struct ctx* c, const void* p) {
  uintptr_t a = (uintptr_t)p, lo = (uintptr_t)c->ev, hi = lo + (uintptr_t)c->cap * sizeof(struct event);
  if (!p || a < lo || a >= hi || (a - lo) % sizeof(struct event)) return -1;
  return (int)((a - lo) / sizeof(struct event));
}

static int kindOf(uint64_t type) {
  switch (type) {
    case evGroup: return kGroup;
    case evColl: return kColl;
    case evP2p: return kP2p;
    case evProxyOp: return kProxyOp;
    case evProxyStep: return kStep;
    case evKernelCh: return kKernel;
  }
  return 0;
}

static int startCommon(void* context, void** handle, const struct desc* d, int v4) {
  long long t = now();
  if (handle) *handle = NULL;
  struct ctx* c = context;
  if (!c || !handle || !d) return resOK;
  uint64_t type = v4 ? d->type.v4 : d->type.v5;
  int kind = kindOf(type);
  if (!kind || !(c->mask & (int)type)) return resOK;
  long long i = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed);
  if (i >= c->cap) {
    atomic_fetch_add_explicit(&c->drops, 1, memory_order_relaxed);
    return resOK;
  }
  struct event* e = &c->ev[i];
  e->kind = (uint8_t)kind;
  e->start = t;
  e->rank = d->rank;
  e->parent = -1;
  e->peer = -1;
  switch (kind) {
    case kColl:
      e->parent = indexOf(c, v4 ? d->parent : d->u.coll.group);
      e->seq = d->u.coll.seq;
      e->count = d->u.coll.count;
      e->nChannels = d->u.coll.nChannels;
      copyStr(e->func, sizeof e->func, d->u.coll.func);
      copyStr(e->dtype, sizeof e->dtype, d->u.coll.dtype);
      copyStr(e->algo, sizeof e->algo, d->u.coll.algo);
      copyStr(e->proto, sizeof e->proto, d->u.coll.proto);
      break;
    case kP2p:
      e->parent = indexOf(c, v4 ? d->parent : d->u.p2p.group);
      e->count = d->u.p2p.count;
      e->peer = d->u.p2p.peer;
      e->nChannels = d->u.p2p.nChannels;
      copyStr(e->func, sizeof e->func, d->u.p2p.func);
      copyStr(e->dtype, sizeof e->dtype, d->u.p2p.dtype);
      break;
    case kProxyOp:
      /* Under PXN the operation may come from another process, whose
       * pointers mean nothing here. */
      if (d->u.op.pid == c->pid) e->parent = indexOf(c, d->parent);
      e->channel = d->u.op.channel;
      e->peer = d->u.op.peer;
      e->nSteps = d->u.op.nSteps;
      e->chunkSize = d->u.op.chunkSize;
      e->isSend = d->u.op.isSend != 0;
      break;
    case kStep:
      e->parent = indexOf(c, d->parent);
      e->step = d->u.step;
      break;
    case kKernel:
      e->parent = indexOf(c, d->parent);
      e->channel = d->u.kch.channel;
      e->gpuStart = d->u.kch.gpuStart;
      break;
  }
  atomic_store_explicit(&e->ready, 1, memory_order_release);
  *handle = e;
  return resOK;
}

static int startV4(void* context, void** handle, void* d) { return startCommon(context, handle, d, 1); }
static int startV5(void* context, void** handle, void* d) { return startCommon(context, handle, d, 0); }

static int stopEvent(void* handle) {
  struct event* e = handle;
  if (e) atomic_store_explicit(&e->stop, now(), memory_order_release);
  return resOK;
}

static int recordState(void* handle, int state, void* args) {
  struct event* e = handle;
  const union stateArgs* a = args;
  if (!e) return resOK;
  if (e->kind == kKernel && state == stKernelChStop) {
    if (a) e->gpuStop = a->gpuStop;
  } else if (e->kind == kStep) {
    if (a) e->transSize = a->transSize;
    int n = atomic_load_explicit(&e->nstates, memory_order_relaxed);
    if (n < MAX_STATES) {
      e->state[n] = (uint8_t)state;
      e->stateAt[n] = now();
      atomic_store_explicit(&e->nstates, n + 1, memory_order_release);
    }
  }
  return resOK;
}

/* ---------- finalize: lay the events out on tracks, write them ---------- */

/* An item is one event of the file (a wait is an item of its step). */
struct item {
  long long start, end;
  int family;  /* 0: the rank's operations; 1+c: kernel channel c; 1000+c: proxy of channel c */
  int depth;   /* nesting depth in its family: group 0, op 1; proxy 0, step 1, wait 2 */
  int parent;  /* the parent's item, or -1 */
  int ev;      /* the event */
  int wait;    /* for a wait: its state's index in the step; else -1 */
  int tid;     /* assigned; -1: no lane left */
};

#define FAM_RANK 0
#define FAM_KERNEL 1
#define FAM_PROXY 1000
#define LANES 100
#define MAX_DEPTH 8

static int cmpItems(const void* a, const void* b) {
  const struct item *x = a, *y = b;
  if (x->family != y->family) return x->family < y->family ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->end != y->end) return x->end > y->end ? -1 : 1;
  if (x->depth != y->depth) return x->depth < y->depth ? -1 : 1;
  return x->ev < y->ev ? -1 : (x->ev > y->ev);
}

struct lane {
  int depth;
  int stack[MAX_DEPTH]; /* item indices */
};

static int tidOf(int family, int lane) {
  if (family == FAM_RANK) return 1000 + lane;
  if (family >= FAM_PROXY) return 10000 + 100 * (family - FAM_PROXY) + lane;
  int ch = family - FAM_KERNEL;
  return lane == 0 ? ch : 100000 + 100 * ch + lane;
}

/* pack gives each item of one family (items[lo:hi], sorted) a lane: its
 * parent's, where the parent is that lane's innermost open event and holds
 * it, else the first lane with nothing open; items[].tid. Returns the
 * number of items left without one. */
static long long pack(struct item* it, int lo, int hi, int* itemLane) {
  struct lane lanes[LANES];
  int nl = 0;
  long long lost = 0;
  for (int k = lo; k < hi; k++) {
    struct item* x = &it[k];
    int placed = -1;
    for (int pass = 0; pass < 2 && placed < 0; pass++) {
      for (int l = 0; l < nl && placed < 0; l++) {
        struct lane* L = &lanes[l];
        while (L->depth > 0 && it[L->stack[L->depth - 1]].end <= x->start) L->depth--;
        if (pass == 0) {
          /* Inside the parent, on its lane. */
          if (x->parent >= 0 && itemLane[x->parent] == l && L->depth > 0 && L->depth < MAX_DEPTH &&
              L->stack[L->depth - 1] == x->parent && x->end <= it[x->parent].end && x->start >= it[x->parent].start)
            placed = l;
        } else if (L->depth == 0) {
          placed = l;
        }
      }
    }
    if (placed < 0 && nl < LANES) {
      placed = nl++;
      lanes[placed].depth = 0;
    }
    if (placed < 0) {
      x->tid = -1;
      itemLane[k] = -1;
      lost++;
      continue;
    }
    lanes[placed].stack[lanes[placed].depth++] = k;
    itemLane[k] = placed;
    x->tid = tidOf(x->family, placed);
  }
  return lost;
}

/* A small growing text buffer for the JSON. */
struct out {
  char* b;
  size_t n, cap;
  int oom;
};

static void put(struct out* o, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out* o, const char* fmt, ...) {
  if (o->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(o->b + o->n, o->cap - o->n, fmt, ap);
    va_end(ap);
    if (w < 0) {
      o->oom = 1;
      return;
    }
    if ((size_t)w < o->cap - o->n) {
      o->n += (size_t)w;
      return;
    }
    size_t nc = o->cap * 2 + (size_t)w + 4096;
    char* nb = realloc(o->b, nc);
    if (!nb) {
      o->oom = 1;
      return;
    }
    o->b = nb;
    o->cap = nc;
  }
}

/* putStr writes s as a JSON string. */
static void putStr(struct out* o, const char* s) {
  put(o, "\"");
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      put(o, "\\%c", ch);
    else if (ch < 0x20)
      put(o, "\\u%04x", ch);
    else
      put(o, "%c", ch);
  }
  put(o, "\"");
}

/*
 * Timestamps are written on gccl's grid (lib/tef.Micros): multiples of
 * 1/1024 us, exact binary fractions, so that a viewer adding ts and dur in
 * floating point lands exactly on the next event's ts where they touch.
 * gridTicks is ns * 1024/1000 rounded to the nearest; putTicks writes
 * ticks/1024 exactly (ten decimals: 1/1024 = 0.0009765625).
 */
static long long gridTicks(long long ns) {
  long long q = ns / 125, r = ns % 125;
  return q * 128 + (r < 0 ? (r * 128 - 62) / 125 : (r * 128 + 62) / 125);
}

static void putTicks(struct out* o, long long t) {
  const char* sign = t < 0 ? "-" : "";
  unsigned long long a = t < 0 ? (unsigned long long)(-t) : (unsigned long long)t;
  put(o, "%s%llu", sign, a >> 10);
  if (a & 1023) {
    char frac[16];
    int n = snprintf(frac, sizeof frac, "%010llu", (a & 1023) * 9765625ULL);
    while (n > 0 && frac[n - 1] == '0') frac[--n] = 0;
    put(o, ".%s", frac);
  }
}

static int typeSize(const char* dtype) {
  if (strstr(dtype, "8")) return 1;
  if (strstr(dtype, "16")) return 2;
  if (strstr(dtype, "32")) return 4;
  if (strstr(dtype, "64")) return 8;
  return 0;
}

/* niceName writes NCCL's RING, TREE, SIMPLE as gccl's Ring, Tree, Simple. */
static void putName(struct out* o, const char* s) {
  if (!strcmp(s, "RING")) s = "Ring";
  else if (!strcmp(s, "TREE")) s = "Tree";
  else if (!strcmp(s, "SIMPLE")) s = "Simple";
  putStr(o, s);
}

static const char* stateName(int s) {
  switch (s) {
    case stSendGPUWait: return "SendGPUWait";
    case stSendPeerWait: return "SendPeerWait";
    case stSendWait: return "SendWait";
    case stRecvWait: return "RecvWait";
    case stRecvFlushWait: return "RecvFlushWait";
    case stRecvGPUWait: return "RecvGPUWait";
  }
  return "Wait";
}

/* stateOn says what a step's state waits on, in gccl's words. */
static const char* stateOn(int s) {
  switch (s) {
    case stSendGPUWait: return "tail";      /* the GPU has not posted the data */
    case stSendPeerWait: return "head";     /* the peer has not freed a slot */
    case stRecvGPUWait: return "head";      /* the GPU has not taken the data */
  }
  return "other";                            /* the network, or a flush */
}

static void putEvent(struct out* o, const struct ctx* c, const struct item* x, int kernelGPU) {
  const struct event* e = &c->ev[x->ev];
  const struct event* p = e->parent >= 0 ? &c->ev[e->parent] : NULL;
  const char* name = "";
  const char* cat = "";
  switch (e->kind) {
    case kGroup: name = "Group", cat = "group"; break;
    case kColl:
    case kP2p: name = e->func[0] ? e->func : "op", cat = "op"; break;
    case kKernel: name = p && p->func[0] ? p->func : "kernel", cat = "kernel"; break;
    case kProxyOp: name = e->isSend ? "proxy send" : "proxy recv", cat = "proxy"; break;
    case kStep:
      if (x->wait >= 0) name = stateName(e->state[x->wait]), cat = "wait";
      else name = p && p->isSend ? "send" : "recv", cat = "step";
      break;
  }
  put(o, ",\n{\"name\":");
  putStr(o, name);
  put(o, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", cat);
  long long t0 = gridTicks(x->start - c->base), t1 = gridTicks(x->end - c->base);
  putTicks(o, t0);
  put(o, ",\"dur\":");
  putTicks(o, t1 - t0);
  put(o, ",\"pid\":%d,\"tid\":%d,\"args\":{", c->rank, x->tid);
  switch (e->kind) {
    case kGroup: put(o, "\"nccl\":\"Group\""); break;
    case kColl: {
      int ts = typeSize(e->dtype);
      put(o, "\"nccl\":\"Coll\",\"seq\":%llu,\"count\":%zu", (unsigned long long)e->seq, e->count);
      if (ts) put(o, ",\"bytes\":%zu", e->count * (size_t)ts);
      put(o, ",\"dtype\":");
      putStr(o, e->dtype);
      put(o, ",\"algo\":");
      putName(o, e->algo);
      put(o, ",\"proto\":");
      putName(o, e->proto);
      put(o, ",\"nchannels\":%d", e->nChannels);
      break;
    }
    case kP2p: {
      int ts = typeSize(e->dtype);
      put(o, "\"nccl\":\"P2p\",\"peer\":%d,\"count\":%zu", e->peer, e->count);
      if (ts) put(o, ",\"bytes\":%zu", e->count * (size_t)ts);
      put(o, ",\"dtype\":");
      putStr(o, e->dtype);
      put(o, ",\"nchannels\":%d", e->nChannels);
      break;
    }
    case kKernel:
      put(o, "\"nccl\":\"KernelCh\",\"channel\":%d,\"clock\":\"%s\"", e->channel, kernelGPU ? "gpu" : "cpu");
      if (p && p->kind == kColl) put(o, ",\"seq\":%llu", (unsigned long long)p->seq);
      break;
    case kProxyOp:
      put(o, "\"nccl\":\"ProxyOp\",\"peer\":%d,\"channel\":%d,\"nsteps\":%d,\"chunk\":%d", e->peer, e->channel, e->nSteps, e->chunkSize);
      if (p && p->kind == kColl) put(o, ",\"seq\":%llu", (unsigned long long)p->seq);
      if (e->rank != c->rank) put(o, ",\"origin_rank\":%d", e->rank);
      break;
    case kStep:
      if (x->wait >= 0) {
        put(o, "\"nccl\":\"ProxyStep\",\"peer\":%d,\"step\":%d,\"on\":\"%s\"", p->peer, e->step, stateOn(e->state[x->wait]));
      } else {
        put(o, "\"nccl\":\"ProxyStep\",\"peer\":%d,\"channel\":%d,\"step\":%d,\"bytes\":%zu", p->peer, p->channel, e->step, e->transSize);
      }
      break;
  }
  put(o, "}}");
}

static void putTrackName(struct out* o, int rank, int tid) {
  char name[64];
  if (tid < 1000) snprintf(name, sizeof name, "channel %d", tid);
  else if (tid < 1100) snprintf(name, sizeof name, tid == 1000 ? "operations" : "operations %d", tid - 1000);
  else if (tid < 100000) snprintf(name, sizeof name, "channel %d proxy %d", (tid - 10000) / 100, tid % 100);
  else snprintf(name, sizeof name, "channel %d kernel %d", (tid - 100000) / 100, tid % 100);
  put(o, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}", rank, tid, name);
}

static int cmpInt(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return x < y ? -1 : x > y;
}

/* extend widens event i to hold [s, e]. */
static void extend(long long* s, long long* e, int i, long long cs, long long ce) {
  if (cs < s[i]) s[i] = cs;
  if (ce > e[i]) e[i] = ce;
}

/* build lays c's events out and writes the file's text into o; the counts
 * of what was left out go in the file's otherData. */
static void build(struct ctx* c, struct out* o) {
  long long n = atomic_load(&c->next);
  if (n > c->cap) n = c->cap;
  long long* s = calloc((size_t)n + 1, sizeof *s);
  long long* e = calloc((size_t)n + 1, sizeof *e);
  char* ok = calloc((size_t)n + 1, 1);
  long long unfinished = 0, orphans = 0, lost = 0;
  int kernelGPU = 1, kernels = 0;
  long long off = 0;
  if (!s || !e || !ok) {
    o->oom = 1;
    goto done;
  }
  /* What finished, and the kernels' clock. */
  for (long long i = 0; i < n; i++) {
    struct event* v = &c->ev[i];
    if (!atomic_load_explicit(&v->ready, memory_order_acquire)) continue;
    long long stop = atomic_load_explicit(&v->stop, memory_order_acquire);
    atomic_load_explicit(&v->nstates, memory_order_acquire);
    if (!stop) {
      unfinished++;
      continue;
    }
    ok[i] = 1;
    s[i] = v->start;
    e[i] = stop < v->start ? v->start : stop;
    if (v->kind == kStep && (v->parent < 0 || c->ev[v->parent].kind != kProxyOp)) {
      ok[i] = 0;
      orphans++;
    }
    if (v->kind == kKernel) {
      if (!v->gpuStart || v->gpuStop < v->gpuStart) {
        kernelGPU = 0;
      } else {
        long long d1 = v->start - (long long)v->gpuStart, d2 = stop - (long long)v->gpuStop;
        long long d = d1 < d2 ? d1 : d2;
        if (!kernels || d < off) off = d;
      }
      kernels++;
    }
  }
  for (long long i = 0; i < n; i++) {
    struct event* v = &c->ev[i];
    if (ok[i] && v->kind == kKernel && kernelGPU) {
      s[i] = (long long)v->gpuStart + off;
      e[i] = (long long)v->gpuStop + off;
    }
  }
  /* Parents hold their children: steps in proxy operations, proxy
   * operations and kernels in operations, operations in groups. */
  for (int pass = 0; pass < 3; pass++) {
    for (long long i = 0; i < n; i++) {
      struct event* v = &c->ev[i];
      int p = v->parent;
      if (!ok[i] || p < 0 || !ok[p]) continue;
      int k = v->kind, pk = c->ev[p].kind;
      if ((pass == 0 && k == kStep && pk == kProxyOp) ||
          (pass == 1 && (k == kProxyOp || k == kKernel) && (pk == kColl || pk == kP2p)) ||
          (pass == 2 && (k == kColl || k == kP2p) && pk == kGroup))
        extend(s, e, p, s[i], e[i]);
    }
  }
  /* Items: the events, and the waits of the steps. */
  long long ni = 0;
  for (long long i = 0; i < n; i++) {
    if (ok[i]) ni += 1 + (c->ev[i].kind == kStep ? atomic_load(&c->ev[i].nstates) : 0);
  }
  struct item* it = calloc((size_t)ni + 1, sizeof *it);
  int* evItem = malloc(((size_t)n + 1) * sizeof *evItem);
  int* itemLane = malloc(((size_t)ni + 1) * sizeof *itemLane);
  int* tids = malloc(((size_t)ni + 1) * sizeof *tids);
  if (!it || !evItem || !itemLane || !tids) {
    o->oom = 1;
    goto freeItems;
  }
  long long k = 0;
  for (long long i = 0; i < n; i++) {
    evItem[i] = -1;
    if (!ok[i]) continue;
    struct event* v = &c->ev[i];
    int fam = FAM_RANK, depth = 0;
    switch (v->kind) {
      case kColl:
      case kP2p: depth = 1; break;
      case kKernel: fam = FAM_KERNEL + v->channel; break;
      case kProxyOp: fam = FAM_PROXY + v->channel; break;
      case kStep: fam = FAM_PROXY + c->ev[v->parent].channel, depth = 1; break;
    }
    evItem[i] = (int)k;
    it[k++] = (struct item){s[i], e[i], fam, depth, -1, (int)i, -1, -1};
    if (v->kind != kStep) continue;
    int ns = atomic_load(&v->nstates);
    for (int j = 0; j < ns; j++) {
      long long ws = v->stateAt[j], we = j + 1 < ns ? v->stateAt[j + 1] : e[i];
      if (ws < s[i]) ws = s[i];
      if (we > e[i]) we = e[i];
      if (we < ws) we = ws;
      it[k++] = (struct item){ws, we, fam, 2, evItem[i], (int)i, j, -1};
    }
  }
  /* Parents as items (a wait's is set above). */
  for (long long j = 0; j < k; j++) {
    if (it[j].wait >= 0) continue;
    int p = c->ev[it[j].ev].parent;
    if (p >= 0 && evItem[p] >= 0 && it[evItem[p]].family == it[j].family) it[j].parent = evItem[p];
  }
  /* Sort, keeping parents by their new places. */
  for (long long j = 0; j < k; j++) itemLane[j] = (int)j; /* old index, for now */
  {
    /* Carry each item's old index in tid while sorting. */
    for (long long j = 0; j < k; j++) it[j].tid = (int)j;
    qsort(it, (size_t)k, sizeof *it, cmpItems);
    int* where = itemLane; /* old -> new */
    for (long long j = 0; j < k; j++) where[it[j].tid] = (int)j;
    for (long long j = 0; j < k; j++) {
      if (it[j].parent >= 0) it[j].parent = where[it[j].parent];
      it[j].tid = -1;
    }
  }
  for (long long j = 0; j < k;) {
    long long h = j;
    while (h < k && it[h].family == it[j].family) h++;
    lost += pack(it, (int)j, (int)h, itemLane);
    j = h;
  }
  /* The file. */
  put(o, "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"rank %d\"}}", c->rank, c->rank);
  long long nt = 0;
  for (long long j = 0; j < k; j++)
    if (it[j].tid >= 0) tids[nt++] = it[j].tid;
  qsort(tids, (size_t)nt, sizeof *tids, cmpInt);
  for (long long j = 0; j < nt; j++)
    if (j == 0 || tids[j] != tids[j - 1]) putTrackName(o, c->rank, tids[j]);
  for (long long j = 0; j < k; j++)
    if (it[j].tid >= 0) putEvent(o, c, &it[j], kernelGPU);
freeItems:
  free(it);
  free(evItem);
  free(itemLane);
  free(tids);
done:
  if (!o->oom) {
    put(o, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":\"gccl NCCL profiler plugin\",\"interface\":\"v%d\",", c->version);
    put(o, "\"clock\":\"CLOCK_REALTIME\",\"ts_base_ns\":\"%lld\",\"rank\":%d,\"nranks\":%d,\"nnodes\":%d,", c->base, c->rank, c->nranks, c->nnodes);
    put(o, "\"comm_id\":\"0x%016llx\",\"comm_name\":", (unsigned long long)c->commId);
    putStr(o, c->name);
    put(o, ",\"host\":");
    putStr(o, c->host);
    put(o, ",\"process\":%d,\"communicator\":%d,\"events\":%lld,\"capacity\":%lld,\"dropped\":%lld,", c->pid, c->ordinal, n, c->cap, (long long)atomic_load(&c->drops));
    put(o, "\"unfinished\":%lld,\"orphans\":%lld,\"no_lane\":%lld,\"kernel_clock\":\"%s\",\"kernel_offset_ns\":\"%lld\"}}\n",
        unfinished, orphans, lost, kernels && kernelGPU ? "gpu globaltimer + offset" : "cpu (proxy observed)", kernelGPU ? off : 0);
  }
  free(s);
  free(e);
  free(ok);
}

static int finalize(void* context) {
  struct ctx* c = context;
  if (!c) return resOK;
  struct out o = {0};
  build(c, &o);
  int rc = resOK;
  if (o.oom) {
    say(c, "out of memory writing the trace");
    rc = resSystem;
  } else {
    size_t w = 0;
    while (w < o.n) {
      ssize_t r = write(c->fd, o.b + w, o.n - w);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      w += (size_t)r;
    }
    if (w < o.n) {
      char msg[5120];
      snprintf(msg, sizeof msg, "writing the trace to %s failed after %zu of %zu bytes (%s)", c->path, w, o.n, strerror(errno));
      say(c, msg);
      rc = resSystem;
    }
  }
  if (c->fd >= 0 && close(c->fd) != 0 && rc == resOK) {
    char msg[5120];
    snprintf(msg, sizeof msg, "closing the trace %s failed (%s)", c->path, strerror(errno));
    say(c, msg);
    rc = resSystem;
  }
  long long dropped = atomic_load(&c->drops);
  if (dropped)
    fprintf(stderr, "gccl profiler (NCCL rank %d): %lld events dropped: the buffer holds %lld (GCCL_PROFILER_EVENTS)\n", c->rank, dropped, c->cap);
  free(o.b);
  free(c->ev);
  free(c);
  return rc;
}

/* ---------- the interface tables NCCL looks up ---------- */

struct tableV5 { /* v5 and v6 */
  const char* name;
  int (*init)(void** context, uint64_t commId, int* mask, const char* commName, int nNodes, int nRanks, int rank, logger_t log);
  int (*startEvent)(void* context, void** handle, void* descr);
  int (*stopEvent)(void* handle);
  int (*recordEventState)(void* handle, int state, void* args);
  int (*finalize)(void* context);
};

struct tableV4 {
  const char* name;
  int (*init)(void** context, int* mask, const char* commName, uint64_t commHash, int nNodes, int nRanks, int rank, logger_t log);
  int (*startEvent)(void* context, void** handle, void* descr);
  int (*stopEvent)(void* handle);
  int (*recordEventState)(void* handle, int state, void* args);
  int (*finalize)(void* context);
};

EXPORT struct tableV5 ncclProfiler_v6 = {"gccl", initV6, startV5, stopEvent, recordState, finalize};
EXPORT struct tableV5 ncclProfiler_v5 = {"gccl", initV5, startV5, stopEvent, recordState, finalize};
EXPORT struct tableV4 ncclProfiler_v4 = {"gccl", initV4, startV4, stopEvent, recordState, finalize};
