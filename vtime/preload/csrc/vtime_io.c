/* vtime_io.c: timed waits that also wait for something real (fds, condvars, semaphores,
 * signals). The deadline is virtual; the real call runs in short real slices until it
 * reports an event or virtual time passes the deadline. The thread is registered in a
 * slot (VT_SLOT_IO) for the span of the real call. Zero timeouts go straight to the real
 * call; infinite ones too, registered with no deadline. */
#include "vtime.h"

#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>

#define VT_SLICE_NS 2000000 /* real length of one slice */

static int (*real_poll)(struct pollfd *, nfds_t, int);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
static int (*real_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			   const sigset_t *);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
static int (*real_epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
				const sigset_t *);
static int (*real_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
static int (*real_cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
				  const struct timespec *);
static int (*real_sem_timedwait)(sem_t *, const struct timespec *);
static int (*real_sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
static int (*real_sigtimedwait)(const sigset_t *, siginfo_t *, const struct timespec *);
static int (*real_clock_gettime)(clockid_t, struct timespec *);

struct vt_sliced {
	struct vt_reg reg;
	int64_t deadline;
	unsigned n;
};

static void vt_slice_begin(struct vt_sliced *w, int64_t deadline)
{
	w->deadline = deadline;
	w->n = 0;
	vt_reg_begin(&w->reg, VT_SLOT_IO, deadline);
}

/* vt_slice_next returns the real length of the next slice in ns, or -1 once virtual
 * time has reached the deadline. A free-running clock gets one slice for the rest. */
static int64_t vt_slice_next(struct vt_sliced *w)
{
	int64_t now = vt_now();
	if (vt_horizon() >= w->deadline)
		return -1;
	if (vt_free_running())
		return w->deadline - now;
	if ((++w->n & 511) == 0)
		vt_check_owner();
	return VT_SLICE_NS;
}

static int vt_slice_end(struct vt_sliced *w, int rc)
{
	int e = errno;
	vt_reg_end(&w->reg);
	errno = e;
	return rc;
}

static int vt_ms(int64_t ns)
{
	int64_t ms = (ns + 999999) / 1000000;
	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/* vt_real_abs returns real clock c's time after ns. */
static struct timespec vt_real_abs(clockid_t c, int64_t ns)
{
	struct timespec ts;
	REAL(real_clock_gettime, "clock_gettime")(c, &ts);
	vt_ns_ts(vt_add(vt_ts_ns(&ts), ns), &ts);
	return ts;
}

/* ---- poll family ---- */

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	REAL(real_poll, "poll");
	if (!vt_on || timeout == 0)
		return real_poll(fds, n, timeout);
	struct vt_sliced w;
	int rc;
	if (timeout < 0) {
		vt_slice_begin(&w, VT_NONE);
		return vt_slice_end(&w, real_poll(fds, n, -1));
	}
	vt_slice_begin(&w, vt_add(vt_now(), (int64_t)timeout * 1000000));
	for (;;) {
		int64_t s = vt_slice_next(&w);
		if (s < 0) {
			rc = 0;
			break;
		}
		if ((rc = real_poll(fds, n, vt_ms(s))) != 0)
			break;
	}
	return vt_slice_end(&w, rc);
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	REAL(real_ppoll, "ppoll");
	if (!vt_on || (ts && ts->tv_sec == 0 && ts->tv_nsec == 0) || (ts && !vt_ts_valid(ts)))
		return real_ppoll(fds, n, ts, mask);
	struct vt_sliced w;
	int rc;
	if (!ts) {
		vt_slice_begin(&w, VT_NONE);
		return vt_slice_end(&w, real_ppoll(fds, n, NULL, mask));
	}
	vt_slice_begin(&w, vt_add(vt_now(), vt_ts_ns(ts)));
	for (;;) {
		int64_t s = vt_slice_next(&w);
		if (s < 0) {
			rc = 0;
			break;
		}
		struct timespec st;
		vt_ns_ts(s, &st);
		if ((rc = real_ppoll(fds, n, &st, mask)) != 0)
			break;
	}
	return vt_slice_end(&w, rc);
}

/* ---- select family: the real call clears the sets on a timeout, so each slice starts
 * from a copy ---- */

struct vt_fdsets {
	fd_set *set[3];
	size_t bytes;
};

static void vt_fds_copy(struct vt_fdsets *s, uint64_t *save, int restore)
{
	for (int i = 0; i < 3; i++) {
		if (!s->set[i])
			continue;
		if (restore)
			memcpy(s->set[i], (char *)save + i * s->bytes, s->bytes);
		else
			memcpy((char *)save + i * s->bytes, s->set[i], s->bytes);
	}
}

static int vt_select(int nfds, fd_set *r, fd_set *wr, fd_set *e, int64_t timeout_ns,
		     const sigset_t *mask, int use_mask, int64_t *left)
{
	struct vt_fdsets s = {{r, wr, e}, (size_t)((nfds + 63) / 64) * 8};
	uint64_t save[s.bytes ? 3 * s.bytes / 8 : 1];
	struct vt_sliced w;
	int rc;
	vt_fds_copy(&s, save, 0);
	vt_slice_begin(&w, vt_add(vt_now(), timeout_ns));
	for (;;) {
		int64_t sl = vt_slice_next(&w);
		if (sl < 0) {
			for (int i = 0; i < 3; i++)
				if (s.set[i])
					memset(s.set[i], 0, s.bytes);
			rc = 0;
			break;
		}
		vt_fds_copy(&s, save, 1);
		struct timespec ts;
		vt_ns_ts(sl, &ts);
		if (use_mask)
			rc = REAL(real_pselect, "pselect")(nfds, r, wr, e, &ts, mask);
		else {
			struct timeval tv = {ts.tv_sec, ts.tv_nsec / 1000};
			rc = REAL(real_select, "select")(nfds, r, wr, e, &tv);
		}
		if (rc != 0)
			break;
	}
	*left = w.deadline - vt_now();
	if (*left < 0)
		*left = 0;
	return vt_slice_end(&w, rc);
}

int select(int nfds, fd_set *r, fd_set *wr, fd_set *e, struct timeval *tv)
{
	if (!vt_on || nfds < 0 || (tv && tv->tv_sec == 0 && tv->tv_usec == 0) ||
	    (tv && (tv->tv_usec < 0 || tv->tv_usec >= 1000000 || tv->tv_sec < 0)))
		return REAL(real_select, "select")(nfds, r, wr, e, tv);
	if (!tv) {
		struct vt_sliced w;
		vt_slice_begin(&w, VT_NONE);
		return vt_slice_end(&w, REAL(real_select, "select")(nfds, r, wr, e, NULL));
	}
	int64_t left;
	int rc = vt_select(nfds, r, wr, e, (int64_t)tv->tv_sec * 1000000000 + tv->tv_usec * 1000,
			   NULL, 0, &left);
	int en = errno;
	tv->tv_sec = left / 1000000000; /* Linux reports the time not slept */
	tv->tv_usec = (left % 1000000000) / 1000;
	errno = en;
	return rc;
}

int pselect(int nfds, fd_set *r, fd_set *wr, fd_set *e, const struct timespec *ts,
	    const sigset_t *mask)
{
	if (!vt_on || nfds < 0 || (ts && ts->tv_sec == 0 && ts->tv_nsec == 0) ||
	    (ts && (!vt_ts_valid(ts) || ts->tv_sec < 0)))
		return REAL(real_pselect, "pselect")(nfds, r, wr, e, ts, mask);
	if (!ts) {
		struct vt_sliced w;
		vt_slice_begin(&w, VT_NONE);
		return vt_slice_end(&w, REAL(real_pselect, "pselect")(nfds, r, wr, e, NULL, mask));
	}
	int64_t left;
	return vt_select(nfds, r, wr, e, vt_ts_ns(ts), mask, 1, &left);
}

/* ---- epoll ---- */

static int vt_epoll(int epfd, struct epoll_event *ev, int max, int64_t timeout_ns,
		    const sigset_t *mask)
{
	struct vt_sliced w;
	int rc;
	vt_slice_begin(&w, timeout_ns < 0 ? VT_NONE : vt_add(vt_now(), timeout_ns));
	if (timeout_ns < 0)
		return vt_slice_end(&w, REAL(real_epoll_pwait, "epoll_pwait")(epfd, ev, max, -1, mask));
	for (;;) {
		int64_t s = vt_slice_next(&w);
		if (s < 0) {
			rc = 0;
			break;
		}
		if ((rc = REAL(real_epoll_pwait, "epoll_pwait")(epfd, ev, max, vt_ms(s), mask)) != 0)
			break;
	}
	return vt_slice_end(&w, rc);
}

int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	if (!vt_on || timeout == 0)
		return REAL(real_epoll_wait, "epoll_wait")(epfd, ev, max, timeout);
	return vt_epoll(epfd, ev, max, timeout < 0 ? -1 : (int64_t)timeout * 1000000, NULL);
}

int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	if (!vt_on || timeout == 0)
		return REAL(real_epoll_pwait, "epoll_pwait")(epfd, ev, max, timeout, mask);
	return vt_epoll(epfd, ev, max, timeout < 0 ? -1 : (int64_t)timeout * 1000000, mask);
}

int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *ts,
		 const sigset_t *mask)
{
	if (!vt_on || (ts && ts->tv_sec == 0 && ts->tv_nsec == 0) || (ts && !vt_ts_valid(ts)))
		return REAL(real_epoll_pwait2, "epoll_pwait2")(epfd, ev, max, ts, mask);
	return vt_epoll(epfd, ev, max, ts ? vt_ts_ns(ts) : -1, mask);
}

/* ---- condvars and semaphores ---- */

/* vt_cond_wait waits one real slice. A slice that ends before the virtual deadline is
 * reported as a spurious wakeup (0), which callers must handle anyway: looping inside
 * would lose a signal sent while this thread held the mutex between slices. */
static int vt_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, int kind, const struct timespec *abs)
{
	if (!vt_ts_valid(abs))
		return EINVAL;
	struct vt_sliced w;
	vt_slice_begin(&w, vt_ts_ns(abs) - vt_clock_off(kind));
	int64_t s = vt_slice_next(&w);
	int rc = ETIMEDOUT;
	if (s >= 0) {
		struct timespec ra = vt_real_abs(CLOCK_MONOTONIC, s);
		if (REAL(real_cond_clockwait, "pthread_cond_clockwait"))
			rc = real_cond_clockwait(c, m, CLOCK_MONOTONIC, &ra);
		else {
			ra = vt_real_abs(CLOCK_REALTIME, s);
			rc = REALV(real_cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2")(c, m, &ra);
		}
		if (rc == ETIMEDOUT && vt_horizon() < w.deadline)
			rc = 0;
	}
	return vt_slice_end(&w, rc);
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abs)
{
	if (!vt_on)
		return REALV(real_cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2")(c, m, abs);
	/* glibc keeps the condattr clock in bit 1 of __wrefs. */
	int kind = (c->__data.__wrefs & 2) ? VT_CLOCK_MONO : VT_CLOCK_REAL;
	return vt_cond_wait(c, m, kind, abs);
}

int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
			   const struct timespec *abs)
{
	int kind = vt_clock_kind(clk);
	if (kind == VT_CLOCK_PASS)
		return REAL(real_cond_clockwait, "pthread_cond_clockwait")(c, m, clk, abs);
	return vt_cond_wait(c, m, kind, abs);
}

static int vt_sem_wait(sem_t *sem, int kind, const struct timespec *abs)
{
	if (!vt_ts_valid(abs)) {
		errno = EINVAL;
		return -1;
	}
	struct vt_sliced w;
	int rc;
	vt_slice_begin(&w, vt_ts_ns(abs) - vt_clock_off(kind));
	for (;;) {
		int64_t s = vt_slice_next(&w);
		if (s < 0) {
			/* The real call also takes a free token at its deadline. */
			rc = sem_trywait(sem);
			if (rc == -1 && errno == EAGAIN)
				errno = ETIMEDOUT;
			break;
		}
		struct timespec ra = vt_real_abs(CLOCK_REALTIME, s);
		rc = REAL(real_sem_timedwait, "sem_timedwait")(sem, &ra);
		if (rc == 0 || errno != ETIMEDOUT)
			break;
	}
	return vt_slice_end(&w, rc);
}

int sem_timedwait(sem_t *sem, const struct timespec *abs)
{
	if (!vt_on)
		return REAL(real_sem_timedwait, "sem_timedwait")(sem, abs);
	return vt_sem_wait(sem, VT_CLOCK_REAL, abs);
}

int sem_clockwait(sem_t *sem, clockid_t clk, const struct timespec *abs)
{
	int kind = vt_clock_kind(clk);
	if (kind == VT_CLOCK_PASS)
		return REAL(real_sem_clockwait, "sem_clockwait")(sem, clk, abs);
	return vt_sem_wait(sem, kind, abs);
}

int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *ts)
{
	REAL(real_sigtimedwait, "sigtimedwait");
	if (!vt_on || !ts || !vt_ts_valid(ts) || (ts->tv_sec == 0 && ts->tv_nsec == 0))
		return real_sigtimedwait(set, info, ts);
	struct vt_sliced w;
	int rc;
	vt_slice_begin(&w, vt_add(vt_now(), vt_ts_ns(ts)));
	for (;;) {
		int64_t s = vt_slice_next(&w);
		if (s < 0) {
			errno = EAGAIN;
			rc = -1;
			break;
		}
		struct timespec st;
		vt_ns_ts(s, &st);
		rc = real_sigtimedwait(set, info, &st);
		if (rc != -1 || errno != EAGAIN)
			break;
	}
	return vt_slice_end(&w, rc);
}
