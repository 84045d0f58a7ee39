/* vtime_timer.c: signal timers on virtual time: alarm, setitimer/getitimer (ITIMER_REAL)
 * and POSIX timers (timer_create & co. on the wall, monotonic and boot clocks). A helper
 * thread per process, started on the first arm, waits on the page's futex and sends the
 * signal (or starts the SIGEV_THREAD function) once virtual time reaches the due time.
 * ITIMER_REAL survives exec through the process table, as the kernel's does. */
#include "vtime.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define VT_NTIMERS 64
#define VT_TIMER_BASE 0x5654000 /* handles of virtual timers; kernel timer ids are small */

struct vt_timer {
	int used, armed;
	struct sigevent ev;
	int64_t due, interval; /* virtual wall ns */
	int overrun, last_overrun;
};

static struct vt_timer vt_t[VT_NTIMERS]; /* [0] is ITIMER_REAL */
static pthread_mutex_t vt_tmu = PTHREAD_MUTEX_INITIALIZER;
static int vt_helper_up;

static int (*real_timer_create)(clockid_t, struct sigevent *, timer_t *);
static int (*real_timer_settime)(timer_t, int, const struct itimerspec *, struct itimerspec *);
static int (*real_timer_gettime)(timer_t, struct itimerspec *);
static int (*real_timer_getoverrun)(timer_t);
static int (*real_timer_delete)(timer_t);
static int (*real_setitimer)(__itimer_which_t, const struct itimerval *, struct itimerval *);
static int (*real_getitimer)(__itimer_which_t, struct itimerval *);
static unsigned (*real_alarm)(unsigned);

static uint32_t vt_helper_bit(void)
{
	return 1u << (getpid() % 31);
}

/* vt_kick makes this process's helper recompute: bumping seq defeats a helper that is
 * about to sleep; the bitset leaves every other waiter asleep. */
static void vt_kick(void)
{
	__atomic_add_fetch(&vt_pg->seq, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &vt_pg->seq, FUTEX_WAKE_BITSET, INT_MAX, NULL, NULL, vt_helper_bit());
}

struct vt_thread_call {
	void (*fn)(union sigval);
	union sigval v;
};

static void *vt_thread_notify(void *arg)
{
	struct vt_thread_call c = *(struct vt_thread_call *)arg;
	free(arg);
	c.fn(c.v);
	return NULL;
}

static void vt_fire(int idx)
{
	struct vt_timer *t = &vt_t[idx];
	struct sigevent *ev = &t->ev;
	if (ev->sigev_notify == SIGEV_THREAD) {
		struct vt_thread_call *c = malloc(sizeof(*c));
		pthread_t th;
		pthread_attr_t def, *a = ev->sigev_notify_attributes;
		if (!c)
			return;
		c->fn = ev->sigev_notify_function;
		c->v = ev->sigev_value;
		if (!a) {
			pthread_attr_init(&def);
			a = &def;
		}
		pthread_attr_setdetachstate(a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, a, vt_thread_notify, c) != 0)
			free(c);
		if (a == &def)
			pthread_attr_destroy(&def);
		return;
	}
	if (ev->sigev_notify != SIGEV_SIGNAL && ev->sigev_notify != SIGEV_THREAD_ID)
		return;
	if (idx == 0) {
		/* The kernel's SI_KERNEL is refused from a thread other than the main one. */
		kill(getpid(), ev->sigev_signo);
		return;
	}
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = ev->sigev_signo;
	si.si_code = SI_TIMER;
	si.si_timerid = idx;
	si.si_overrun = t->overrun;
	si.si_value = ev->sigev_value;
	if (ev->sigev_notify == SIGEV_THREAD_ID)
		syscall(SYS_rt_tgsigqueueinfo, getpid(), ev->_sigev_un._tid, si.si_signo, &si);
	else
		syscall(SYS_rt_sigqueueinfo, getpid(), si.si_signo, &si);
}

static void *vt_helper(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	struct vt_reg r;
	vt_reg_begin(&r, VT_SLOT_TIMER, VT_NONE);
	for (;;) {
		uint32_t seen = __atomic_load_n(&vt_pg->seq, __ATOMIC_ACQUIRE);
		int64_t now = vt_now(), fire = vt_horizon(), next = VT_NONE;
		pthread_mutex_lock(&vt_tmu);
		for (int i = 0; i < VT_NTIMERS; i++) {
			struct vt_timer *t = &vt_t[i];
			if (!t->used || !t->armed)
				continue;
			if (t->due <= fire) {
				int64_t late = t->interval ? (fire - t->due) / t->interval : 0;
				t->overrun = late > INT_MAX ? INT_MAX : (int)late;
				t->last_overrun = t->overrun;
				vt_fire(i);
				if (t->interval)
					t->due += (late + 1) * t->interval;
				else
					t->armed = 0;
				if (i == 0)
					vt_proc_alarm(t->armed ? t->due : 0, t->interval);
			}
			if (t->armed && t->due < next)
				next = t->due;
		}
		pthread_mutex_unlock(&vt_tmu);
		vt_reg_set(&r, VT_SLOT_TIMER, next);
		int64_t wait = 1000000000;
		if (vt_free_running() && next != VT_NONE && next - now < wait)
			wait = next - now;
		if (vt_futex_wait(seen, vt_helper_bit(), wait) == -1 && errno == ETIMEDOUT)
			vt_check_owner();
	}
	return NULL;
}

/* Called with vt_tmu held. */
static void vt_helper_start(void)
{
	if (vt_helper_up)
		return;
	pthread_t th;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 64 * 1024);
	if (pthread_create(&th, &a, vt_helper, NULL) == 0)
		vt_helper_up = 1;
	pthread_attr_destroy(&a);
}

/* vt_arm sets timer idx and returns the previous remaining time and interval. */
static void vt_arm(int idx, int64_t due, int64_t interval, int64_t *left, int64_t *oldiv)
{
	int e = errno;
	pthread_mutex_lock(&vt_tmu);
	struct vt_timer *t = &vt_t[idx];
	int64_t now = vt_now();
	if (left) {
		*left = t->armed ? (t->due > now ? t->due - now : 1) : 0;
		*oldiv = t->armed ? t->interval : 0;
	}
	t->armed = due != 0;
	t->due = due;
	t->interval = due ? interval : 0;
	if (idx == 0)
		vt_proc_alarm(due, t->interval);
	if (t->armed)
		vt_helper_start();
	pthread_mutex_unlock(&vt_tmu);
	if (vt_helper_up)
		vt_kick();
	errno = e;
}

static void vt_itimer_init(void)
{
	if (vt_t[0].used)
		return;
	vt_t[0].used = 1;
	vt_t[0].ev.sigev_notify = SIGEV_SIGNAL;
	vt_t[0].ev.sigev_signo = SIGALRM;
}

void vt_timers_restore_alarm(int64_t due, int64_t interval)
{
	vt_itimer_init();
	vt_arm(0, due, interval, NULL, NULL);
}

void vt_timers_atfork_child(void)
{
	memset(vt_t, 0, sizeof(vt_t)); /* fork does not inherit timers */
	vt_helper_up = 0;
	pthread_mutex_init(&vt_tmu, NULL);
}

/* ---- ITIMER_REAL ---- */

int setitimer(__itimer_which_t which, const struct itimerval *nv, struct itimerval *ov)
{
	if (!vt_on || which != ITIMER_REAL || !nv)
		return REAL(real_setitimer, "setitimer")(which, nv, ov);
	if (nv->it_value.tv_usec < 0 || nv->it_value.tv_usec >= 1000000 ||
	    nv->it_interval.tv_usec < 0 || nv->it_interval.tv_usec >= 1000000) {
		errno = EINVAL;
		return -1;
	}
	int64_t v = (int64_t)nv->it_value.tv_sec * 1000000000 + nv->it_value.tv_usec * 1000;
	int64_t iv = (int64_t)nv->it_interval.tv_sec * 1000000000 + nv->it_interval.tv_usec * 1000;
	int64_t left, oldiv;
	vt_itimer_init();
	vt_arm(0, v ? vt_add(vt_now(), v) : 0, iv, &left, &oldiv);
	if (ov) {
		ov->it_value.tv_sec = left / 1000000000;
		ov->it_value.tv_usec = (left % 1000000000 + 999) / 1000;
		ov->it_interval.tv_sec = oldiv / 1000000000;
		ov->it_interval.tv_usec = (oldiv % 1000000000) / 1000;
	}
	return 0;
}

int getitimer(__itimer_which_t which, struct itimerval *ov)
{
	if (!vt_on || which != ITIMER_REAL || !ov)
		return REAL(real_getitimer, "getitimer")(which, ov);
	pthread_mutex_lock(&vt_tmu);
	int64_t now = vt_now();
	int64_t left = vt_t[0].armed ? (vt_t[0].due > now ? vt_t[0].due - now : 1) : 0;
	int64_t iv = vt_t[0].armed ? vt_t[0].interval : 0;
	pthread_mutex_unlock(&vt_tmu);
	ov->it_value.tv_sec = left / 1000000000;
	ov->it_value.tv_usec = (left % 1000000000 + 999) / 1000;
	ov->it_interval.tv_sec = iv / 1000000000;
	ov->it_interval.tv_usec = (iv % 1000000000) / 1000;
	return 0;
}

unsigned alarm(unsigned s)
{
	if (!vt_on)
		return REAL(real_alarm, "alarm")(s);
	int64_t left, oldiv;
	vt_itimer_init();
	vt_arm(0, s ? vt_add(vt_now(), (int64_t)s * 1000000000) : 0, 0, &left, &oldiv);
	/* As glibc: round to the nearest second, but never report a pending alarm as 0. */
	unsigned r = (unsigned)(left / 1000000000);
	if (left % 1000000000 >= 500000000 || (r == 0 && left > 0))
		r++;
	return r;
}

/* ---- POSIX timers ---- */

static int vt_timer_idx(timer_t id)
{
	intptr_t v = (intptr_t)id - VT_TIMER_BASE;
	if (v <= 0 || v >= VT_NTIMERS || !vt_t[v].used)
		return -1;
	return (int)v;
}

static int vt_timer_clock[VT_NTIMERS];

int timer_create(clockid_t clk, struct sigevent *ev, timer_t *id)
{
	int kind = vt_clock_kind(clk);
	int notify = ev ? ev->sigev_notify : SIGEV_SIGNAL;
	if (kind == VT_CLOCK_PASS || !id ||
	    (notify != SIGEV_SIGNAL && notify != SIGEV_NONE && notify != SIGEV_THREAD &&
	     notify != SIGEV_THREAD_ID))
		return REALV(real_timer_create, "timer_create", "GLIBC_2.3.3")(clk, ev, id);
	pthread_mutex_lock(&vt_tmu);
	int idx = -1;
	for (int i = 1; i < VT_NTIMERS && idx < 0; i++)
		if (!vt_t[i].used)
			idx = i;
	if (idx < 0) {
		pthread_mutex_unlock(&vt_tmu);
		errno = EAGAIN;
		return -1;
	}
	struct vt_timer *t = &vt_t[idx];
	memset(t, 0, sizeof(*t));
	t->used = 1;
	vt_timer_clock[idx] = kind;
	if (ev) {
		t->ev = *ev;
	} else {
		t->ev.sigev_notify = SIGEV_SIGNAL;
		t->ev.sigev_signo = SIGALRM;
		t->ev.sigev_value.sival_int = idx;
	}
	pthread_mutex_unlock(&vt_tmu);
	*id = (timer_t)(intptr_t)(VT_TIMER_BASE + idx);
	return 0;
}

int timer_settime(timer_t id, int flags, const struct itimerspec *nv, struct itimerspec *ov)
{
	int idx = vt_timer_idx(id);
	if (idx < 0)
		return REALV(real_timer_settime, "timer_settime", "GLIBC_2.3.3")(id, flags, nv, ov);
	if (!nv || !vt_ts_valid(&nv->it_value) || !vt_ts_valid(&nv->it_interval)) {
		errno = EINVAL;
		return -1;
	}
	int64_t v = vt_ts_ns(&nv->it_value), due = 0;
	if (v)
		due = (flags & TIMER_ABSTIME) ? v - vt_clock_off(vt_timer_clock[idx]) : vt_add(vt_now(), v);
	if (v && due <= 0)
		due = 1; /* an absolute time in the past fires at once */
	int64_t left, oldiv;
	vt_arm(idx, due, vt_ts_ns(&nv->it_interval), &left, &oldiv);
	if (ov) {
		vt_ns_ts(left, &ov->it_value);
		vt_ns_ts(oldiv, &ov->it_interval);
	}
	return 0;
}

int timer_gettime(timer_t id, struct itimerspec *ov)
{
	int idx = vt_timer_idx(id);
	if (idx < 0 || !ov)
		return REALV(real_timer_gettime, "timer_gettime", "GLIBC_2.3.3")(id, ov);
	pthread_mutex_lock(&vt_tmu);
	struct vt_timer *t = &vt_t[idx];
	int64_t now = vt_now();
	int64_t left = t->armed ? (t->due > now ? t->due - now : 1) : 0;
	vt_ns_ts(left, &ov->it_value);
	vt_ns_ts(t->armed ? t->interval : 0, &ov->it_interval);
	pthread_mutex_unlock(&vt_tmu);
	return 0;
}

int timer_getoverrun(timer_t id)
{
	int idx = vt_timer_idx(id);
	if (idx < 0)
		return REALV(real_timer_getoverrun, "timer_getoverrun", "GLIBC_2.3.3")(id);
	return vt_t[idx].last_overrun;
}

int timer_delete(timer_t id)
{
	int idx = vt_timer_idx(id);
	if (idx < 0)
		return REALV(real_timer_delete, "timer_delete", "GLIBC_2.3.3")(id);
	pthread_mutex_lock(&vt_tmu);
	memset(&vt_t[idx], 0, sizeof(vt_t[idx]));
	pthread_mutex_unlock(&vt_tmu);
	return 0;
}
