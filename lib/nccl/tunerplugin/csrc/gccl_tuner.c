// gccl's NCCL tuner plugin: NCCL loads it (NCCL_TUNER_PLUGIN=<path of the
// built .so>) and asks it, for every collective, which algorithm and
// protocol to run. It reads the rules of a gccl tuning table exported as
// CSV (`tune table --nccl-csv`, NCCL_TUNER_CONFIG_FILE): the example
// tuner's columns,
//
//   collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]
//
// Where it differs from NCCL's example plugin, and why:
//   - it never touches the channel count unless a matching rule sets one
//     (channels > 0): the example sets 1 on every call before it matches
//     anything, which cost 13-94% on two H100s (docs/data/nccl_h100x2);
//   - a line it cannot read fails init with the file, line and field named
//     (NCCL then reports the failure), where the example reads an unknown
//     name as allreduce/ring/simple and carries on;
//   - a line longer than its buffer is an error, not two rules.
// Each match is logged at INFO under the TUNING subsystem, so
// NCCL_DEBUG_SUBSYS=TUNING shows what was obeyed.
//
// With no rule for a call it changes nothing: NCCL's cost table, channel
// count and chunk size stay as NCCL made them, so loading it with an empty
// file is the same as loading none.
//
// Built with any C compiler: cc -O2 -fPIC -shared -o libnccl-tuner-gccl.so
// gccl_tuner.c (`tune plugin` does it). It exports the v6 interface (NCCL
// 2.30.3 on: v5's, plus an optional chunk-size hook it leaves unset), v5
// (2.27 on) and v4 (2.23-2.26); NCCL takes the newest it knows. The
// declarations below follow NCCL's published plugin ABI.

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// --- NCCL's plugin ABI (ext-tuner), as published -------------------------

typedef enum { ncclSuccess = 0, ncclSystemError = 2, ncclInternalError = 3, ncclInvalidArgument = 4 } ncclResult_t;
typedef enum { LOG_WARN = 2, LOG_INFO = 3 } logLevel;
enum { SUBSYS_INIT = 1, SUBSYS_TUNING = 64 };
typedef void (*logger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Collectives, algorithms and protocols by NCCL's numbering.
static const char* const collNames[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
static const char* const algoNames[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
static const char* const protoNames[] = {"ll", "ll128", "simple"};
#define NCOLLS 5
#define NALGOS 7
#define NPROTOS 3
#define COST_IGNORE -1.0f // NCCL marks a pair it cannot run so

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, logger_t log,
                       void* nvlDomainInfo, void* constants);
  ncclResult_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** costTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* ctx);
} tunerV5;

// v6 is v5 and a getChunkSize that may be NULL (NCCL keeps its own).
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, logger_t log,
                       void* nvlDomainInfo, void* constants);
  ncclResult_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** costTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*getChunkSize)(void* ctx, int collType, size_t nBytes, int algo, int proto, int nChannels,
                               size_t* chunkSize);
} tunerV6;

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, logger_t log, void** ctx);
  ncclResult_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** costTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*destroy)(void* ctx);
} tunerV4;

// --- the plugin ------------------------------------------------------------

typedef struct {
  int coll, algo, proto, channels;       // channels <= 0: NCCL's count
  unsigned long long minBytes, maxBytes; // inclusive
  long long nNodes, nRanks, pipeOps, regBuff; // -1: any
} rule;

typedef struct {
  size_t nRanks, nNodes;
  logger_t log;
  rule* rules;
  int nRules;
} tuner;

#define LOG(t, lvl, sub, ...) \
  do { if ((t)->log) (t)->log((lvl), (sub), __FILE__, __LINE__, __VA_ARGS__); } while (0)

static int lookupName(const char* const* names, int n, const char* s) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], s) == 0) return i;
  return -1;
}

// trim cuts spaces, tabs and line ends from both sides of s, in place.
static char* trim(char* s) {
  while (*s == ' ' || *s == '\t') s++;
  char* e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) *--e = 0;
  return s;
}

static int parseU64(const char* s, unsigned long long* v) {
  if (strcmp(s, "-1") == 0) { *v = ~0ULL; return 0; } // the example's "unbounded"
  if (*s < '0' || *s > '9') return -1;
  char* end;
  errno = 0;
  *v = strtoull(s, &end, 10);
  return (errno || *end) ? -1 : 0;
}

static int parseInt(const char* s, long long* v) {
  char* end;
  errno = 0;
  *v = strtoll(s, &end, 10);
  return (errno || *end || end == s || *v < -1) ? -1 : 0;
}

// parseLine reads one rule; on failure it says which field was wrong.
static int parseLine(char* line, rule* r, const char** bad) {
  char* f[10];
  int n = 0;
  for (char* p = line; n < 10; n++) {
    f[n] = p;
    char* c = strchr(p, ',');
    if (!c) { n++; break; }
    *c = 0;
    p = c + 1;
    if (n == 9) { *bad = "more than 10 fields"; return -1; }
  }
  if (n < 8) { *bad = "fewer than 8 fields"; return -1; }
  for (int i = 0; i < n; i++) f[i] = trim(f[i]);
  long long ch;
  r->pipeOps = r->regBuff = -1;
  if ((r->coll = lookupName(collNames, NCOLLS, f[0])) < 0) { *bad = "collective_type (want broadcast, reduce, allgather, reducescatter or allreduce)"; return -1; }
  if (parseU64(f[1], &r->minBytes)) { *bad = "min_bytes"; return -1; }
  if (parseU64(f[2], &r->maxBytes) || r->maxBytes < r->minBytes) { *bad = "max_bytes (an integer >= min_bytes)"; return -1; }
  if ((r->algo = lookupName(algoNames, NALGOS, f[3])) < 0) { *bad = "algorithm (want tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree or pat)"; return -1; }
  if ((r->proto = lookupName(protoNames, NPROTOS, f[4])) < 0) { *bad = "protocol (want ll, ll128 or simple)"; return -1; }
  if (parseInt(f[5], &ch) || ch == 0 || ch > 1024) { *bad = "channels (-1 for NCCL's count, else 1-1024)"; return -1; }
  r->channels = (int)ch;
  if (parseInt(f[6], &r->nNodes)) { *bad = "nNodes (-1 or a count)"; return -1; }
  if (parseInt(f[7], &r->nRanks)) { *bad = "nRanks (-1 or a count)"; return -1; }
  if (n > 8 && parseInt(f[8], &r->pipeOps)) { *bad = "numPipeOps (-1 or a count)"; return -1; }
  if (n > 9 && (parseInt(f[9], &r->regBuff) || r->regBuff > 1)) { *bad = "regBuff (-1, 0 or 1)"; return -1; }
  return 0;
}

static ncclResult_t loadRules(tuner* t, const char* path) {
  FILE* fp = fopen(path, "r");
  if (!fp) {
    LOG(t, LOG_WARN, SUBSYS_INIT | SUBSYS_TUNING, "TUNER/gccl: cannot open NCCL_TUNER_CONFIG_FILE %s: %s", path, strerror(errno));
    return ncclSystemError;
  }
  char line[4096];
  int lineNo = 0, cap = 0;
  ncclResult_t res = ncclSuccess;
  while (fgets(line, sizeof line, fp)) {
    lineNo++;
    size_t len = strlen(line);
    if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(fp)) {
      LOG(t, LOG_WARN, SUBSYS_INIT | SUBSYS_TUNING, "TUNER/gccl: %s:%d: line longer than %d bytes", path, lineNo, (int)sizeof line - 2);
      res = ncclInvalidArgument;
      break;
    }
    char* s = trim(line);
    if (*s == 0 || *s == '#') continue;
    if (t->nRules == cap) {
      cap = cap ? 2 * cap : 16;
      rule* grown = realloc(t->rules, cap * sizeof(rule));
      if (!grown) { res = ncclSystemError; break; }
      t->rules = grown;
    }
    const char* bad = "";
    if (parseLine(s, &t->rules[t->nRules], &bad)) {
      LOG(t, LOG_WARN, SUBSYS_INIT | SUBSYS_TUNING, "TUNER/gccl: %s:%d: bad %s", path, lineNo, bad);
      res = ncclInvalidArgument;
      break;
    }
    t->nRules++;
  }
  fclose(fp);
  return res;
}

static ncclResult_t tunerFinalize(void* ctx) {
  tuner* t = ctx;
  if (t) {
    free(t->rules);
    free(t);
  }
  return ncclSuccess;
}

static ncclResult_t tunerInit(size_t nRanks, size_t nNodes, logger_t log, void** ctx) {
  tuner* t = calloc(1, sizeof(tuner));
  if (!t) return ncclSystemError;
  t->nRanks = nRanks;
  t->nNodes = nNodes;
  t->log = log;
  const char* path = getenv("NCCL_TUNER_CONFIG_FILE");
  if (!path || !*path) {
    LOG(t, LOG_WARN, SUBSYS_INIT | SUBSYS_TUNING, "TUNER/gccl: NCCL_TUNER_CONFIG_FILE is not set: it names the CSV of rules (tune table --nccl-csv)");
    tunerFinalize(t);
    return ncclInvalidArgument;
  }
  ncclResult_t res = loadRules(t, path);
  if (res != ncclSuccess) {
    tunerFinalize(t);
    return res;
  }
  LOG(t, LOG_INFO, SUBSYS_INIT | SUBSYS_TUNING, "TUNER/gccl: %d rules from %s for %zu ranks on %zu nodes", t->nRules, path, nRanks, nNodes);
  *ctx = t;
  return ncclSuccess;
}

static ncclResult_t tunerInitV5(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, logger_t log,
                                void* nvlDomainInfo, void* constants) {
  (void)commId; (void)nvlDomainInfo; (void)constants; // NCCL's constants stay as they are
  return tunerInit(nRanks, nNodes, log, ctx);
}

static int anyOr(long long want, long long have) { return want == -1 || want == have; }

// tunerGetCollInfo makes the first matching rule's algorithm and protocol
// the cheapest in NCCL's cost table (if NCCL can run them here), and sets
// the channel count only where the rule gives one.
static ncclResult_t tunerGetCollInfo(void* ctx, int collType, size_t nBytes, int numPipeOps, float** costTable,
                                     int numAlgo, int numProto, int regBuff, int* nChannels) {
  tuner* t = ctx;
  if (!t) return ncclInternalError;
  float* cost = (float*)costTable; // NCCL passes float[numAlgo][numProto]
  for (int i = 0; i < t->nRules; i++) {
    const rule* r = &t->rules[i];
    if (r->coll != collType || nBytes < r->minBytes || nBytes > r->maxBytes) continue;
    if (!anyOr(r->nNodes, (long long)t->nNodes) || !anyOr(r->nRanks, (long long)t->nRanks)) continue;
    if (!anyOr(r->pipeOps, numPipeOps) || !anyOr(r->regBuff, regBuff)) continue;
    if (r->algo >= numAlgo || r->proto >= numProto || cost[r->algo * numProto + r->proto] == COST_IGNORE) {
      LOG(t, LOG_INFO, SUBSYS_TUNING, "TUNER/gccl: rule %d (%s %zu B): %s/%s cannot run here, next rule", i + 1,
          collNames[collType], nBytes, algoNames[r->algo], protoNames[r->proto]);
      continue;
    }
    cost[r->algo * numProto + r->proto] = 0.0f;
    if (r->channels > 0) *nChannels = r->channels;
    if (r->channels > 0)
      LOG(t, LOG_INFO, SUBSYS_TUNING, "TUNER/gccl: rule %d: %s %zu B -> %s/%s, %d channels", i + 1, collNames[collType],
          nBytes, algoNames[r->algo], protoNames[r->proto], r->channels);
    else
      LOG(t, LOG_INFO, SUBSYS_TUNING, "TUNER/gccl: rule %d: %s %zu B -> %s/%s, NCCL's channel count", i + 1,
          collNames[collType], nBytes, algoNames[r->algo], protoNames[r->proto]);
    return ncclSuccess;
  }
  return ncclSuccess; // no rule: NCCL's own choice, untouched
}

__attribute__((visibility("default"))) const tunerV6 ncclTunerPlugin_v6 = {"gccl", tunerInitV5, tunerGetCollInfo, tunerFinalize, NULL};
__attribute__((visibility("default"))) const tunerV5 ncclTunerPlugin_v5 = {"gccl", tunerInitV5, tunerGetCollInfo, tunerFinalize};
__attribute__((visibility("default"))) const tunerV4 ncclTunerPlugin_v4 = {"gccl", tunerInit, tunerGetCollInfo, tunerFinalize};
