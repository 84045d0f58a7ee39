/* vtime.c: an LD_PRELOAD library that puts an unmodified dynamically linked process on a
 * virtual clock kept in a shared page (env VTIME_PAGE, owned by page.go).
 *
 * This file: mapping the page, the process table, waiter slots, time reads and sleeps.
 * Without a valid page every call goes to the real function. When the page's owner dies
 * or closes the page, the clocks run free from the last virtual time at the real rate. */
#include "vtime.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

struct vt_header *vt_pg;
volatile int vt_on;

static struct vt_proc *vt_procs;
static struct vt_slot *vt_slots;
static uint32_t vt_nprocs, vt_nslots;
static uint64_t vt_dev, vt_ino;
static uint32_t vt_flags;
static int64_t vt_tai_off;

/* Free-running clock: virtual = free_v0 + (real monotonic - free_r0). */
static volatile int vt_free;
static int64_t vt_free_v0, vt_free_r0;
static unsigned vt_reads;

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_gettimeofday)(struct timeval *, void *);
static int (*real_clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);
static int (*real_nanosleep)(const struct timespec *, struct timespec *);
static time_t (*real_time)(time_t *);
static int (*real_timespec_get)(struct timespec *, int);
static int (*real_usleep)(useconds_t);
static unsigned (*real_sleep)(unsigned);

void *vt_real(const char *name, const char *version)
{
	void *f = NULL;
	if (version)
		f = dlvsym(RTLD_NEXT, name, version);
	if (!f)
		f = dlsym(RTLD_NEXT, name);
	return f;
}

int64_t vt_real_mono(void)
{
	struct timespec ts;
	REAL(real_clock_gettime, "clock_gettime")(CLOCK_MONOTONIC, &ts);
	return vt_ts_ns(&ts);
}

static void vt_go_free(void)
{
	if (vt_free)
		return;
	vt_free_v0 = __atomic_load_n(&vt_pg->now, __ATOMIC_ACQUIRE);
	vt_free_r0 = vt_real_mono();
	__atomic_store_n(&vt_free, 1, __ATOMIC_RELEASE);
}

int vt_free_running(void)
{
	if (!vt_free && __atomic_load_n(&vt_pg->state, __ATOMIC_ACQUIRE) != 0)
		vt_go_free();
	return vt_free;
}

static char *vt_path;

/* vt_check_owner notices an owner that died without closing the page: the owner holds an
 * exclusive flock on the page file for the page's life, which works across pid
 * namespaces. */
void vt_check_owner(void)
{
	if (vt_free)
		return;
	int e = errno;
	int fd = open(vt_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			vt_go_free();
	} else {
		if (flock(fd, LOCK_SH | LOCK_NB) == 0)
			vt_go_free();
		close(fd);
	}
	errno = e;
}

int64_t vt_now(void)
{
	if (vt_free_running())
		return vt_free_v0 + (vt_real_mono() - vt_free_r0);
	/* A process that only reads the clock must also notice a dead owner. */
	if ((++vt_reads & 4095) == 0)
		vt_check_owner();
	return __atomic_load_n(&vt_pg->now, __ATOMIC_ACQUIRE);
}

int64_t vt_horizon(void)
{
	if (vt_free_running())
		return vt_now();
	return __atomic_load_n(&vt_pg->fire, __ATOMIC_ACQUIRE);
}

int vt_clock_kind(clockid_t c)
{
	if (!vt_on)
		return VT_CLOCK_PASS;
	switch (c) {
	case CLOCK_REALTIME:
	case CLOCK_REALTIME_COARSE:
	case CLOCK_REALTIME_ALARM:
		return VT_CLOCK_REAL;
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_MONOTONIC_COARSE:
	case CLOCK_BOOTTIME:
	case CLOCK_BOOTTIME_ALARM:
		return VT_CLOCK_MONO;
	case CLOCK_TAI:
		return VT_CLOCK_TAI;
	}
	return VT_CLOCK_PASS; /* CPU-time clocks and anything unknown */
}

int64_t vt_clock_off(int kind)
{
	switch (kind) {
	case VT_CLOCK_MONO:
		return vt_pg->mono_off;
	case VT_CLOCK_TAI:
		return vt_tai_off;
	}
	return 0;
}

/* ---- futex and slots ---- */

long vt_futex_wait(uint32_t seen, uint32_t bitset, int64_t real_timeout_ns)
{
	struct timespec abs;
	vt_ns_ts(vt_add(vt_real_mono(), real_timeout_ns), &abs);
	return syscall(SYS_futex, &vt_pg->seq, FUTEX_WAIT_BITSET, seen, &abs, NULL, bitset);
}

static pid_t vt_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

void vt_reg_begin(struct vt_reg *r, uint32_t state, int64_t deadline)
{
	r->idx = -1;
	r->state = 0;
	if (!vt_on || vt_free)
		return;
	pid_t tid = vt_gettid();
	uint32_t h = (uint32_t)tid % vt_nslots;
	for (uint32_t i = 0; i < vt_nslots; i++) {
		struct vt_slot *s = &vt_slots[(h + i) % vt_nslots];
		int32_t zero = 0;
		if (__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE) == tid) {
			/* A wait inside a wait (a signal handler), or a stale slot of ours. */
			r->state = s->state;
			r->deadline = s->deadline;
		} else if (!__atomic_compare_exchange_n(&s->tid, &zero, tid, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED)) {
			continue;
		}
		r->idx = (int)((h + i) % vt_nslots);
		vt_reg_set(r, state, deadline);
		return;
	}
}

void vt_reg_set(struct vt_reg *r, uint32_t state, int64_t deadline)
{
	if (r->idx < 0)
		return;
	struct vt_slot *s = &vt_slots[r->idx];
	__atomic_store_n(&s->deadline, deadline, __ATOMIC_RELEASE);
	__atomic_store_n(&s->state, state, __ATOMIC_RELEASE);
}

void vt_reg_end(struct vt_reg *r)
{
	if (r->idx < 0)
		return;
	struct vt_slot *s = &vt_slots[r->idx];
	if (r->state) {
		__atomic_store_n(&s->deadline, r->deadline, __ATOMIC_RELEASE);
		__atomic_store_n(&s->state, r->state, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&s->state, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->tid, 0, __ATOMIC_RELEASE);
}

/* vt_sleep_until waits until virtual wall time >= deadline. It returns 0, or EINTR when
 * a signal handler ran (as nanosleep does). */
static int vt_sleep_until(int64_t deadline)
{
	struct vt_reg r;
	int rc = 0, e = errno;
	vt_reg_begin(&r, VT_SLOT_SLEEP, deadline);
	for (;;) {
		uint32_t seen = __atomic_load_n(&vt_pg->seq, __ATOMIC_ACQUIRE);
		int64_t now = vt_now();
		if (vt_horizon() >= deadline)
			break;
		if (vt_free) {
			struct timespec ts;
			vt_ns_ts(deadline - now, &ts);
			if (REAL(real_clock_nanosleep, "clock_nanosleep")(CLOCK_MONOTONIC, 0, &ts, NULL) ==
			    EINTR) {
				rc = EINTR;
				break;
			}
			continue;
		}
		if (vt_futex_wait(seen, VT_BIT_SLEEPER, 1000000000) == -1) {
			if (errno == EINTR) {
				rc = EINTR;
				break;
			}
			if (errno == ETIMEDOUT)
				vt_check_owner();
		}
	}
	vt_reg_end(&r);
	errno = e;
	return rc;
}

/* ---- time reads ---- */

int clock_gettime(clockid_t c, struct timespec *ts)
{
	int k = vt_clock_kind(c);
	if (k == VT_CLOCK_PASS)
		return REAL(real_clock_gettime, "clock_gettime")(c, ts);
	vt_ns_ts(vt_now() + vt_clock_off(k), ts);
	return 0;
}

int gettimeofday(struct timeval *tv, void *tz)
{
	if (!vt_on)
		return REAL(real_gettimeofday, "gettimeofday")(tv, tz);
	if (tz) {
		struct timeval dummy;
		REAL(real_gettimeofday, "gettimeofday")(&dummy, tz);
	}
	int64_t ns = vt_now();
	tv->tv_sec = ns / 1000000000;
	tv->tv_usec = (ns % 1000000000) / 1000;
	return 0;
}

time_t time(time_t *t)
{
	if (!vt_on)
		return REAL(real_time, "time")(t);
	time_t s = (time_t)(vt_now() / 1000000000);
	if (t)
		*t = s;
	return s;
}

int timespec_get(struct timespec *ts, int base)
{
	if (!vt_on || base != TIME_UTC)
		return REAL(real_timespec_get, "timespec_get")(ts, base);
	vt_ns_ts(vt_now(), ts);
	return base;
}

/* ---- sleeps ---- */

int clock_nanosleep(clockid_t c, int flags, const struct timespec *req, struct timespec *rem)
{
	int k = vt_clock_kind(c);
	if (k == VT_CLOCK_PASS || !req)
		return REAL(real_clock_nanosleep, "clock_nanosleep")(c, flags, req, rem);
	if (!vt_ts_valid(req))
		return EINVAL;
	int64_t deadline = (flags & TIMER_ABSTIME) ? vt_ts_ns(req) - vt_clock_off(k)
						   : vt_add(vt_now(), vt_ts_ns(req));
	int rc = vt_sleep_until(deadline);
	if (rc == EINTR && rem && !(flags & TIMER_ABSTIME)) {
		int64_t left = deadline - vt_now();
		vt_ns_ts(left > 0 ? left : 0, rem);
	}
	return rc;
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (!vt_on || !req)
		return REAL(real_nanosleep, "nanosleep")(req, rem);
	int rc = clock_nanosleep(CLOCK_MONOTONIC, 0, req, rem);
	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}

int usleep(useconds_t us)
{
	if (!vt_on)
		return REAL(real_usleep, "usleep")(us);
	if (vt_sleep_until(vt_add(vt_now(), (int64_t)us * 1000)) == EINTR) {
		errno = EINTR;
		return -1;
	}
	return 0;
}

unsigned sleep(unsigned s)
{
	if (!vt_on)
		return REAL(real_sleep, "sleep")(s);
	int64_t deadline = vt_add(vt_now(), (int64_t)s * 1000000000);
	if (vt_sleep_until(deadline) == EINTR) {
		int64_t left = deadline - vt_now();
		return left > 0 ? (unsigned)((left + 999999999) / 1000000000) : 0;
	}
	return 0;
}

/* ---- process table ---- */

static int vt_is_go(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*n);
			if ((n->n_namesz == 3 || n->n_namesz == 4) && memcmp(name, "Go", 3) == 0 && n->n_type == 4)
				*(int *)data = 1;
			p = name + ((n->n_namesz + 3) & ~3u) + ((n->n_descsz + 3) & ~3u);
		}
	}
	return 1; /* the first object is the executable */
}

/* vt_proc_register puts this pid in the process table. After an exec it finds the entry
 * the previous image left and returns it, so ITIMER_REAL survives the exec. */
static struct vt_proc *vt_proc_register(int *was_there)
{
	pid_t pid = getpid();
	*was_there = 0;
	for (uint32_t i = 0; i < vt_nprocs; i++) {
		if (__atomic_load_n(&vt_procs[i].pid, __ATOMIC_ACQUIRE) == pid) {
			*was_there = 1;
			return &vt_procs[i];
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < vt_nprocs; i++) {
			struct vt_proc *p = &vt_procs[i];
			int32_t old = __atomic_load_n(&p->pid, __ATOMIC_ACQUIRE);
			if (old != 0 && (pass == 0 || kill(old, 0) == 0 || errno != ESRCH))
				continue;
			if (__atomic_compare_exchange_n(&p->pid, &old, pid, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED)) {
				p->alarm_due = 0;
				p->alarm_interval = 0;
				return p;
			}
		}
	}
	return NULL; /* table full: the owner will report this process as unvirtualised */
}

static struct vt_proc *vt_self;

static void vt_proc_fill(struct vt_proc *p)
{
	p->dev = vt_dev;
	p->ino = vt_ino;
	__atomic_store_n(&p->flags, vt_flags, __ATOMIC_RELEASE);
}

void vt_proc_alarm(int64_t due, int64_t interval)
{
	if (vt_self) {
		vt_self->alarm_due = due;
		vt_self->alarm_interval = interval;
	}
}

static void vt_atfork_child(void)
{
	if (!vt_on)
		return;
	int was;
	vt_self = vt_proc_register(&was);
	if (vt_self) {
		vt_self->alarm_due = 0; /* fork does not inherit timers */
		vt_self->alarm_interval = 0;
		vt_proc_fill(vt_self);
	}
	vt_timers_atfork_child();
}

__attribute__((constructor)) static void vt_init(void)
{
	REAL(real_clock_gettime, "clock_gettime");
	REAL(real_clock_nanosleep, "clock_nanosleep");
	const char *path = getenv("VTIME_PAGE");
	if (!path || !*path)
		return;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(struct vt_header))
		m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return;
	struct vt_header *h = m;
	uint64_t size = (uint64_t)st.st_size;
	if (memcmp(h->magic, "VTIMEPG1", 8) != 0 || h->version != VT_VERSION || h->state != 0 ||
	    h->nprocs == 0 || h->nslots == 0 ||
	    h->procs_off + (uint64_t)h->nprocs * sizeof(struct vt_proc) > size ||
	    h->slots_off + (uint64_t)h->nslots * sizeof(struct vt_slot) > size ||
	    h->procs_off % 8 || h->slots_off % 8) {
		munmap(m, (size_t)st.st_size);
		return;
	}
	if (!(vt_path = strdup(path))) {
		munmap(m, (size_t)st.st_size);
		return;
	}
	vt_pg = h;
	vt_procs = (struct vt_proc *)((char *)m + h->procs_off);
	vt_slots = (struct vt_slot *)((char *)m + h->slots_off);
	vt_nprocs = h->nprocs;
	vt_nslots = h->nslots;

	struct timespec tai, rt;
	if (real_clock_gettime(CLOCK_TAI, &tai) == 0 && real_clock_gettime(CLOCK_REALTIME, &rt) == 0)
		vt_tai_off = (vt_ts_ns(&tai) - vt_ts_ns(&rt) + 500000000) / 1000000000 * 1000000000;
	if (stat("/proc/self/exe", &st) == 0) {
		vt_dev = st.st_dev;
		vt_ino = st.st_ino;
	}
	int go = 0;
	dl_iterate_phdr(vt_is_go, &go);
	vt_flags = go ? VT_PROC_BYPASS : 0;
	vt_on = 1;

	pthread_atfork(NULL, NULL, vt_atfork_child);
	int was;
	vt_self = vt_proc_register(&was);
	if (vt_self) {
		int64_t due = was ? vt_self->alarm_due : 0, iv = was ? vt_self->alarm_interval : 0;
		vt_proc_fill(vt_self);
		if (due)
			vt_timers_restore_alarm(due, iv);
	}
}
