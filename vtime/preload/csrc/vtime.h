/* vtime.h: the shared page's layout and the internals the library's files share.
 * The layout must match page.go. All integers are little-endian (x86-64, arm64). */
#ifndef VTIME_H
#define VTIME_H

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>

#define VT_VERSION 2
#define VT_NONE INT64_MAX /* a slot deadline meaning "no deadline" */

/* Slot states: what a thread registered in a slot is waiting for. */
#define VT_SLOT_SLEEP 1 /* on the futex, for virtual time only */
#define VT_SLOT_IO 2    /* in a real call (fds, condvar, semaphore) run in short real slices */
#define VT_SLOT_TIMER 3 /* the signal-timer helper thread */

/* Process flags. */
#define VT_PROC_BYPASS 1 /* a Go binary: it reads time through the vDSO, not through libc */

/* Futex bitsets: sleepers use bit 31; a process's timer helper uses bit pid%31, so a
 * process can wake its own helper without waking every sleeper. */
#define VT_BIT_SLEEPER (1u << 31)

struct vt_header {
	char magic[8];     /* "VTIMEPG1" */
	uint32_t version;  /* VT_VERSION */
	uint32_t state;    /* 0 open, 1 closed: the run is over, clocks run free */
	int32_t owner;     /* pid of the clock's owner, who holds an exclusive flock on the file */
	uint32_t seq;      /* futex word; bumped by every change waiters must see */
	int64_t now;       /* virtual wall time, Unix ns */
	int64_t mono_off;  /* virtual monotonic = now + mono_off */
	uint32_t nprocs, nslots;
	uint32_t procs_off, slots_off; /* byte offsets of the tables */
	/* Virtual wall time up to which waits have ended (<= now). The clock shows a new now
	 * at once, so a process that the server wakes at that instant reads it, and moves fire
	 * only after the server's own timers due then: a wait due at an instant ends last. */
	int64_t fire;
};

struct vt_proc { /* 64 bytes */
	int32_t pid;   /* 0: free */
	uint32_t flags;
	uint64_t dev, ino;      /* the registered image: stat("/proc/self/exe") */
	int64_t alarm_due;      /* ITIMER_REAL, kept across exec: virtual Unix ns, 0 = off */
	int64_t alarm_interval; /* ns */
	int64_t pad[3];
};

struct vt_slot { /* 16 bytes */
	int32_t tid;      /* 0: free */
	uint32_t state;   /* VT_SLOT_*, 0 = claimed but not waiting */
	int64_t deadline; /* virtual Unix ns, VT_NONE */
};

#define HIDDEN __attribute__((visibility("hidden")))

extern struct vt_header *vt_pg HIDDEN;
extern volatile int vt_on HIDDEN; /* a valid page is mapped */

/* A registration in a slot for the span of one wait; nested waits (a signal handler
 * that sleeps) restore the outer one. */
struct vt_reg {
	int idx;
	uint32_t state;
	int64_t deadline;
};

int64_t vt_now(void) HIDDEN;      /* virtual wall time, ns */
int64_t vt_horizon(void) HIDDEN;  /* virtual time up to which waits end (see fire), ns */
int64_t vt_real_mono(void) HIDDEN; /* real CLOCK_MONOTONIC, ns */
int vt_clock_kind(clockid_t c) HIDDEN;
int64_t vt_clock_off(int kind) HIDDEN; /* add to virtual wall time to get that clock */
void vt_reg_begin(struct vt_reg *r, uint32_t state, int64_t deadline) HIDDEN;
void vt_reg_set(struct vt_reg *r, uint32_t state, int64_t deadline) HIDDEN;
void vt_reg_end(struct vt_reg *r) HIDDEN;
int vt_free_running(void) HIDDEN; /* the owner is gone or the page closed */
void vt_check_owner(void) HIDDEN;
long vt_futex_wait(uint32_t seen, uint32_t bitset, int64_t real_timeout_ns) HIDDEN;
void vt_timers_atfork_child(void) HIDDEN;
void vt_timers_restore_alarm(int64_t due, int64_t interval) HIDDEN;
void vt_proc_alarm(int64_t due, int64_t interval) HIDDEN;
void *vt_real(const char *name, const char *version) HIDDEN;

#define VT_CLOCK_PASS 0
#define VT_CLOCK_REAL 1
#define VT_CLOCK_MONO 2
#define VT_CLOCK_TAI 3

/* REAL(var, name) is the real function, looked up on first use (calls can come before the
 * constructor ran). */
#define REALV(var, name, ver)                                           \
	({                                                              \
		if (!(var))                                             \
			(var) = (__typeof__(var))vt_real(name, ver);    \
		(var);                                                  \
	})
#define REAL(var, name) REALV(var, name, NULL)

static inline int64_t vt_ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static inline void vt_ns_ts(int64_t ns, struct timespec *ts)
{
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	if (ts->tv_nsec < 0) {
		ts->tv_sec--;
		ts->tv_nsec += 1000000000;
	}
}

static inline int vt_ts_valid(const struct timespec *ts)
{
	return ts->tv_nsec >= 0 && ts->tv_nsec < 1000000000;
}

/* Adds a non-negative duration to a time, saturating at VT_NONE. */
static inline int64_t vt_add(int64_t t, int64_t d)
{
	return d > VT_NONE - t ? VT_NONE : t + d;
}

#endif
