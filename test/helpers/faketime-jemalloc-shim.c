/*
 * Preloaded before libfaketime into redis-server (test/helpers/redis-clock.ts). Debian's redis-server allocates with
 * jemalloc, whose initialisation calls pthread_cond_init and clock_gettime(CLOCK_MONOTONIC) while it holds its init
 * lock. libfaketime wraps both; the first wrapped call initialises libfaketime, which allocates (sem_open, and dlsym
 * failing on symbols glibc 2.36 lacks: __ftime, timer_settime@GLIBC_2.2) and so waits on jemalloc's lock forever:
 * redis-server hangs before it listens. Here those two calls are answered without libfaketime (a default condition
 * variable is all zero bytes; the monotonic clocks are not faked anyway), so libfaketime initialises later, outside
 * jemalloc's lock, on the first wall-clock read.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int (*next_clock_gettime)(clockid_t, struct timespec *);
static int (*next_cond_init)(pthread_cond_t *, const pthread_condattr_t *);

int clock_gettime(clockid_t id, struct timespec *ts) {
  if (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE) return (int)syscall(SYS_clock_gettime, id, ts);
  if (next_clock_gettime == NULL) next_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  return next_clock_gettime(id, ts);
}

int pthread_cond_init(pthread_cond_t *cond, const pthread_condattr_t *attr) {
  if (attr == NULL) {
    const pthread_cond_t initial = PTHREAD_COND_INITIALIZER;
    memcpy(cond, &initial, sizeof initial);
    return 0;
  }
  if (next_cond_init == NULL) next_cond_init = (int (*)(pthread_cond_t *, const pthread_condattr_t *))dlvsym(RTLD_NEXT, "pthread_cond_init", "GLIBC_2.3.2");
  return next_cond_init(cond, attr);
}
