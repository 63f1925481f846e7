// SPDX-License-Identifier: GPL-2.0-only
/*
 * rdma-session adapter: multipath sessions of connected QPs (ABI 1.6,
 * docs/specs/rdma-session.rst "Multipath session groups").
 *
 * The administrator sets how many sessions (paths) a connection gets and
 * which UDP source ports the driver may take, with module parameters
 * (writable in /sys/module/rdma_session/parameters, read whenever a
 * connected QP gets its primary path): the rdma tool has no attribute
 * for either, and sysfs parameters are what an administrator has without
 * new tooling.
 *
 * With paths = N > 1 the primary path of an RC, UC or XRC QP gets N
 * sessions of its own, on N distinct source ports from port_min ..
 * port_max.  Each port is reserved in the guest's UDP port space of the
 * adapter's network namespace by a kernel UDP socket bound to it for the
 * session's lifetime (IPv6 and IPv4 alike), so no other UDP user of the
 * guest gets it; a port already taken is skipped.  The sessions form a
 * spreading group (RS_GROUP_ROUND_ROBIN) bound to the QP.  The
 * application may switch the QP to active-backup
 * (rsdv_modify_qp_path_policy(), driver input of modify_qp): the driver
 * then makes an active-backup group of the same sessions and binds that.
 * User space never names a session or a port.
 */
#include <linux/dma-mapping.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/moduleparam.h>
#include <linux/net.h>
#include <linux/netdevice.h>
#include <net/net_namespace.h>
#include <net/sock.h>
#include <rdma/ib_verbs.h>

#include "rdma_session_ib.h"
#include "rdma_session_com_cmd.h"
#include "hw/rdma-session/rdma-session-uverbs.h"

static unsigned int rs_paths = 1;
static unsigned int rs_port_min = 49152;
static unsigned int rs_port_max = 65535;

static int rs_paths_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, RS_MAX_GROUP_SESSIONS);
}

static const struct kernel_param_ops rs_paths_ops = {
	.set = rs_paths_set,
	.get = param_get_uint,
};

module_param_cb(paths, &rs_paths_ops, &rs_paths, 0644);
MODULE_PARM_DESC(paths,
		 "UDP sessions (paths) per RC/UC/XRC connection, 1-8 (default 1)");

static int rs_port_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1024, 65535);
}

static const struct kernel_param_ops rs_port_ops = {
	.set = rs_port_set,
	.get = param_get_uint,
};

module_param_cb(port_min, &rs_port_ops, &rs_port_min, 0644);
MODULE_PARM_DESC(port_min,
		 "lowest UDP source port reserved for sessions (default 49152)");
module_param_cb(port_max, &rs_port_ops, &rs_port_max, 0644);
MODULE_PARM_DESC(port_max,
		 "highest UDP source port reserved for sessions (default 65535)");

/* Where the search for free ports goes on; under rs_port_lock. */
static DEFINE_MUTEX(rs_port_lock);
static u32 rs_port_next;

unsigned int rs_path_count(void)
{
	return READ_ONCE(rs_paths);
}

/*
 * Reserve UDP port @port in @net: a kernel socket bound to it on every
 * address, dual-stack unless the kernel has no IPv6.
 */
static int rs_port_bind(struct net *net, u16 port, struct socket **out)
{
	struct sockaddr_in6 sin6 = {
		.sin6_family = AF_INET6,
		.sin6_port = htons(port),
		.sin6_addr = IN6ADDR_ANY_INIT,
	};
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	struct socket *sock;
	int err;

	err = sock_create_kern(net, AF_INET6, SOCK_DGRAM, IPPROTO_UDP, &sock);
	if (!err) {
		sock->sk->sk_ipv6only = false;
		err = kernel_bind(sock, (struct sockaddr *)&sin6, sizeof(sin6));
	} else {
		err = sock_create_kern(net, AF_INET, SOCK_DGRAM, IPPROTO_UDP,
				       &sock);
		if (err)
			return err;
		err = kernel_bind(sock, (struct sockaddr *)&sin, sizeof(sin));
	}
	if (err) {
		sock_release(sock);
		return err;
	}
	*out = sock;
	return 0;
}

static void rs_path_free(struct rs_ibdev *dev, struct rs_session *s)
{
	u32 i;

	if (s->ab_group)
		rs_com_destroy_session_group(dev, s->ab_group);
	if (s->group)
		rs_com_destroy_session_group(dev, s->group);
	for (i = 0; i < s->nsess; i++) {
		rs_com_destroy_session(dev, s->sess[i]);
		sock_release(s->socks[i]);
	}
	kfree(s);
}

static int rs_path_group(struct rs_ibdev *dev, struct rs_session *s,
			 u8 policy, u32 *group)
{
	struct rs_cmd_create_session_group params = {};
	struct rs_com_create_result result;
	int err;

	memcpy(params.session, s->sess, s->nsess * sizeof(s->sess[0]));
	params.nsessions = s->nsess;
	params.policy = policy;
	err = rs_com_create_session_group(dev, &params, &result);
	if (!err)
		*group = result.handle;
	return err;
}

/*
 * The sessions of a new primary path @ah: rs_path_count() of them, each
 * on a reserved port, in a spreading group.
 */
struct rs_session *rs_path_get(struct rs_ibdev *dev,
			       const struct rdma_ah_attr *ah)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(ah);
	struct net_device *nd = dev->rdev->netdev;
	struct net *net = nd ? dev_net(nd) : &init_net;
	u32 n = rs_path_count(), lo = READ_ONCE(rs_port_min);
	u32 hi = READ_ONCE(rs_port_max), span, tries;
	struct rs_cmd_create_session params;
	struct rs_com_create_result result;
	struct rs_session *s;
	int err = 0;

	if (lo > hi)
		return ERR_PTR(-EINVAL);
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return ERR_PTR(-ENOMEM);
	refcount_set(&s->refs, 1);
	memcpy(s->dst_ip, grh->dgid.raw, sizeof(s->dst_ip));
	s->gid_index = grh->sgid_index;
	s->policy = RS_UVERBS_PATH_SPREAD;

	span = hi - lo + 1;
	mutex_lock(&rs_port_lock);
	for (tries = 0; tries < span && s->nsess < n; tries++) {
		u16 port = lo + rs_port_next++ % span;
		struct socket *sock;

		if (rs_port_bind(net, port, &sock))
			continue;	/* someone else's: skip it */
		memset(&params, 0, sizeof(params));
		memcpy(params.dst_ip, grh->dgid.raw, 16);
		memcpy(params.dmac, ah->roce.dmac, ETH_ALEN);
		params.src_port = port;
		params.dst_port = 4791;
		params.gid_index = grh->sgid_index;
		err = rs_com_create_session(dev, &params, &result);
		if (err) {
			sock_release(sock);
			if (err == -EEXIST) {
				err = 0;
				continue;
			}
			break;
		}
		s->sess[s->nsess] = result.handle;
		s->ports[s->nsess] = port;
		s->socks[s->nsess] = sock;
		s->nsess++;
	}
	mutex_unlock(&rs_port_lock);
	if (!err && s->nsess < n) {
		ibdev_warn_ratelimited(&dev->ibdev,
				       "only %u of %u UDP ports free in %u-%u\n",
				       s->nsess, n, lo, hi);
		err = -EADDRNOTAVAIL;
	}
	if (!err)
		err = rs_path_group(dev, s, RS_GROUP_ROUND_ROBIN, &s->group);
	if (err) {
		rs_path_free(dev, s);
		return ERR_PTR(err);
	}
	s->session = s->sess[0];
	s->src_port = s->ports[0];
	atomic64_add(n, &dev->cnt[RS_CNT_SESSIONS]);
	ibdev_dbg(&dev->ibdev, "path group %#x: %u sessions, ports %u..\n",
		  s->group, n, s->ports[0]);
	return s;
}

void rs_path_put(struct rs_ibdev *dev, struct rs_session *s)
{
	if (refcount_dec_and_test(&s->refs))
		rs_path_free(dev, s);
}

/*
 * rsdv_modify_qp_path_policy(): bind QP @qp to the group of its sessions
 * with @policy, made on first use.  A QP with one session has nothing to
 * choose.
 */
int rs_path_set_policy(struct rs_ibdev *dev, struct rs_qp *qp, u32 policy)
{
	bool ab = policy == RS_UVERBS_PATH_ACTIVE_BACKUP;
	struct rs_cmd_modify_qp params = {};
	struct rs_qp_attr *a;
	struct rs_session *s;
	dma_addr_t dma;
	int err = 0;

	if (policy != RS_UVERBS_PATH_SPREAD && !ab)
		return -EINVAL;
	mutex_lock(&dev->sess_lock);
	s = qp->sess;
	if (!s) {
		err = -EINVAL;		/* no primary path yet */
		goto out;
	}
	if (!s->nsess || s->policy == policy)
		goto out;
	if (ab && !s->ab_group) {
		err = rs_path_group(dev, s, RS_GROUP_ACTIVE_BACKUP,
				    &s->ab_group);
		if (err)
			goto out;
	}
	a = dma_alloc_coherent(rs_dma_dev(dev), sizeof(*a), &dma, GFP_KERNEL);
	if (!a) {
		err = -ENOMEM;
		goto out;
	}
	a->session_group = ab ? s->ab_group : s->group;
	params.attr_addr = dma;
	params.handle = qp->handle;
	params.attr_mask = RS_QP_ATTR_SESSION_GROUP;
	err = rs_com_modify_qp(dev, &params);
	dma_free_coherent(rs_dma_dev(dev), sizeof(*a), a, dma);
	if (!err)
		s->policy = policy;
out:
	mutex_unlock(&dev->sess_lock);
	return err;
}
