/*
 * A stand-in for NCCL's side of the profiler interface, for the plugin's
 * tests: it loads the plugin, takes the table of one interface version and
 * calls it as NCCL does for two ranks of a 4-rank communicator. Its
 * descriptor layouts are written here apart from the plugin's, as NCCL's
 * headers lay them out (v4: a one-byte type; v5 and v6: an eight-byte type
 * and the API events' members in the union).
 *
 *   harness PLUGIN.so 4|5|6 run|drops|declined
 *
 * It prints what a test checks ("init", "kernel" lines) and exits 1 where
 * the plugin does what NCCL would not survive.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

typedef void (*logfn_t)(int, unsigned long, const char*, int, const char*, ...);

struct coll5 {
  uint64_t seqNumber;
  const char* func;
  void const* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
  void* parentGroup;
};
struct p2p5 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
  void* parentGroup;
};
struct proxyOp {
  pid_t pid;
  uint8_t channelId;
  int peer;
  int nSteps;
  int chunkSize;
  int isSend;
};
struct kernelCh {
  uint8_t channelId;
  uint64_t pTimer;
};

struct descr5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct coll5 coll;
    struct p2p5 p2p;
    struct proxyOp proxyOp;
    struct {
      int step;
    } proxyStep;
    struct kernelCh kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
};

/* v4's members lack v5's parentGroup; the prefix is the same. */
struct descr4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct coll5 coll;
    struct p2p5 p2p;
    struct proxyOp proxyOp;
    struct {
      int step;
    } proxyStep;
    struct kernelCh kernelCh;
  };
};

union stateArgs {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    uint64_t pTimer;
  } kernelCh;
};

struct table5 {
  const char* name;
  int (*init)(void**, uint64_t, int*, const char*, int, int, int, logfn_t);
  int (*startEvent)(void*, void**, void*);
  int (*stopEvent)(void*);
  int (*recordEventState)(void*, int, void*);
  int (*finalize)(void*);
};
struct table4 {
  const char* name;
  int (*init)(void**, int*, const char*, uint64_t, int, int, int, logfn_t);
  int (*startEvent)(void*, void**, void*);
  int (*stopEvent)(void*);
  int (*recordEventState)(void*, int, void*);
  int (*finalize)(void*);
};

enum { GROUP = 1, COLL = 2, P2P = 4, PROXYOP = 8, PROXYSTEP = 16, PROXYCTRL = 32, KERNELCH = 64, GROUPAPI = 256 };
enum { SendGPUWait = 8, SendWait = 9, RecvWait = 10, RecvFlushWait = 11, RecvGPUWait = 12, SendPeerWait = 20, KernelChStop = 22 };

static int version;
static struct table5* t5;
static struct table4* t4;
static int mask; /* NCCL's global mask, written by init */

static void pause_us(int us) {
  struct timespec t = {0, us * 1000L};
  nanosleep(&t, NULL);
}

/* The GPU's clock: CLOCK_REALTIME 3 s behind, as a globaltimer may be. */
static uint64_t gpuNow(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec - 3000000000ULL;
}

static int init(void** ctx, int rank) {
  if (version == 4) return t4->init(ctx, &mask, "harness", 0xfeedULL, 1, 4, rank, NULL);
  return t5->init(ctx, 0xfeedULL, &mask, "harness", 1, 4, rank, NULL);
}

static int (*startFn(void))(void*, void**, void*) { return version == 4 ? t4->startEvent : t5->startEvent; }
static int stop(void* h) { return (version == 4 ? t4->stopEvent : t5->stopEvent)(h); }
static int record(void* h, int s, union stateArgs* a) { return (version == 4 ? t4->recordEventState : t5->recordEventState)(h, s, a); }
static int fin(void* ctx) { return (version == 4 ? t4->finalize : t5->finalize)(ctx); }

/* start passes d as NCCL would: as it is for v5 and v6 (zeroed, {0}), and
 * for v4 copied into v4's layout with stale bytes beside the one-byte type. */
static void* start(void* ctx, struct descr5* d) {
  void* h = (void*)0x1; /* the plugin must write the handle, NULL or its own */
  if (version == 4) {
    struct descr4 d4;
    memset(&d4, 0xab, sizeof d4);
    d4.type = (uint8_t)d->type;
    d4.parentObj = d->parentObj;
    d4.rank = d->rank;
    if (d->type == COLL) {
      d4.coll = d->coll;
      d4.parentObj = d->coll.parentGroup;
    } else if (d->type == P2P) {
      d4.p2p = d->p2p;
      d4.parentObj = d->p2p.parentGroup;
    } else if (d->type == PROXYOP) {
      d4.proxyOp = d->proxyOp;
    } else if (d->type == PROXYSTEP) {
      d4.proxyStep.step = d->proxyStep.step;
    } else if (d->type == KERNELCH) {
      d4.kernelCh = d->kernelCh;
    } else if (d->type > 255) {
      return NULL; /* NCCL's v4 shim passes no API events */
    }
    startFn()(ctx, &h, &d4);
  } else {
    startFn()(ctx, &h, d);
  }
  if (h == (void*)0x1) {
    fprintf(stderr, "harness: startEvent left the handle unwritten\n");
    exit(1);
  }
  return h;
}

static void* startColl(void* ctx, int rank, void* group, uint64_t seq) {
  struct descr5 d = {0};
  d.type = COLL;
  d.rank = rank;
  d.parentObj = NULL; /* the API event's, not traced */
  d.coll.seqNumber = seq;
  d.coll.func = "AllReduce";
  d.coll.count = 1024;
  d.coll.datatype = "ncclFloat32";
  d.coll.nChannels = 2;
  d.coll.nWarps = 16;
  d.coll.algo = "RING";
  d.coll.proto = "SIMPLE";
  d.coll.parentGroup = group;
  return start(ctx, &d);
}

static void* startOp(void* ctx, int rank, void* parent, int ch, int peer, int isSend, pid_t pid) {
  struct descr5 d = {0};
  d.type = PROXYOP;
  d.rank = rank;
  d.parentObj = parent;
  d.proxyOp.pid = pid;
  d.proxyOp.channelId = (uint8_t)ch;
  d.proxyOp.peer = peer;
  d.proxyOp.nSteps = 3;
  d.proxyOp.chunkSize = 4096;
  d.proxyOp.isSend = isSend;
  return start(ctx, &d);
}

static void* startStep(void* ctx, int rank, void* op, int step) {
  struct descr5 d = {0};
  d.type = PROXYSTEP;
  d.rank = rank;
  d.parentObj = op;
  d.proxyStep.step = step;
  return start(ctx, &d);
}

static void states(void* step, int isSend) {
  static const int send[] = {SendGPUWait, SendPeerWait, SendWait}, recv[] = {RecvWait, RecvFlushWait, RecvGPUWait};
  for (int i = 0; i < 3; i++) {
    union stateArgs a = {0};
    a.proxyStep.transSize = 4096;
    record(step, isSend ? send[i] : recv[i], &a);
    pause_us(30);
  }
}

/* One rank: a group of two allreduces (the second launched before the
 * first completes), the first with kernels on channels 0 and 1 and proxy
 * operations sending to the next rank and receiving from the previous one
 * on both, three pipelined steps each. */
static void runRank(int rank) {
  void* ctx = NULL;
  int rc = init(&ctx, rank);
  printf("init rank=%d rc=%d mask=0x%x\n", rank, rc, mask);
  if (rc) exit(1);
  struct descr5 d = {0};
  if (version != 4) {
    d.type = GROUPAPI; /* not asked for: no handle */
    if (start(ctx, &d)) {
      fprintf(stderr, "harness: a handle for an event outside the mask\n");
      exit(1);
    }
  }
  d.type = PROXYCTRL;
  if (start(ctx, &d)) {
    fprintf(stderr, "harness: a handle for a proxy control event\n");
    exit(1);
  }
  d.type = GROUP;
  void* g = start(ctx, &d);
  void* a = startColl(ctx, rank, g, 7);
  pause_us(20);
  stop(a);
  void* b = startColl(ctx, rank, g, 8);
  pause_us(20);
  stop(b);
  stop(g);
  void* k[2];
  uint64_t ks[2], ke[2];
  for (int ch = 0; ch < 2; ch++) {
    struct descr5 kd = {0};
    kd.type = KERNELCH;
    kd.rank = rank;
    kd.parentObj = a;
    kd.kernelCh.channelId = (uint8_t)ch;
    kd.kernelCh.pTimer = ks[ch] = gpuNow();
    pause_us(40); /* the proxy sees the start later */
    k[ch] = start(ctx, &kd);
  }
  void* ops[2][2];
  int peers[2] = {(rank + 1) % 4, (rank + 3) % 4};
  for (int ch = 0; ch < 2; ch++)
    for (int s = 0; s < 2; s++) ops[ch][s] = startOp(ctx, rank, a, ch, peers[s], s == 0, getpid());
  /* PXN: an operation from another process; its parent is not followed. */
  void* pxn = startOp(ctx, rank, a, 1, 2, 1, getpid() + 1);
  for (int ch = 0; ch < 2; ch++) {
    for (int s = 0; s < 2; s++) {
      void* op = ops[ch][s];
      void* s0 = startStep(ctx, rank, op, 0);
      void* s1 = startStep(ctx, rank, op, 1);
      states(s0, s == 0);
      states(s1, s == 0);
      stop(s0);
      void* s2 = startStep(ctx, rank, op, 2);
      states(s2, s == 0);
      stop(s1);
      stop(s2);
      pause_us(20);
      stop(op);
    }
  }
  stop(pxn);
  for (int ch = 0; ch < 2; ch++) {
    union stateArgs sa = {0};
    sa.kernelCh.pTimer = ke[ch] = gpuNow();
    pause_us(40);
    record(k[ch], KernelChStop, &sa);
    stop(k[ch]);
    printf("kernel rank=%d ch=%d gpu_ns=%llu\n", rank, ch, (unsigned long long)(ke[ch] - ks[ch]));
  }
  if (fin(ctx)) exit(1);
}

/* drops: five collectives into a buffer of three (GCCL_PROFILER_EVENTS=3). */
static void runDrops(void) {
  void* ctx = NULL;
  int rc = init(&ctx, 0);
  printf("init rank=0 rc=%d mask=0x%x\n", rc, mask);
  if (rc) exit(1);
  for (int i = 0; i < 5; i++) {
    void* h = startColl(ctx, 0, NULL, (uint64_t)i);
    printf("handle %d %s\n", i, h ? "kept" : "null");
    pause_us(10);
    stop(h); /* NCCL skips NULL handles; the plugin must take them too */
    record(h, SendWait, NULL);
  }
  if (fin(ctx)) exit(1);
}

/* declined: init fails (the test sets a bad environment); NCCL goes on
 * calling with the NULL context of that communicator. */
static void runDeclined(void) {
  void* ctx = (void*)0x1;
  int rc = init(&ctx, 0);
  printf("init rank=0 rc=%d ctx=%s\n", rc, ctx ? "set" : "null");
  void* h = startColl(ctx, 0, NULL, 1);
  stop(h);
  record(h, SendWait, NULL);
  fin(ctx);
  printf("survived\n");
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: harness PLUGIN.so 4|5|6 run|drops|declined\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "harness: %s\n", dlerror());
    return 1;
  }
  version = atoi(argv[2]);
  char sym[32];
  snprintf(sym, sizeof sym, "ncclProfiler_v%d", version);
  void* t = dlsym(lib, sym);
  if (!t) {
    fprintf(stderr, "harness: %s not exported\n", sym);
    return 1;
  }
  if (version == 4) t4 = t;
  else t5 = t;
  if (!strcmp(argv[3], "run")) {
    runRank(0);
    runRank(1);
  } else if (!strcmp(argv[3], "drops")) {
    runDrops();
  } else {
    runDeclined();
  }
  return 0;
}
