// A stand-in for libcudart and libnccl, for tests and benchmarks of the
// NCCL backend's host path on machines without a GPU. One shared object
// exports both libraries' symbols (GCCL_CUDART_LIBRARY and
// GCCL_NCCL_LIBRARY may both name it). Nothing runs on a device: "device"
// memory is host memory, copies are memcpy, collectives move no data.
//
// What it keeps, for tests to read through fake_count and friends:
//   - how many times each entry point was called since fake_reset;
//   - whether every call since fake_reset came from one OS thread (the
//     thread of the first one), as NCCL's groups and CUDA's current
//     device need;
//   - each thread's current device and group depth, with NCCL's rules:
//     a group end with no group open fails, a launch happens at the
//     outermost group end (or at an ungrouped call);
//   - the arguments of the last call of each arity (fake_args), so a
//     caller can check that every argument arrived.
// Optional costs (fake_set_cost, fake_set_sync) make an enqueue, a launch
// or a stream sync spin, to stand for NCCL's own host work and for work
// still running on a device.
//
// fake_bench_loop is nccl-tests' timed loop (startColl) written in C
// against these symbols: the host cost of the same calls made from C.

#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum {
  C_SET_DEVICE, C_GROUP_START, C_GROUP_END, C_LAUNCH, C_ALL_REDUCE, C_BROADCAST, C_REDUCE,
  C_ALL_GATHER, C_REDUCE_SCATTER, C_SEND, C_RECV, C_STREAM_SYNC, C_MEMCPY, C_EVENT_RECORD,
  C_GRAPH_LAUNCH, C_MALLOC, C_MEM_ALLOC, C_COMM_COUNT, C_USER_RANK, C_FOREIGN, C_NCOUNTS
};

static _Atomic long counts[C_NCOUNTS];
static _Atomic long owner; // the OS thread of the first call since fake_reset; 0: none yet
static _Atomic long opNs, launchNs, syncNs;

// One slot per arity (0-8 arguments after the function): the last call's.
static uint64_t lastArgs[9][8];

static __thread int curDev;
static __thread int depth;
static __thread long myTid; // gettid, once per thread: a system call per note would swamp what is measured

typedef struct { int rank, nranks, dev, pending; } comm_t;
typedef struct { int dev, capturing; } stream_t;
typedef struct { long ns; } event_t;
typedef struct { int instantiated; } graph_t;
typedef struct { char internal[128]; } uid_t128;
typedef struct {
  size_t size;
  unsigned magic, version;
  int blocking, cgaClusterSize, minCTAs, maxCTAs;
} config_t;

static _Atomic int lastMinCTAs;

#define MAX_PENDING 64
static __thread comm_t* pending[MAX_PENDING];
static __thread int nPending;

static long nowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void spin(long ns) {
  if (ns <= 0) return;
  long end = nowNs() + ns;
  while (nowNs() < end) {
  }
}

static void note(int c) {
  atomic_fetch_add(&counts[c], 1);
  if (!myTid) myTid = syscall(SYS_gettid);
  long tid = myTid, want = 0;
  if (!atomic_compare_exchange_strong(&owner, &want, tid) && want != tid) atomic_fetch_add(&counts[C_FOREIGN], 1);
}

static void keep(int n, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                 uint64_t a7) {
  uint64_t a[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
  memcpy(lastArgs[n], a, sizeof a);
}

// enqueue is one collective or point-to-point call on comm: inside a group
// it waits for the outermost end, outside one it launches at once.
static int enqueue(int c, comm_t* comm) {
  note(c);
  if (!comm) return 4; // ncclInvalidArgument
  spin(atomic_load(&opNs));
  if (depth == 0) {
    note(C_LAUNCH);
    spin(atomic_load(&launchNs));
    return 0;
  }
  if (!comm->pending) {
    if (nPending == MAX_PENDING) return 3; // ncclInternalError
    comm->pending = 1;
    pending[nPending++] = comm;
  }
  return 0;
}

// --- the fake's own controls ------------------------------------------

EXPORT void fake_reset(void) {
  for (int i = 0; i < C_NCOUNTS; i++) atomic_store(&counts[i], 0);
  atomic_store(&owner, 0);
}

EXPORT long fake_count(int c) { return (c >= 0 && c < C_NCOUNTS) ? atomic_load(&counts[c]) : -1; }

EXPORT void fake_set_cost(long op, long launch) {
  atomic_store(&opNs, op);
  atomic_store(&launchNs, launch);
}

// fake_set_sync makes every cudaStreamSynchronize spin ns: a wait for
// work still running.
EXPORT void fake_set_sync(long ns) { atomic_store(&syncNs, ns); }

EXPORT uint64_t fake_args(int arity, int i) { return (arity >= 0 && arity <= 8 && i >= 0 && i < 8) ? lastArgs[arity][i] : 0; }

EXPORT int fake_last_min_ctas(void) { return atomic_load(&lastMinCTAs); }

// Functions of 0 to 8 arguments that keep them and return their sum: the
// calling convention under test, every register and stack slot.
EXPORT uint64_t fake_args0(void) { keep(0, 0, 0, 0, 0, 0, 0, 0, 0); return 7; }
EXPORT uint64_t fake_args1(uint64_t a) { keep(1, a, 0, 0, 0, 0, 0, 0, 0); return a; }
EXPORT uint64_t fake_args2(uint64_t a, uint64_t b) { keep(2, a, b, 0, 0, 0, 0, 0, 0); return a + b; }
EXPORT uint64_t fake_args3(uint64_t a, uint64_t b, uint64_t c) { keep(3, a, b, c, 0, 0, 0, 0, 0); return a + b + c; }
EXPORT uint64_t fake_args4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  keep(4, a, b, c, d, 0, 0, 0, 0);
  return a + b + c + d;
}
EXPORT uint64_t fake_args5(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e) {
  keep(5, a, b, c, d, e, 0, 0, 0);
  return a + b + c + d + e;
}
EXPORT uint64_t fake_args6(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f) {
  keep(6, a, b, c, d, e, f, 0, 0);
  return a + b + c + d + e + f;
}
EXPORT uint64_t fake_args7(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f, uint64_t g) {
  keep(7, a, b, c, d, e, f, g, 0);
  return a + b + c + d + e + f + g;
}
EXPORT uint64_t fake_args8(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f, uint64_t g,
                           uint64_t h) {
  keep(8, a, b, c, d, e, f, g, h);
  return a + b + c + d + e + f + g + h;
}
// int arguments: the callee reads only the low 32 bits.
EXPORT int fake_int_args(int a, int b, int c) { return a * 10000 + b * 100 + c; }

// --- libcudart ----------------------------------------------------------

EXPORT int cudaRuntimeGetVersion(int* v) { *v = 13000; return 0; }
EXPORT int cudaDriverGetVersion(int* v) { *v = 13000; return 0; }
EXPORT const char* cudaGetErrorString(int e) { (void)e; return "fake CUDA error"; }

EXPORT int cudaGetDeviceCount(int* n) {
  const char* s = getenv("FAKE_CUDA_DEVICES");
  *n = s ? atoi(s) : 8;
  return 0;
}

EXPORT int cudaSetDevice(int d) {
  note(C_SET_DEVICE);
  int n;
  cudaGetDeviceCount(&n);
  if (d < 0 || d >= n) return 101; // cudaErrorInvalidDevice
  curDev = d;
  return 0;
}

EXPORT int cudaDeviceGetPCIBusId(char* bus, int len, int d) {
  char s[32] = "0000:00:00.0";
  s[5] = "0123456789abcdef"[(d >> 4) & 15];
  s[6] = "0123456789abcdef"[d & 15];
  strncpy(bus, s, len);
  return 0;
}

static int props(void* p, int d) {
  (void)d;
  strcpy((char*)p, "Fake GPU");
  return 0;
}
EXPORT int cudaGetDeviceProperties_v2(void* p, int d) { return props(p, d); }
EXPORT int cudaGetDeviceProperties(void* p, int d) { return props(p, d); }

EXPORT int cudaMalloc(void** p, size_t n) {
  note(C_MALLOC);
  *p = calloc(1, n ? n : 1);
  return *p ? 0 : 2; // cudaErrorMemoryAllocation
}
EXPORT int cudaFree(void* p) { free(p); return 0; }

EXPORT int cudaStreamCreateWithFlags(void** s, unsigned flags) {
  (void)flags;
  stream_t* st = calloc(1, sizeof *st);
  st->dev = curDev;
  *s = st;
  return 0;
}
EXPORT int cudaStreamDestroy(void* s) { free(s); return 0; }
EXPORT int cudaStreamSynchronize(void* s) {
  (void)s;
  note(C_STREAM_SYNC);
  spin(atomic_load(&syncNs));
  return 0;
}

EXPORT int cudaMemcpyAsync(void* dst, const void* src, size_t n, int kind, void* s) {
  (void)kind; (void)s;
  note(C_MEMCPY);
  memcpy(dst, src, n);
  return 0;
}

EXPORT int cudaEventCreate(void** e) { *e = calloc(1, sizeof(event_t)); return 0; }
EXPORT int cudaEventDestroy(void* e) { free(e); return 0; }
EXPORT int cudaEventRecord(void* e, void* s) {
  (void)s;
  note(C_EVENT_RECORD);
  ((event_t*)e)->ns = nowNs();
  return 0;
}
EXPORT int cudaEventElapsedTime(float* ms, void* a, void* b) {
  *ms = (float)(((event_t*)b)->ns - ((event_t*)a)->ns) / 1e6f;
  return 0;
}

EXPORT int cudaStreamBeginCapture(void* s, int mode) {
  (void)mode;
  stream_t* st = s;
  if (!st || st->capturing) return 900; // cudaErrorStreamCaptureUnsupported
  st->capturing = 1;
  return 0;
}
EXPORT int cudaStreamEndCapture(void* s, void** g) {
  stream_t* st = s;
  if (!st || !st->capturing) return 901;
  graph_t* gr = calloc(1, sizeof *gr);
  st->capturing = 0;
  *g = gr;
  return 0;
}
EXPORT int cudaGraphInstantiateWithFlags(void** exec, void* g, unsigned long long flags) {
  (void)flags;
  (void)g;
  graph_t* e = calloc(1, sizeof *e);
  e->instantiated = 1;
  *exec = e;
  return 0;
}
EXPORT int cudaGraphLaunch(void* exec, void* s) { (void)exec; (void)s; note(C_GRAPH_LAUNCH); return 0; }
EXPORT int cudaGraphExecDestroy(void* e) { free(e); return 0; }
EXPORT int cudaGraphDestroy(void* g) { free(g); return 0; }

// --- libnccl ---------------------------------------------------------------

EXPORT int ncclGetVersion(int* v) { *v = 22803; return 0; }
EXPORT const char* ncclGetErrorString(int r) { (void)r; return "fake NCCL error"; }
EXPORT const char* ncclGetLastError(void* comm) { (void)comm; return ""; }
EXPORT int ncclGetUniqueId(uid_t128* id) { memset(id->internal, 0x42, sizeof id->internal); return 0; }

static int initRank(void** out, int nranks, int rank, const config_t* cfg) {
  if (nranks < 1 || rank < 0 || rank >= nranks) return 4;
  if (cfg) atomic_store(&lastMinCTAs, cfg->minCTAs);
  comm_t* c = calloc(1, sizeof *c);
  c->rank = rank;
  c->nranks = nranks;
  c->dev = curDev;
  *out = c;
  return 0;
}
EXPORT int ncclCommInitRankConfig(void** comm, int nranks, uid_t128 id, int rank, config_t* cfg) {
  if (id.internal[0] != 0x42 || id.internal[127] != 0x42) return 4; // the id arrived by value, whole
  return initRank(comm, nranks, rank, cfg);
}
EXPORT int ncclCommInitRankScalable(void** comm, int nranks, int rank, int nId, uid_t128* ids, config_t* cfg) {
  if (nId != 1 || ids[0].internal[0] != 0x42) return 4;
  return initRank(comm, nranks, rank, cfg);
}
EXPORT int ncclCommDestroy(void* c) { free(c); return 0; }
EXPORT int ncclCommAbort(void* c) { free(c); return 0; }
EXPORT int ncclCommCount(comm_t* c, int* n) { note(C_COMM_COUNT); *n = c->nranks; return 0; }
EXPORT int ncclCommUserRank(comm_t* c, int* r) { note(C_USER_RANK); *r = c->rank; return 0; }

static _Atomic int nextOp = 5; // ncclNumOps: user reductions come after the built-in ones
EXPORT int ncclRedOpCreatePreMulSum(int* op, void* scalar, int dt, int residence, void* comm) {
  (void)scalar; (void)dt; (void)residence; (void)comm;
  *op = atomic_fetch_add(&nextOp, 1);
  return 0;
}
EXPORT int ncclRedOpDestroy(int op, void* comm) { (void)op; (void)comm; return 0; }

EXPORT int ncclCommRegister(void* comm, void* buf, size_t n, void** h) {
  (void)comm; (void)n;
  *h = buf;
  return 0;
}
EXPORT int ncclCommDeregister(void* comm, void* h) { (void)comm; (void)h; return 0; }
EXPORT int ncclCommWindowRegister(void* comm, void* buf, size_t n, void** w, int flags) {
  (void)comm; (void)n; (void)flags;
  *w = buf;
  return 0;
}
EXPORT int ncclCommWindowDeregister(void* comm, void* w) { (void)comm; (void)w; return 0; }

EXPORT int ncclMemAlloc(void** p, size_t n) {
  note(C_MEM_ALLOC);
  *p = calloc(1, n ? n : 1);
  return *p ? 0 : 1; // ncclUnhandledCudaError
}
EXPORT int ncclMemFree(void* p) { free(p); return 0; }

EXPORT int ncclGroupStart(void) {
  note(C_GROUP_START);
  depth++;
  return 0;
}

EXPORT int ncclGroupEnd(void) {
  note(C_GROUP_END);
  if (depth == 0) return 5; // ncclInvalidUsage: not in a group
  if (--depth > 0) return 0;
  long cost = atomic_load(&launchNs);
  for (int i = 0; i < nPending; i++) {
    pending[i]->pending = 0;
    note(C_LAUNCH);
    spin(cost);
  }
  nPending = 0;
  return 0;
}

// The count arguments are size_t, the rest int or pointers, as in nccl.h.
EXPORT int ncclAllReduce(const void* s, void* r, size_t n, int dt, int op, comm_t* c, void* st) {
  (void)s; (void)r; (void)n; (void)dt; (void)op; (void)st;
  return enqueue(C_ALL_REDUCE, c);
}
EXPORT int ncclBroadcast(const void* s, void* r, size_t n, int dt, int root, comm_t* c, void* st) {
  (void)s; (void)r; (void)n; (void)dt; (void)root; (void)st;
  return enqueue(C_BROADCAST, c);
}
EXPORT int ncclReduce(const void* s, void* r, size_t n, int dt, int op, int root, comm_t* c, void* st) {
  (void)s; (void)r; (void)n; (void)dt; (void)op; (void)root; (void)st;
  return enqueue(C_REDUCE, c);
}
EXPORT int ncclAllGather(const void* s, void* r, size_t n, int dt, comm_t* c, void* st) {
  (void)s; (void)r; (void)n; (void)dt; (void)st;
  return enqueue(C_ALL_GATHER, c);
}
EXPORT int ncclReduceScatter(const void* s, void* r, size_t n, int dt, int op, comm_t* c, void* st) {
  (void)s; (void)r; (void)n; (void)dt; (void)op; (void)st;
  return enqueue(C_REDUCE_SCATTER, c);
}
EXPORT int ncclSend(const void* b, size_t n, int dt, int peer, comm_t* c, void* st) {
  (void)b; (void)n; (void)dt; (void)st;
  if (c && (peer < 0 || peer >= c->nranks)) return 4;
  return enqueue(C_SEND, c);
}
EXPORT int ncclRecv(void* b, size_t n, int dt, int peer, comm_t* c, void* st) {
  (void)b; (void)n; (void)dt; (void)st;
  if (c && (peer < 0 || peer >= c->nranks)) return 4;
  return enqueue(C_RECV, c);
}

// fake_bench_loop runs iters iterations of nccl-tests' startColl over
// ngpus ranks driven by this thread (one group around them when there are
// several), coll 0 an allreduce of count floats per rank, 1 a sendrecv as
// sendrecv.cu makes it (ncclCommCount, ncclCommUserRank and its own group
// around a send to rank+1 and a receive from rank-1), then syncs every
// stream once; it returns the nanoseconds the loop took.
EXPORT long fake_bench_loop(void** comms, void** streams, void** send, void** recv, int ngpus, long iters, int coll,
                            size_t count) {
  long t0 = nowNs();
  for (long it = 0; it < iters; it++) {
    if (ngpus > 1) ncclGroupStart();
    for (int i = 0; i < ngpus; i++) {
      comm_t* c = comms[i];
      if (coll == 0) {
        ncclAllReduce(send[i], recv[i], count, 7, 0, c, streams[i]);
        continue;
      }
      int n, r;
      ncclCommCount(c, &n);
      ncclCommUserRank(c, &r);
      ncclGroupStart();
      ncclSend(send[i], count, 7, (r + 1) % n, c, streams[i]);
      ncclRecv(recv[i], count, 7, (r - 1 + n) % n, c, streams[i]);
      ncclGroupEnd();
    }
    if (ngpus > 1) ncclGroupEnd();
  }
  for (int i = 0; i < ngpus; i++) cudaStreamSynchronize(streams[i]);
  return nowNs() - t0;
}
