/* sched_yield() as a short sleep, preloaded into OpenMPI's ranks (LD_PRELOAD).
 *
 * OpenMPI's idle ranks (mpi_yield_when_idle) call sched_yield() between progress polls; with
 * more ranks than cores every core is busy, so sched_yield() returns at once and the ranks spin.
 * An oversubscribed MPI user gives the CPU up for real: here each yield sleeps
 * TESTBED_YIELD_SLEEP_US microseconds (default 200: of 10, 50, 200 and 1000, the fastest
 * OpenMPI here at 1 and 4 KiB on 16 ranks and 2 cores). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <time.h>

static long sleep_ns = -1;

int sched_yield(void)
{
    if (sleep_ns < 0) {
        const char *us = getenv("TESTBED_YIELD_SLEEP_US");
        sleep_ns = (us && *us ? atol(us) : 200) * 1000;
    }
    struct timespec t = {sleep_ns / 1000000000, sleep_ns % 1000000000};
    nanosleep(&t, NULL);
    return 0;
}
