// spinring.c: what a host's processors allow N busy-polling threads,
// with no library in the way: the floor beside which a collective of N
// ranks that poll (gccl's embedded stack, Open MPI's shared memory) is
// judged on a many-core machine (issue 41: "unless the machine's bare spin
// round trip stalls as long in the same run"). Built and run by
// scripts/cpu-scale.sh's spin step:
//
//   cc -O2 -pthread -o spinring spinring.c
//   spinring ring|barrier THREADS ROUNDS
//
// ring: a token passes once round THREADS threads, each spinning on its own
// word (a lap is THREADS hops). barrier: every thread arrives at a counter
// and spins until all have (a sense-reversing barrier). Threads are not
// pinned (as mpirun --bind-to none and Go's scheduler leave them). It
// prints the median, 90th percentile and largest round in microseconds.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { line = 64 };

struct word {
	_Atomic long v;
	char pad[line - sizeof(long)];
};

static int nthreads, rounds, ring;
static struct word *words; // ring: the token's round at each thread
static struct word arrived, sense;
static double *took; // per round, thread 0's view

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static void *run(void *arg) {
	long id = (long)arg;
	for (long r = 1; r <= rounds; r++) {
		double t0 = id == 0 ? now() : 0;
		if (ring) {
			if (id == 0) {
				atomic_store(&words[1 % nthreads].v, r);
				while (atomic_load(&words[0].v) != r)
					;
			} else {
				while (atomic_load(&words[id].v) != r)
					;
				atomic_store(&words[(id + 1) % nthreads].v, r);
			}
		} else {
			if (atomic_fetch_add(&arrived.v, 1) == nthreads - 1) {
				atomic_store(&arrived.v, 0);
				atomic_store(&sense.v, r);
			} else {
				while (atomic_load(&sense.v) != r)
					;
			}
		}
		if (id == 0)
			took[r - 1] = now() - t0;
	}
	return 0;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	if (argc != 4 || (strcmp(argv[1], "ring") && strcmp(argv[1], "barrier"))) {
		fprintf(stderr, "usage: spinring ring|barrier THREADS ROUNDS\n");
		return 2;
	}
	ring = strcmp(argv[1], "ring") == 0;
	nthreads = atoi(argv[2]);
	rounds = atoi(argv[3]);
	if (nthreads < 2 || rounds < 1) {
		fprintf(stderr, "spinring: THREADS must be 2 or more and ROUNDS 1 or more\n");
		return 2;
	}
	words = aligned_alloc(line, sizeof(struct word) * nthreads);
	took = calloc(rounds, sizeof(double));
	memset(words, 0, sizeof(struct word) * nthreads);
	pthread_t *th = calloc(nthreads, sizeof(pthread_t));
	for (long i = 0; i < nthreads; i++)
		pthread_create(&th[i], 0, run, (void *)i);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], 0);
	qsort(took, rounds, sizeof(double), cmp);
	printf("%s threads %d rounds %d: median %.2f us p90 %.2f us max %.2f us\n", argv[1], nthreads, rounds,
	       took[rounds / 2], took[rounds * 9 / 10], took[rounds - 1]);
	return 0;
}
