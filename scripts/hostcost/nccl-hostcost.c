// nccl-hostcost.c: the host time of one ncclAllReduce call on one GPU
// (one rank), with NCCL initialised and its buffers allocated the way
// nccl-tests does or the way gccl does, to bisect a per-call host cost
// between the two (issue 40). Built and run by scripts/gpu-compare.sh's
// hostcost step:
//
//   cc -O2 -o hostcost nccl-hostcost.c -I/usr/local/cuda/include -lnccl -lcudart
//   hostcost INIT ALLOC BYTES ITERS REPS
//
// INIT: "tests" (ncclCommInitRankConfig with NCCL_CONFIG_INITIALIZER and
// nvlinkCentricSched = 1, as nccl-tests 2.19.6) or "gccl" (ncclCommInitRankScalable
// with the 40-byte ncclConfig_t of NCCL 2.17, as lib/nccl does). ALLOC:
// "memalloc" (ncclMemAlloc) or "cudamalloc". It prints, per rep, the
// microseconds a call took back to back (enqueue and the final sync over
// ITERS) and the enqueue alone.
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(what, ok)                                                        \
	do {                                                                   \
		if (!(ok)) {                                                   \
			fprintf(stderr, "hostcost: %s failed (line %d)\n", what, \
				__LINE__);                                     \
			exit(1);                                               \
		}                                                              \
	} while (0)

// config17 is ncclConfig_t as NCCL 2.17 laid it out: what gccl passes.
struct config17 {
	size_t size;
	unsigned int magic, version;
	int blocking, cgaClusterSize, minCTAs, maxCTAs;
	const char *netName;
};

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
	if (argc != 6) {
		fprintf(stderr, "usage: hostcost tests|gccl memalloc|cudamalloc BYTES ITERS REPS\n");
		return 2;
	}
	const char *init = argv[1], *alloc = argv[2];
	size_t bytes = strtoull(argv[3], 0, 10);
	int iters = atoi(argv[4]), reps = atoi(argv[5]);
	CHECK("bytes, iters and reps above 0", bytes >= 4 && iters > 0 && reps > 0);
	CHECK("cudaSetDevice", cudaSetDevice(0) == cudaSuccess);
	ncclUniqueId id;
	CHECK("ncclGetUniqueId", ncclGetUniqueId(&id) == ncclSuccess);
	ncclComm_t comm;
	if (strcmp(init, "tests") == 0) {
		ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
		cfg.nvlinkCentricSched = 1;
#endif
		CHECK("ncclCommInitRankConfig", ncclCommInitRankConfig(&comm, 1, id, 0, &cfg) == ncclSuccess);
	} else if (strcmp(init, "gccl") == 0) {
		struct config17 cfg = {sizeof cfg, 0xcafebeef, 21700, 1, INT32_MIN, INT32_MIN, INT32_MIN, 0};
		CHECK("ncclCommInitRankScalable",
		      ncclCommInitRankScalable(&comm, 1, 0, 1, &id, (ncclConfig_t *)&cfg) == ncclSuccess);
	} else {
		fprintf(stderr, "hostcost: INIT %s: want tests or gccl\n", init);
		return 2;
	}
	void *send, *recv;
	if (strcmp(alloc, "memalloc") == 0) {
		CHECK("ncclMemAlloc", ncclMemAlloc(&send, bytes) == ncclSuccess && ncclMemAlloc(&recv, bytes) == ncclSuccess);
	} else if (strcmp(alloc, "cudamalloc") == 0) {
		CHECK("cudaMalloc", cudaMalloc(&send, bytes) == cudaSuccess && cudaMalloc(&recv, bytes) == cudaSuccess);
	} else {
		fprintf(stderr, "hostcost: ALLOC %s: want memalloc or cudamalloc\n", alloc);
		return 2;
	}
	cudaStream_t s;
	CHECK("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
	size_t count = bytes / 4;
	for (int i = 0; i < 200; i++)
		CHECK("ncclAllReduce", ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s) == ncclSuccess);
	CHECK("cudaStreamSynchronize", cudaStreamSynchronize(s) == cudaSuccess);
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		for (int i = 0; i < iters; i++)
			CHECK("ncclAllReduce", ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, s) == ncclSuccess);
		double t1 = now();
		CHECK("cudaStreamSynchronize", cudaStreamSynchronize(s) == cudaSuccess);
		double t2 = now();
		printf("%s %s %zu B: %.3f us a call, %.3f us enqueue\n", init, alloc, bytes, (t2 - t0) / iters * 1e6,
		       (t1 - t0) / iters * 1e6);
	}
	ncclCommDestroy(comm);
	return 0;
}
