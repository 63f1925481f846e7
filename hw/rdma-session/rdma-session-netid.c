/*
 * rdma-session adapter: host-assigned network identities and their key
 * tables.
 *
 * The host, not the guest, decides which network identity (VNI) each of
 * the adapter's addresses belongs to: properties vni (identity 0, the
 * default) and netids ("SUBNET=VNI,...": identities 1..7), both settable
 * at run time with qom-set.  A GID is in the identity whose subnet holds
 * its address.  Each identity has its own key table: a key is allocated
 * in the identity of its PD, local accesses resolve it in the QP's PD's
 * identity, remote ones in the identity of the GID the packet arrived on,
 * so one key value can name different memory in two identities and a key
 * of one is never found through another.
 *
 * The key slots stay one table (c->mrs, max-mrs).  Identity 0's key index
 * is the slot's own index, as before identities existed; identities 1..7
 * each map their own key index space onto slots.  A key's admin handle
 * (DEREG_MR & co.) is always slot-based, so it names one slot whatever
 * identity the key is in.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "migration/vmstate.h"
#include "rdma-session-core.h"
#include "trace.h"

#define RS_NETID_SLOT_MASK  0x00ffffffu
#define RS_NETID_TAG_SHIFT  24
/* RSMr.tag0 before a load that did not send it. */
#define RS_TAG0_UNSET       0x100

static const uint8_t rs_v4_mapped[12] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
};

/* Whether the first len bits of a and b are equal. */
static bool rs_prefix_eq(const uint8_t *a, const uint8_t *b, unsigned len)
{
    unsigned bytes = len / 8, bits = len % 8;

    if (memcmp(a, b, bytes)) {
        return false;
    }
    return !bits || !((a[bytes] ^ b[bytes]) & (0xff00 >> bits));
}

/* The identity a GID's address belongs to: the one whose subnet has it. */
uint8_t rs_netid_of_gid(RSCore *c, const uint8_t *gid)
{
    unsigned n;

    for (n = 1; n < RS_MAX_NETIDS; n++) {
        if (c->netid[n].valid &&
            rs_prefix_eq(gid, c->netid[n].prefix, c->netid[n].prefix_len)) {
            return n;
        }
    }
    return 0;
}

/* The key slot index @key has in identity @n; 0 if it names none. */
uint32_t rs_netid_slot(RSCore *c, unsigned n, uint32_t key)
{
    uint32_t k = key >> RS_MKEY_INDEX_SHIFT;

    if (k == 0 || k >= c->p.max_mrs || n >= RS_MAX_NETIDS) {
        return 0;
    }
    if (n == 0) {
        return c->mrs[k].netid == 0 ? k : 0;
    }
    return c->netid[n].map ? c->netid[n].map[k] & RS_NETID_SLOT_MASK : 0;
}

/*
 * The table a key resolves in for QP qp: the arrival GID's identity for a
 * remote access (gid_index >= 0), the QP's PD's for a local one.
 * RS_MAX_NETIDS (no table) for a GID that is not there.
 */
unsigned rs_key_netid(RSCore *c, const RSQp *qp, int gid_index)
{
    if (gid_index < 0) {
        return c->pds[qp->pd].netid;
    }
    return rs_gid_valid(c, gid_index) ? c->gids[gid_index].netid :
                                        RS_MAX_NETIDS;
}

uint32_t rs_mkey_key(const RSMr *mr)
{
    return (mr->kidx << RS_MKEY_INDEX_SHIFT) | mr->tag;
}

uint32_t rs_mkey_handle(RSCore *c, const RSMr *mr)
{
    return ((uint32_t)(mr - c->mrs) << RS_MKEY_INDEX_SHIFT) | mr->tag;
}

/*
 * Give valid slot idx (its pd set) a key in its PD's identity: key index
 * and a new tag.  Identity 0 uses the slot's index and tag; another
 * identity the first free index of its table and that index's last tag
 * plus one.  There is always a free index: the table has as many as there
 * are slots.  Returns the key.
 *
 * Each key index of each identity has its own tag sequence, so a freed
 * key comes back only after its index has had 255 more keys.  A slot
 * lent to another identity keeps identity 0's last tag aside (tag0) and
 * gets it back when that key is released (rs_mkey_release): identity 0's
 * sequence on the slot goes on where it was, whatever other identities
 * did with the slot in between.
 */
uint32_t rs_mkey_assign(RSCore *c, uint32_t idx)
{
    RSMr *mr = &c->mrs[idx];
    unsigned n = c->pds[mr->pd].netid;
    uint32_t *map = c->netid[n].map;
    uint32_t k;

    mr->netid = n;
    mr->kidx = n ? 0 : idx;
    if (n == 0) {
        mr->tag++;
        return rs_mkey_key(mr);
    }
    mr->tag0 = mr->tag;
    for (k = 1; k < c->p.max_mrs && (map[k] & RS_NETID_SLOT_MASK); k++) {
        /* first free index */
    }
    if (k == c->p.max_mrs) {
        /* Cannot happen (see above); index 0 resolves nowhere. */
        return rs_mkey_key(mr) & RS_MKEY_TAG_MASK;
    }
    mr->tag = (map[k] >> RS_NETID_TAG_SHIFT) + 1;
    mr->kidx = k;
    map[k] = idx | ((uint32_t)mr->tag << RS_NETID_TAG_SHIFT);
    trace_rdma_session_netid_key(n, rs_mkey_key(mr), idx);
    return rs_mkey_key(mr);
}

/*
 * Slot idx is freed: its key index is free again, its last tag kept; a
 * slot lent to another identity has identity 0's last tag back.
 */
void rs_mkey_release(RSCore *c, uint32_t idx)
{
    RSMr *mr = &c->mrs[idx];

    if (mr->netid && mr->netid < RS_MAX_NETIDS && c->netid[mr->netid].map &&
        mr->kidx < c->p.max_mrs) {
        c->netid[mr->netid].map[mr->kidx] =
            (uint32_t)mr->tag << RS_NETID_TAG_SHIFT;
    }
    if (mr->netid) {
        mr->tag = mr->tag0;
    }
    mr->netid = 0;
    mr->kidx = 0;
    mr->tag0 = 0;
}

/* Re-evaluate which identity every GID is in (the host changed them). */
static void rs_netid_assign_gids(RSCore *c)
{
    uint32_t i;

    for (i = 0; i < c->p.max_gids; i++) {
        RSGid *g = &c->gids[i];

        if (g->valid) {
            g->netid = rs_netid_of_gid(c, g->gid);
            g->vni = c->netid[g->netid].vni;
        }
    }
}

void rs_netid_gid_added(RSCore *c, uint32_t idx)
{
    RSGid *g = &c->gids[idx];

    g->netid = rs_netid_of_gid(c, g->gid);
    g->vni = c->netid[g->netid].vni;
    trace_rdma_session_netid_gid(idx, g->netid, g->vni);
}

static void rs_netid_alloc_maps(RSCore *c)
{
    unsigned n;

    for (n = 1; n < RS_MAX_NETIDS; n++) {
        if (c->netid[n].valid && !c->netid[n].map) {
            c->netid[n].map = g_new0(uint32_t, c->p.max_mrs);
        }
    }
}

static bool rs_netid_realize(RSCore *c, Error **errp)
{
    c->netid[0].valid = true;
    rs_netid_alloc_maps(c);
    return true;
}

static void rs_netid_unrealize(RSCore *c)
{
    unsigned n;

    for (n = 0; n < RS_MAX_NETIDS; n++) {
        g_free(c->netid[n].map);
        c->netid[n].map = NULL;
    }
}

/* Every key table empty (the key slots were cleared). */
static void rs_netid_reset(RSCore *c)
{
    unsigned n;

    for (n = 1; n < RS_MAX_NETIDS; n++) {
        if (c->netid[n].map) {
            memset(c->netid[n].map, 0, sizeof(uint32_t) * c->p.max_mrs);
        }
    }
}

/* PDs and keys of identity n. */
static void rs_netid_count(RSCore *c, unsigned n, uint32_t *npds,
                           uint32_t *nkeys, uint32_t *ngids)
{
    uint32_t i;

    *npds = *nkeys = *ngids = 0;
    for (i = 1; i < c->p.max_pds; i++) {
        *npds += c->pds[i].valid && c->pds[i].netid == n;
    }
    for (i = 1; i < c->p.max_mrs; i++) {
        *nkeys += c->mrs[i].valid && c->mrs[i].netid == n;
    }
    for (i = 0; i < c->p.max_gids; i++) {
        *ngids += c->gids[i].valid && c->gids[i].netid == n;
    }
}

/* "a.b.c.d/len" or "ipv6/len" into GID form; false if malformed. */
static bool rs_netid_parse_subnet(const char *s, uint8_t *prefix,
                                  uint8_t *plen)
{
    g_autofree char *addr = NULL;
    const char *slash = strchr(s, '/');
    uint64_t len;
    bool v4;

    if (!slash || qemu_strtou64(slash + 1, NULL, 10, &len)) {
        return false;
    }
    addr = g_strndup(s, slash - s);
    memset(prefix, 0, 16);
    v4 = !strchr(addr, ':');
    if (v4) {
        if (len > 32 || inet_pton(AF_INET, addr, prefix + 12) != 1) {
            return false;
        }
        memcpy(prefix, rs_v4_mapped, sizeof(rs_v4_mapped));
        len += 96;
    } else if (len > 128 || inet_pton(AF_INET6, addr, prefix) != 1) {
        return false;
    }
    /* No host bits: the subnet is what it says. */
    for (unsigned b = len; b < 128; b++) {
        if (prefix[b / 8] & (0x80 >> (b % 8))) {
            return false;
        }
    }
    *plen = len;
    return true;
}

/*
 * Parse "SUBNET=VNI[,SUBNET=VNI...]" (or ';' between) into identities
 * 1.. of t (identity 0 untouched); checks each identity, VNIs distinct,
 * subnets disjoint.
 */
static bool rs_netid_parse(const char *str, RSNetid *t, Error **errp)
{
    g_auto(GStrv) items = NULL;
    unsigned n, i;

    for (n = 1; n < RS_MAX_NETIDS; n++) {
        t[n].valid = false;
        t[n].prefix_len = 0;
        t[n].vni = 0;
        memset(t[n].prefix, 0, 16);
    }
    /* ';' too: a ',' in a -device value must be written ',,'. */
    items = *str ? g_strsplit_set(str, ",;", -1) : g_new0(char *, 1);
    for (i = 0; items[i]; i++) {
        const char *eq = strchr(items[i], '=');
        g_autofree char *subnet = NULL;
        uint64_t vni;

        n = i + 1;
        if (n >= RS_MAX_NETIDS) {
            error_setg(errp, "rdma-session: netids: at most %d identities",
                       RS_MAX_NETIDS - 1);
            return false;
        }
        subnet = eq ? g_strndup(items[i], eq - items[i]) : NULL;
        if (!eq || !rs_netid_parse_subnet(subnet, t[n].prefix,
                                          &t[n].prefix_len)) {
            error_setg(errp, "rdma-session: netids: '%s': expected "
                       "SUBNET=VNI, SUBNET an IPv4 or IPv6 prefix "
                       "(address/length, no host bits)", items[i]);
            return false;
        }
        if (qemu_strtou64(eq + 1, NULL, 0, &vni) || vni >= (1u << 24)) {
            error_setg(errp, "rdma-session: netids: '%s': the VNI must be "
                       "0-16777215", items[i]);
            return false;
        }
        t[n].vni = vni;
        t[n].valid = true;
    }
    for (n = 1; n < RS_MAX_NETIDS; n++) {
        for (i = 0; t[n].valid && i < n; i++) {
            if (!t[i].valid) {
                continue;
            }
            if (t[i].vni == t[n].vni) {
                error_setg(errp, "rdma-session: netids: identities %u and %u "
                           "have the same VNI %u", i, n, t[n].vni);
                return false;
            }
            if (i && rs_prefix_eq(t[i].prefix, t[n].prefix,
                                  MIN(t[i].prefix_len, t[n].prefix_len))) {
                error_setg(errp, "rdma-session: netids: the subnets of "
                           "identities %u and %u overlap", i, n);
                return false;
            }
        }
    }
    return true;
}

/*
 * Make t the identities.  On a realized device an identity that would go
 * away must have no PDs or keys; GIDs are re-evaluated and the driver
 * hears of every identity that changed (RS_EV_NETID_CHANGED).
 */
static bool rs_netid_apply(RSCore *c, RSNetid *t, Error **errp)
{
    bool realized = c->realized;
    bool changed[RS_MAX_NETIDS];
    unsigned n;

    for (n = 0; n < RS_MAX_NETIDS; n++) {
        uint32_t npds, nkeys, ngids;

        if (!realized || !c->netid[n].valid || t[n].valid) {
            continue;
        }
        rs_netid_count(c, n, &npds, &nkeys, &ngids);
        if (npds || nkeys) {
            error_setg(errp, "rdma-session: identity %u has %u PDs and %u "
                       "keys: it cannot be removed", n, npds, nkeys);
            return false;
        }
    }
    for (n = 0; n < RS_MAX_NETIDS; n++) {
        changed[n] = c->netid[n].valid != t[n].valid ||
                     c->netid[n].vni != t[n].vni ||
                     c->netid[n].prefix_len != t[n].prefix_len ||
                     memcmp(c->netid[n].prefix, t[n].prefix, 16);
        c->netid[n].valid = t[n].valid;
        c->netid[n].vni = t[n].vni;
        c->netid[n].prefix_len = t[n].prefix_len;
        memcpy(c->netid[n].prefix, t[n].prefix, 16);
        if (changed[n]) {
            trace_rdma_session_netid_set(n, t[n].valid, t[n].vni,
                                         t[n].prefix_len);
        }
    }
    if (!realized) {
        return true;
    }
    rs_netid_alloc_maps(c);
    rs_netid_assign_gids(c);
    for (n = 0; n < RS_MAX_NETIDS; n++) {
        if (changed[n]) {
            rs_core_raise_event(c, RS_EV_NETID_CHANGED, n, c->netid[n].vni);
        }
    }
    return true;
}

static void rs_netid_copy(RSCore *c, RSNetid *t)
{
    unsigned n;

    for (n = 0; n < RS_MAX_NETIDS; n++) {
        t[n] = c->netid[n];
        t[n].map = NULL;
    }
    t[0].valid = true;
}

bool rs_netid_set_list(RSCore *c, const char *str, Error **errp)
{
    RSNetid t[RS_MAX_NETIDS];

    rs_netid_copy(c, t);
    return rs_netid_parse(str, t, errp) && rs_netid_apply(c, t, errp);
}

bool rs_netid_set_vni(RSCore *c, uint64_t vni, Error **errp)
{
    RSNetid t[RS_MAX_NETIDS];
    unsigned n;

    if (vni >= (1u << 24)) {
        error_setg(errp, "rdma-session: vni must be 0-16777215");
        return false;
    }
    rs_netid_copy(c, t);
    t[0].vni = vni;
    for (n = 1; n < RS_MAX_NETIDS; n++) {
        if (t[n].valid && t[n].vni == vni) {
            error_setg(errp, "rdma-session: identities 0 and %u would have "
                       "the same VNI %u", n, (unsigned)vni);
            return false;
        }
    }
    return rs_netid_apply(c, t, errp);
}

/* Identity n's subnet, "10.78.0.0/24" or "fd00::/64". */
char *rs_netid_subnet_str(RSCore *c, unsigned n)
{
    const RSNetid *t = &c->netid[n];
    char buf[INET6_ADDRSTRLEN];
    bool v4 = t->prefix_len >= 96 &&
              !memcmp(t->prefix, rs_v4_mapped, sizeof(rs_v4_mapped));

    inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? t->prefix + 12 : t->prefix,
              buf, sizeof(buf));
    return g_strdup_printf("%s/%u", buf,
                           v4 ? t->prefix_len - 96 : t->prefix_len);
}

/* The netids property as it is now: "SUBNET=VNI,...". */
char *rs_netid_get_list(RSCore *c)
{
    GString *s = g_string_new("");
    unsigned n;

    for (n = 1; n < RS_MAX_NETIDS && c->netid[n].valid; n++) {
        g_autofree char *subnet = rs_netid_subnet_str(c, n);

        g_string_append_printf(s, "%s%s=%u", n > 1 ? "," : "", subnet,
                               c->netid[n].vni);
    }
    return g_string_free(s, false);
}

uint8_t rs_cmd_query_netid(RSCore *c, const struct rs_admin_cmd *cmd,
                           struct rs_admin_cqe *cqe)
{
    const struct rs_cmd_query *q = &cmd->query;
    uint32_t n = le32_to_cpu(q->handle);
    struct rs_netid_attr a = {};
    uint32_t npds, nkeys, ngids;

    if (n >= RS_MAX_NETIDS) {
        return RS_STATUS_BAD_HANDLE;
    }
    if (c->netid[n].valid) {
        rs_netid_count(c, n, &npds, &nkeys, &ngids);
        a.vni = cpu_to_le32(c->netid[n].vni);
        a.flags = RS_NETID_F_VALID;
        a.prefix_len = c->netid[n].prefix_len;
        a.ngids = cpu_to_le16(ngids);
        memcpy(a.prefix, c->netid[n].prefix, 16);
        a.nkeys = cpu_to_le32(nkeys);
        a.npds = cpu_to_le32(npds);
    }
    cqe->result1 = cpu_to_le32(RS_NETID_RESULT(n, c->netid[n].vni));
    return rs_write_resp(c, q, &a, sizeof(a));
}

/*
 * Migration.  The identities (the host may have changed them with
 * qom-set) and each PD's and key's identity and key index travel in
 * subsections sent only when something is not identity 0; post_load
 * checks them and rebuilds the tables before anything follows a key.
 */
static bool rs_netids_needed(void *opaque)
{
    RSCore *c = opaque;
    unsigned n;

    for (n = 1; n < RS_MAX_NETIDS; n++) {
        if (c->netid[n].valid) {
            return true;
        }
    }
    return c->netid[0].vni != 0;
}

static const VMStateDescription vmstate_rs_netid = {
    .name = "rdma-session/netid",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, RSNetid),
        VMSTATE_UINT8(prefix_len, RSNetid),
        VMSTATE_UINT8_ARRAY(prefix, RSNetid, 16),
        VMSTATE_UINT32(vni, RSNetid),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription vmstate_rs_netids = {
    .name = "rdma-session/core/netids",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_netids_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(netid, RSCore, RS_MAX_NETIDS, 1,
                             vmstate_rs_netid, RSNetid),
        VMSTATE_END_OF_LIST()
    },
};

static bool rs_pd_netid_needed(void *opaque)
{
    RSPd *pd = opaque;

    return pd->valid && pd->netid != 0;
}

const VMStateDescription vmstate_rs_pd_netid = {
    .name = "rdma-session/pd/netid",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_pd_netid_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(netid, RSPd),
        VMSTATE_END_OF_LIST()
    },
};

static bool rs_mr_netid_needed(void *opaque)
{
    RSMr *mr = opaque;

    return mr->valid && mr->netid != 0;
}

/*
 * Identity 0's tag a slot lent to another identity keeps aside, when it
 * is not the lent key's own tag (what a stream without it means: the
 * sequence then goes on from that tag, as before tag0 existed).  A
 * subsection of the key's identity subsection, so a stream that does not
 * need it loads into an older QEMU.
 */
static bool rs_mr_tag0_needed(void *opaque)
{
    RSMr *mr = opaque;

    return mr->valid && mr->netid != 0 && mr->tag0 != mr->tag;
}

static const VMStateDescription vmstate_rs_mr_tag0 = {
    .name = "rdma-session/mr/netid/tag0",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mr_tag0_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT16(tag0, RSMr),
        VMSTATE_END_OF_LIST()
    },
};

const VMStateDescription vmstate_rs_mr_netid = {
    .name = "rdma-session/mr/netid",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = rs_mr_netid_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT8(netid, RSMr),
        VMSTATE_UINT32(kidx, RSMr),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_rs_mr_tag0,
        NULL
    },
};

/* Before a load: what a stream without the subsections means. */
static void rs_netid_pre_load(RSCore *c)
{
    uint32_t i;

    for (i = 0; i < c->p.max_pds; i++) {
        c->pds[i].netid = 0;
    }
    for (i = 0; i < c->p.max_mrs; i++) {
        c->mrs[i].netid = 0;
        c->mrs[i].kidx = 0;
        c->mrs[i].tag0 = RS_TAG0_UNSET;
    }
}

/*
 * After a load, before anything is followed: the identities are sane (as
 * the property setter would have them), every PD and key is in a valid
 * identity, a key in its PD's, key indices in range and unique per
 * identity; then the GIDs' identities and the key tables are rebuilt.
 */
static bool rs_netid_post_load(RSCore *c)
{
    RSNetid t[RS_MAX_NETIDS];
    g_autofree char *list = NULL;
    unsigned n;
    uint32_t i;

    if (!c->netid[0].valid || c->netid[0].vni >= (1u << 24)) {
        return false;
    }
    for (n = 1; n < RS_MAX_NETIDS; n++) {
        const RSNetid *s = &c->netid[n];

        if (!s->valid) {
            if (s->prefix_len || s->vni) {
                return false;
            }
            continue;
        }
        if (!c->netid[n - 1].valid || s->prefix_len > 128) {
            return false;
        }
    }
    /* The same checks as the property: its own text must parse back. */
    list = rs_netid_get_list(c);
    rs_netid_copy(c, t);
    if (!rs_netid_parse(list, t, NULL)) {
        return false;
    }
    for (n = 1; n < RS_MAX_NETIDS; n++) {
        if (t[n].valid != c->netid[n].valid ||
            t[n].prefix_len != c->netid[n].prefix_len ||
            memcmp(t[n].prefix, c->netid[n].prefix, 16) ||
            t[n].vni != c->netid[n].vni ||
            (t[n].valid && t[n].vni == c->netid[0].vni)) {
            return false;
        }
    }
    for (i = 0; i < c->p.max_pds; i++) {
        if (c->pds[i].netid >= RS_MAX_NETIDS ||
            (c->pds[i].valid && !c->netid[c->pds[i].netid].valid)) {
            return false;
        }
    }
    rs_netid_alloc_maps(c);
    rs_netid_reset(c);
    for (i = 0; i < c->p.max_mrs; i++) {
        RSMr *mr = &c->mrs[i];
        uint32_t *e;

        /* tag0 only comes for a key of identity 1.. (and is a tag). */
        if (mr->tag0 != RS_TAG0_UNSET &&
            (mr->tag0 > RS_MKEY_TAG_MASK || !mr->valid || !mr->netid)) {
            return false;
        }
        if (mr->tag0 == RS_TAG0_UNSET) {
            mr->tag0 = mr->valid && mr->netid ? mr->tag : 0;
        }
        if (!mr->valid) {
            continue;
        }
        /* The PD index was checked before (rs_mkey_state_valid). */
        if (mr->netid != c->pds[mr->pd].netid) {
            return false;
        }
        if (mr->netid == 0) {
            mr->kidx = i;
            continue;
        }
        if (mr->kidx == 0 || mr->kidx >= c->p.max_mrs) {
            return false;
        }
        e = &c->netid[mr->netid].map[mr->kidx];
        if (*e & RS_NETID_SLOT_MASK) {
            return false;
        }
        *e = i | ((uint32_t)mr->tag << RS_NETID_TAG_SHIFT);
    }
    rs_netid_assign_gids(c);
    return true;
}

const RSFeature rs_feature_netid = {
    .name = "netid",
    .realize = rs_netid_realize,
    .unrealize = rs_netid_unrealize,
    .reset = rs_netid_reset,
    .pre_load = rs_netid_pre_load,
    .validate = rs_netid_post_load,
};
