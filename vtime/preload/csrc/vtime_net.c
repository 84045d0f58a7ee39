/* vtime_net.c: what a process sends to a loopback TCP peer reaches it without virtual time
 * moving, but not always before the call that sent it returns: on a loaded host the kernel
 * defers its softirq work to ksoftirqd, and a handshake or a request can wait there for
 * milliseconds while the process already sleeps in poll and the server on the clock sees
 * nothing yet. So a thread that connects or sends to a loopback peer holds the clock (its
 * slot due at once) until the kernel has delivered it: the handshake done, every byte sent
 * acknowledged. A loopback peer acknowledges on receipt; the hold is bounded all the same. */
#include "vtime.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define VT_NET_FDS 4096
#define VT_WIRE_MAX_NS 1000000000 /* real time: a hold that long is a peer that is not there */
#define VT_WIRE_NAP_NS 20000      /* real time between looks, so that ksoftirqd gets the CPU */

static int (*real_connect)(int, const struct sockaddr *, socklen_t);
static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_close)(int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static int (*real_nanosleep_net)(const struct timespec *, struct timespec *);

/* Descriptors connected (or connecting) to a loopback peer. */
static uint64_t vt_lo[VT_NET_FDS / 64];

static int vt_lo_has(int fd)
{
	return fd >= 0 && fd < VT_NET_FDS &&
	       (__atomic_load_n(&vt_lo[fd / 64], __ATOMIC_RELAXED) >> (fd % 64) & 1);
}

static void vt_lo_mark(int fd, int on)
{
	if (fd < 0 || fd >= VT_NET_FDS)
		return;
	uint64_t bit = (uint64_t)1 << (fd % 64);
	if (on)
		__atomic_fetch_or(&vt_lo[fd / 64], bit, __ATOMIC_RELAXED);
	else if (vt_lo_has(fd))
		__atomic_fetch_and(&vt_lo[fd / 64], ~bit, __ATOMIC_RELAXED);
}

static int vt_loopback(const struct sockaddr *sa, socklen_t len)
{
	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

/* vt_on_wire reports whether fd's handshake or sent bytes are still on their way. */
static int vt_on_wire(int fd)
{
	struct tcp_info ti;
	socklen_t l = sizeof ti;
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &l) != 0)
		return 0; /* not TCP (a UDP or reused descriptor) */
	return ti.tcpi_state == TCP_SYN_SENT || ti.tcpi_unacked > 0;
}

/* vt_await_wire holds the clock while fd's handshake or sent bytes are on their way. */
static void vt_await_wire(int fd)
{
	if (!vt_on || !vt_lo_has(fd))
		return;
	int e = errno;
	if (vt_on_wire(fd)) {
		struct vt_reg r;
		vt_reg_begin(&r, VT_SLOT_IO, 0); /* due: the clock waits */
		int64_t end = vt_real_mono() + VT_WIRE_MAX_NS;
		struct timespec nap = {0, VT_WIRE_NAP_NS};
		while (vt_on_wire(fd) && vt_real_mono() < end)
			REAL(real_nanosleep_net, "nanosleep")(&nap, NULL);
		vt_reg_end(&r);
	}
	errno = e;
}

int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	REAL(real_connect, "connect");
	if (!vt_on)
		return real_connect(fd, sa, len);
	int lo = vt_loopback(sa, len);
	vt_lo_mark(fd, lo);
	if (!lo)
		return real_connect(fd, sa, len);
	/* A blocking connect sleeps in the kernel until the handshake is done. */
	struct vt_reg r;
	vt_reg_begin(&r, VT_SLOT_IO, 0);
	int rc = real_connect(fd, sa, len);
	int e = errno;
	vt_reg_end(&r);
	if (rc == -1 && e == EINPROGRESS)
		vt_await_wire(fd);
	errno = e;
	return rc;
}

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	ssize_t rc = REAL(real_send, "send")(fd, buf, n, flags);
	if (rc > 0)
		vt_await_wire(fd);
	return rc;
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *sa,
	       socklen_t len)
{
	ssize_t rc = REAL(real_sendto, "sendto")(fd, buf, n, flags, sa, len);
	if (rc > 0)
		vt_await_wire(fd);
	return rc;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	ssize_t rc = REAL(real_sendmsg, "sendmsg")(fd, msg, flags);
	if (rc > 0)
		vt_await_wire(fd);
	return rc;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	ssize_t rc = REAL(real_write, "write")(fd, buf, n);
	if (rc > 0 && vt_lo_has(fd))
		vt_await_wire(fd);
	return rc;
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	ssize_t rc = REAL(real_writev, "writev")(fd, iov, cnt);
	if (rc > 0 && vt_lo_has(fd))
		vt_await_wire(fd);
	return rc;
}

int close(int fd)
{
	vt_lo_mark(fd, 0);
	return REAL(real_close, "close")(fd);
}

/* bash's /dev/tcp connects on one descriptor and moves the socket to the script's. */
int dup2(int old, int new)
{
	int rc = REAL(real_dup2, "dup2")(old, new);
	if (rc >= 0 && old != new)
		vt_lo_mark(new, vt_lo_has(old));
	return rc;
}

int dup3(int old, int new, int flags)
{
	int rc = REAL(real_dup3, "dup3")(old, new, flags);
	if (rc >= 0)
		vt_lo_mark(new, vt_lo_has(old));
	return rc;
}
