/*
 * rdma-session qtests: shared helpers (registers, objects, QP state
 * walks, migration)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "rs-test.h"

const uint8_t qos_mac[6] = RS_QOS_MAC;

RsAddTestFn *rs_standalone_add;

void rs_add_standalone_test(const char *name, QOSTestFunc test_func,
                            QOSGraphTestOptions *opts)
{
    /* qos-test: the test is rdma-session-test's. */
    if (rs_standalone_add) {
        rs_standalone_add(name, test_func, opts);
    }
}

uint64_t ram_end(QRdmaSession *d)
{
    g_assert_cmphex(d->alloc->end, <, 0xe0000000ull);
    return d->alloc->end;
}

void wait_aeq_port_active(QRdmaSession *d)
{
    struct rs_event ev;

    g_assert_true(qrs_aeq_poll(d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, RS_EV_PORT_ACTIVE);
    g_assert_cmpuint(ev.handle, ==, 1);
}

void expect_event(QRdmaSession *d, uint8_t type, uint32_t handle)
{
    struct rs_event ev;

    g_assert_true(qrs_aeq_poll(d, &ev, RS_QOS_TIMEOUT_US));
    g_assert_cmpuint(ev.type, ==, type);
    g_assert_cmphex(ev.handle, ==, handle);
}

void expect_no_event(QRdmaSession *d)
{
    struct rs_event ev;

    g_assert_false(qrs_aeq_poll(d, &ev, G_USEC_PER_SEC / 20));
}

QRdmaSession *admin_setup(void *obj)
{
    QRdmaSession *d = obj;

    qrs_admin_init(d, RS_QOS_ADMQ_LOG, RS_QOS_AEQ_LOG);
    wait_aeq_port_active(d);
    return d;
}

void fill(QRdmaSession *d, uint64_t addr, uint8_t pattern, size_t len)
{
    qtest_memset(qrs_qts(d), addr, pattern, len);
}

bool is_filled(QRdmaSession *d, uint64_t addr, uint8_t pattern,
               size_t len)
{
    g_autofree uint8_t *buf = g_malloc(len);
    size_t i;

    qtest_memread(qrs_qts(d), addr, buf, len);
    for (i = 0; i < len; i++) {
        if (buf[i] != pattern) {
            return false;
        }
    }
    return true;
}

void cmd_init(struct rs_admin_cmd *cmd, uint8_t opcode)
{
    memset(cmd, 0, sizeof(*cmd));
    cmd->hdr.opcode = opcode;
}

uint8_t query_at(QRdmaSession *d, uint8_t opcode, uint32_t handle,
                 uint64_t addr, uint32_t len)
{
    struct rs_cmd_query q = {
        .resp_addr = addr, .resp_len = len, .handle = handle,
    };

    return qrs_admin_cmd(d, opcode, &q, sizeof(q), NULL, NULL);
}

void gid_v4(uint8_t gid[16], uint8_t a, uint8_t b, uint8_t c,
            uint8_t e)
{
    memset(gid, 0, 16);
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12] = a;
    gid[13] = b;
    gid[14] = c;
    gid[15] = e;
}

void add_gid_v4(QRdmaSession *d, uint32_t index, uint8_t host)
{
    struct rs_cmd_add_gid c = {
        .index = index,
        .type = RS_GID_ROCE_V2_IPV4,
        .vni = index,
    };
    uint32_t got = ~0u;

    gid_v4(c.gid, 10, 0, index, host);
    RS_ASSERT_OK(qrs_add_gid(d, &c, &got));
    g_assert_cmpuint(got, ==, index);
}

uint32_t new_pd_netid(QRdmaSession *d, uint32_t netid)
{
    struct rs_cmd_create_pd c = { .netid = cpu_to_le32(netid) };
    uint32_t h = 0;

    RS_ASSERT_OK(qrs_admin_cmd(d, RS_CMD_CREATE_PD, &c, sizeof(c), &h, NULL));
    return h;
}

/* The QOM paths of every rdma-session adapter (all are anonymous). */
GPtrArray *rs_qom_paths(QTestState *qts)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'qom-list', 'arguments':"
                           " { 'path': '/machine/peripheral-anon' } }");
    GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
    QListEntry *entry;

    g_assert_true(qdict_haskey(rsp, "return"));
    QLIST_FOREACH_ENTRY(qdict_get_qlist(rsp, "return"), entry) {
        QDict *prop = qobject_to(QDict, qlist_entry_obj(entry));

        if (!strcmp(qdict_get_str(prop, "type"), "child<rdma-session>")) {
            g_ptr_array_add(paths,
                            g_strdup_printf("/machine/peripheral-anon/%s",
                                            qdict_get_str(prop, "name")));
        }
    }
    qobject_unref(rsp);
    g_assert_cmpuint(paths->len, >, 0);
    return paths;
}

/* qom-set a string property; NULL if it worked, else QEMU's error. */
char *rs_qom_set_str(QTestState *qts, const char *path, const char *prop,
                     const char *value)
{
    QDict *rsp = qtest_qmp(qts, "{ 'execute': 'qom-set', 'arguments':"
                           " { 'path': %s, 'property': %s, 'value': %s } }",
                           path, prop, value);
    char *err = NULL;

    if (qdict_haskey(rsp, "error")) {
        err = g_strdup(qdict_get_str(qdict_get_qdict(rsp, "error"), "desc"));
    }
    qobject_unref(rsp);
    return err;
}

/* The same property on every adapter; each must take it. */
void rs_qom_set_all(QTestState *qts, const char *prop, const char *value)
{
    g_autoptr(GPtrArray) paths = rs_qom_paths(qts);
    guint i;

    for (i = 0; i < paths->len; i++) {
        g_autofree char *err = rs_qom_set_str(qts, paths->pdata[i], prop,
                                              value);

        g_assert_null(err);
    }
}

uint32_t new_pd(QRdmaSession *d)
{
    uint32_t h = 0;

    RS_ASSERT_OK(qrs_create_pd(d, &h));
    return h;
}

uint32_t new_cq(QRdmaSession *d, uint8_t log_size)
{
    uint64_t ring = qrs_alloc_zeroed(d, sizeof(struct rs_cqe) << log_size);
    uint32_t h = 0;

    RS_ASSERT_OK(qrs_create_cq(d, ring, log_size, 0, 0, &h));
    return h;
}

void qp_template(QRdmaSession *d, struct rs_cmd_create_qp *c,
                 uint8_t type, uint32_t pd, uint32_t send_cq,
                 uint32_t recv_cq)
{
    memset(c, 0, sizeof(*c));
    c->qp_type = type;
    c->pd = pd;
    c->send_cq = send_cq;
    c->recv_cq = recv_cq;
    c->sq_log_size = 4;
    c->rq_log_size = 4;
    c->max_send_sge = 2;
    c->max_recv_sge = 2;
    c->max_inline = 64;
    c->sq_addr = qrs_alloc_zeroed(d, qrs_qp_sq_bytes(c));
    c->rq_addr = qrs_alloc_zeroed(d, qrs_qp_rq_bytes(c));
}

uint32_t new_qp(QRdmaSession *d, const struct rs_cmd_create_qp *c)
{
    uint32_t h = 0, qpn = 0;

    RS_ASSERT_OK(qrs_create_qp(d, c, &h, &qpn));
    g_assert_cmphex(qpn, ==, HINDEX(h));
    return h;
}

static void std_ah(struct rs_ah_attr *ah, uint32_t gid_index)
{
    memset(ah, 0, sizeof(*ah));
    gid_v4(ah->dgid, 10, 0, 0, 2);
    ah->dmac[0] = 0x02;
    ah->dmac[5] = 0x02;
    ah->hop_limit = 64;
    ah->traffic_class = 0x28;
    ah->flow_label = STD_FLOW_LABEL;
    ah->gid_index = gid_index;
}

void std_attr(struct rs_qp_attr *a, uint8_t from, uint8_t to)
{
    memset(a, 0, sizeof(*a));
    a->qp_state = to;
    a->cur_qp_state = from;
    a->path_mtu = RS_MTU_1024;
    a->port_num = 1;
    a->qkey = STD_QKEY;
    a->rq_psn = STD_RQ_PSN;
    a->sq_psn = STD_SQ_PSN;
    a->dest_qp_num = STD_DEST_QPN;
    a->access_flags = STD_ACCESS;
    a->pkey_index = 0;
    a->max_rd_atomic = 4;
    a->max_dest_rd_atomic = 8;
    a->min_rnr_timer = 12;
    a->timeout = 14;
    a->retry_cnt = 7;
    a->rnr_retry = 6;
    std_ah(&a->ah, 0);
}

uint32_t std_mask(uint8_t type, uint8_t from, uint8_t to)
{
    bool connected = type == RS_QPT_RC || type == RS_QPT_UC;

    if (from == RS_QPS_RESET && to == RS_QPS_INIT) {
        return connected ? RC_INIT_MASK :
               type == RS_QPT_UD ? UD_INIT_MASK : GSI_INIT_MASK;
    }
    if (from == RS_QPS_INIT && to == RS_QPS_RTR) {
        return type == RS_QPT_RC ? RC_RTR_MASK :
               type == RS_QPT_UC ? UC_RTR_MASK : RS_QP_ATTR_STATE;
    }
    if (from == RS_QPS_RTR && to == RS_QPS_RTS) {
        return type == RS_QPT_RC ? RC_RTS_MASK : UD_RTS_MASK;
    }
    return RS_QP_ATTR_STATE;
}

void qp_walk(QRdmaSession *d, uint32_t qp, uint8_t type,
             uint8_t target)
{
    static const uint8_t path[] = {
        RS_QPS_RESET, RS_QPS_INIT, RS_QPS_RTR, RS_QPS_RTS, RS_QPS_SQD,
    };
    struct rs_qp_attr a;
    int i;

    if (target == RS_QPS_ERR) {
        qp_walk(d, qp, type, RS_QPS_INIT);
        std_attr(&a, RS_QPS_INIT, RS_QPS_ERR);
        RS_ASSERT_OK(qrs_modify_qp(d, qp, &a, RS_QP_ATTR_STATE));
        return;
    }
    for (i = 1; i < ARRAY_SIZE(path) && path[i - 1] != target; i++) {
        std_attr(&a, path[i - 1], path[i]);
        RS_ASSERT_OK(qrs_modify_qp(d, qp, &a,
                                   std_mask(type, path[i - 1], path[i])));
    }
}

uint8_t qp_state(QRdmaSession *d, uint32_t qp)
{
    struct rs_qp_attr a;

    RS_ASSERT_OK(qrs_query_qp(d, qp, &a));
    g_assert_cmpuint(a.cur_qp_state, ==, a.qp_state);
    return a.qp_state;
}

void dump_regs(QRdmaSession *d, uint32_t *regs)
{
    int i;

    for (i = 0; i < NREGS; i++) {
        regs[i] = qrs_readl(d, i * 4);
    }
}

void assert_regs_equal(const uint32_t *a, const uint32_t *b)
{
    int i;

    for (i = 0; i < NREGS; i++) {
        if (a[i] != b[i]) {
            g_error("register 0x%03x changed: 0x%08x -> 0x%08x",
                    i * 4, a[i], b[i]);
        }
    }
}

void assert_power_on_regs(QRdmaSession *d, uint32_t db_pages,
                          uint32_t num_msix)
{
    g_assert_cmphex(qrs_readl(d, A_RS_MAGIC), ==, RS_MAGIC);
    g_assert_cmphex(qrs_readl(d, A_RS_VERSION), ==,
                    (RS_ABI_VERSION_MAJOR << R_RS_VERSION_MAJOR_SHIFT) |
                    RS_ABI_VERSION_MINOR);
    g_assert_cmphex(qrs_readl(d, A_RS_CAPS), ==,
                    RS_CAP_RC | RS_CAP_UC | RS_CAP_UD |
                    RS_CAP_SESSION_GROUPS | RS_CAP_NETID_MKEYS |
                    RS_CAP_LAN | RS_CAP_ATOMIC | RS_CAP_SRQ |
                    RS_CAP_MW | RS_CAP_MCAST | RS_CAP_FLUSH |
                    RS_CAP_ATOMIC_WRITE | RS_CAP_XRC | RS_CAP_ODP |
                    RS_CAP_DC | RS_CAP_INDIRECT_MKEY | RS_CAP_PATTERN_MKEY |
                    RS_CAP_MULTIPATH | RS_CAP_HOST_NETID |
                    RS_CAP_DEVICE_COUNTERS | RS_CAP_COMP_CAUSE |
                    RS_CAP_REREG_MR | RS_CAP_PEER_DMA | RS_CAP_VLAN |
                    RS_CAP_ECN | RS_CAP_DB_RECORD);
    g_assert_cmpuint(qrs_readl(d, A_RS_DB_PAGES), ==, db_pages);
    g_assert_cmphex(qrs_readl(d, A_RS_CTRL), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_STATUS), ==, R_RS_STATUS_LINK_UP_MASK);
    g_assert_cmphex(qrs_readl(d, A_RS_FATAL_CODE), ==, RS_FATAL_NONE);
    g_assert_cmpuint(qrs_readl(d, A_RS_NUM_MSIX), ==, num_msix);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_BASE_HI), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_CFG), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ADMQ_CI), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ACQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ACQ_BASE_HI), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_ACQ_CFG), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_AEQ_BASE_LO), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_AEQ_BASE_HI), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_AEQ_CFG), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_AEQ_CI), ==, 0);
    g_assert_cmphex(qrs_readl(d, A_RS_MAC_LO), ==,
                    qos_mac[0] | qos_mac[1] << 8 | qos_mac[2] << 16 |
                    (uint32_t)qos_mac[3] << 24);
    g_assert_cmphex(qrs_readl(d, A_RS_MAC_HI), ==,
                    qos_mac[4] | qos_mac[5] << 8);
}

bool device_alive(QRdmaSession *d, GString *why)
{
    struct rs_admin_cmd cmd;
    struct rs_admin_cqe cqe;
    struct rs_device_attr attr;
    uint32_t status = qrs_readl(d, A_RS_STATUS);
    uint32_t index, pd;

    if ((status & (R_RS_STATUS_READY_MASK | R_RS_STATUS_FATAL_MASK)) !=
        R_RS_STATUS_READY_MASK) {
        g_string_append_printf(why, "STATUS=0x%x FATAL_CODE=%u", status,
                               qrs_readl(d, A_RS_FATAL_CODE));
        return false;
    }
    cmd_init(&cmd, RS_CMD_CREATE_PD);
    index = qrs_admin_submit(d, &cmd);
    if (!qrs_admin_poll(d, index, &cqe, RS_QOS_TIMEOUT_US)) {
        g_string_append(why, "CREATE_PD timed out");
        return false;
    }
    if (cqe.status != RS_STATUS_OK) {
        g_string_append_printf(why, "CREATE_PD: %s",
                               qrs_status_name(cqe.status));
        return false;
    }
    pd = cqe.handle;
    cmd_init(&cmd, RS_CMD_DESTROY_PD);
    cmd.destroy.handle = pd;
    index = qrs_admin_submit(d, &cmd);
    if (!qrs_admin_poll(d, index, &cqe, RS_QOS_TIMEOUT_US) ||
        cqe.status != RS_STATUS_OK) {
        g_string_append(why, "DESTROY_PD of a new PD failed");
        return false;
    }
    if (qrs_query_device(d, &attr) != RS_STATUS_OK ||
        attr.abi_version != qrs_readl(d, A_RS_VERSION)) {
        g_string_append(why, "QUERY_DEVICE failed");
        return false;
    }
    return true;
}

void assert_alive(QRdmaSession *d)
{
    g_autoptr(GString) why = g_string_new("");

    if (!device_alive(d, why)) {
        g_error("device no longer works: %s", why->str);
    }
}

void wait_msg(QRdmaSession *d, uint64_t addr, uint32_t data)
{
    int64_t end = g_get_monotonic_time() + RS_QOS_TIMEOUT_US;

    while (qtest_readl(qrs_qts(d), addr) != data) {
        if (g_get_monotonic_time() > end) {
            g_error("no MSI-X message 0x%x at 0x%" PRIx64 " (got 0x%x)",
                    data, addr, qtest_readl(qrs_qts(d), addr));
        }
    }
}

void set_link(QRdmaSession *d, bool up)
{
    qtest_qmp_assert_success(qrs_qts(d), "{ 'execute': 'set_link',"
                             "  'arguments': { 'name': %s, 'up': %i } }",
                             RS_QOS_NETDEV_ID, up);
}

uint64_t make_pbl(QRdmaSession *d, uint64_t base, uint64_t stride,
                  uint32_t npages)
{
    uint64_t pbl = qrs_alloc_zeroed(d, MAX(npages * 8, 8));
    uint32_t i;

    for (i = 0; i < npages; i++) {
        qtest_writeq(qrs_qts(d), pbl + i * 8, base + i * stride);
    }
    return pbl;
}

uint64_t make_indirect_pbl(QRdmaSession *d, uint64_t base,
                           uint32_t npages)
{
    uint32_t nchunks = DIV_ROUND_UP(npages, RS_PBL_CHUNK_ENTRIES);
    uint64_t list = qrs_alloc_zeroed(d, nchunks * 8);
    uint32_t i;

    for (i = 0; i < nchunks; i++) {
        uint32_t n = MIN(npages - i * RS_PBL_CHUNK_ENTRIES,
                         RS_PBL_CHUNK_ENTRIES);
        uint64_t chunk = qrs_alloc_zeroed(d, PAGE);
        uint32_t j;

        for (j = 0; j < n; j++) {
            qtest_writeq(qrs_qts(d), chunk + j * 8,
                         base + (uint64_t)(i * RS_PBL_CHUNK_ENTRIES + j) *
                         PAGE);
        }
        qtest_writeq(qrs_qts(d), list + i * 8, chunk);
    }
    return list;
}

uint32_t reg_mr_ok(QRdmaSession *d, const struct rs_cmd_reg_mr *c)
{
    uint32_t lkey = 0, rkey = 0;

    RS_ASSERT_OK(qrs_reg_mr(d, c, &lkey, &rkey));
    /*
     * The key (result1); the handle is the same in identity 0 and
     * slot-based in another (ABI 1.6).
     */
    g_assert_cmphex(lkey & RS_MKEY_TAG_MASK, ==, rkey & RS_MKEY_TAG_MASK);
    return rkey;
}

void ah_template(struct rs_cmd_create_ah *c, uint32_t pd,
                 uint32_t gid_index)
{
    memset(c, 0, sizeof(*c));
    gid_v4(c->dgid, 10, 0, 0, 2);
    c->dmac[0] = 0x02;
    c->dmac[5] = 0x02;
    c->hop_limit = 64;
    c->pd = pd;
    c->gid_index = gid_index;
}

void session_template(struct rs_cmd_create_session *c,
                      uint32_t gid_index, uint16_t src_port)
{
    memset(c, 0, sizeof(*c));
    gid_v4(c->dst_ip, 10, 0, 0, 2);
    c->dmac[0] = 0x02;
    c->dmac[5] = 0x02;
    c->src_port = src_port;
    c->dst_port = 4791;
    c->gid_index = gid_index;
}

uint32_t new_session(QRdmaSession *d, uint32_t gid_index,
                     uint16_t src_port)
{
    struct rs_cmd_create_session c;
    uint32_t h = 0;

    session_template(&c, gid_index, src_port);
    RS_ASSERT_OK(qrs_create_session(d, &c, &h));
    return h;
}

uint32_t new_group(QRdmaSession *d, uint8_t policy, uint32_t s0,
                   uint32_t s1)
{
    struct rs_cmd_create_session_group c = { 0 };
    uint32_t h = 0;

    c.session[0] = s0;
    c.session[1] = s1;
    c.nsessions = s1 ? 2 : 1;
    c.policy = policy;
    RS_ASSERT_OK(qrs_create_session_group(d, &c, &h));
    return h;
}

uint64_t resolve(BadFixture *f, uint64_t v)
{
    unsigned t;

    if ((v & TOK_MARK_MASK) != TOK_MARK) {
        return v;
    }
    t = (v >> 32) & 0xffff;
    g_assert_cmpuint(t, >, T_NONE);
    g_assert_cmpuint(t, <, T_COUNT);
    return f->tok[t] + (int64_t)(int32_t)(uint32_t)v;
}

void apply_patches(BadFixture *f, void *obj, size_t obj_size,
                   const BadPatch *p, int n)
{
    int i;

    for (i = 0; i < n && p[i].size; i++) {
        uint64_t v = resolve(f, p[i].value);
        uint8_t *dst = (uint8_t *)obj + p[i].off;
        uint8_t v8 = v;
        uint16_t v16 = v;
        uint32_t v32 = v;

        g_assert_cmpuint(p[i].off + p[i].size, <=, obj_size);
        switch (p[i].size) {
        case 1:
            memcpy(dst, &v8, 1);
            break;
        case 2:
            memcpy(dst, &v16, 2);
            break;
        case 4:
            memcpy(dst, &v32, 4);
            break;
        case 8:
            memcpy(dst, &v, 8);
            break;
        default:
            g_assert_not_reached();
        }
    }
}

bool mig_wait(QTestState *qts, char **err)
{
    int64_t end = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

    for (;;) {
        QDict *rsp = qtest_qmp_assert_success_ref(qts,
                                    "{ 'execute': 'query-migrate' }");
        const char *status = qdict_get_try_str(rsp, "status");

        if (status && (!strcmp(status, "completed") ||
                       !strcmp(status, "failed"))) {
            bool ok = !strcmp(status, "completed");

            *err = g_strdup(qdict_get_try_str(rsp, "error-desc") ?: "");
            qobject_unref(rsp);
            return ok;
        }
        qobject_unref(rsp);
        g_assert_cmpint(g_get_monotonic_time(), <, end);
        g_usleep(10 * 1000);
    }
}

/* Like mig_wait(), failing the test if the migration failed. */
static void wait_migration_done(QTestState *qts)
{
    g_autofree char *err = NULL;

    if (!mig_wait(qts, &err)) {
        g_error("migration failed: %s", err);
    }
}

void mig_save(QTestState *qts, const char *path)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);

    qtest_qmp_assert_success(qts, "{ 'execute': 'stop' }");
    qtest_qmp_assert_success(qts, "{ 'execute': 'migrate',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(qts);
}

/* The offset of the only occurrence of @needle in @buf. */
size_t mig_find(const uint8_t *buf, size_t len, const uint8_t *needle,
                size_t nlen)
{
    const uint8_t *p = buf, *found = NULL;

    while ((p = memmem(p, len - (p - buf), needle, nlen))) {
        g_assert_null(found);
        found = p++;
    }
    g_assert_nonnull(found);
    return found - buf;
}

/* Load @path into a new QEMU; true if the migration completed. */
bool mig_load(const char *path, char **err)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    QTestState *to = qtest_initf("%s -incoming defer",
                                 qos_get_current_command_line());
    bool ok;

    qtest_qmp_assert_success(to, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s,"
                             "                 'exit-on-error': false } }",
                             uri);
    ok = mig_wait(to, err);
    /* Still alive after a failure: it answers, then quits normally. */
    qtest_qmp_assert_success(to, "{ 'execute': 'query-status' }");
    qtest_quit(to);
    return ok;
}

QTestState *mig_move(QTestState *from, MigCmdLineFn *edit, void *opaque)
{
    g_autofree char *tmpdir = g_dir_make_tmp("rdma-session-mig-XXXXXX",
                                             NULL);
    g_autofree char *path = g_strdup_printf("%s/state", tmpdir);
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    g_autoptr(GString) cmd_line =
        g_string_new(qos_get_current_command_line());
    QTestState *to;

    mig_save(from, path);
    if (edit) {
        edit(cmd_line, opaque);
    }
    to = qtest_initf("%s -incoming defer", cmd_line->str);
    qtest_qmp_assert_success(to, "{ 'execute': 'migrate-incoming',"
                             "  'arguments': { 'uri': %s } }", uri);
    wait_migration_done(to);
    qtest_qmp_assert_success(to, "{ 'execute': 'cont' }");
    unlink(path);
    rmdir(tmpdir);
    /* The source QEMU is stopped: the next test starts a new one. */
    qos_invalidate_command_line();
    return to;
}

void mig_attach(QRdmaSession *d, QPCIBus *bus,
                const QRdmaSession *src)
{
    qrs_attach_existing(d, bus, src->dev.devfn, src->alloc);
    d->dev.msix_enabled = src->dev.msix_enabled;
    d->dev.msix_table_bar = src->dev.msix_table_bar;
    d->dev.msix_table_off = src->dev.msix_table_off;
    d->dev.msix_pba_bar = src->dev.msix_pba_bar;
    d->dev.msix_pba_off = src->dev.msix_pba_off;
    d->admq = src->admq;
    d->acq = src->acq;
    d->aeq = src->aeq;
    d->admq_log = src->admq_log;
    d->aeq_log = src->aeq_log;
    d->admq_pi = src->admq_pi;
    d->aeq_ci = src->aeq_ci;
    d->next_cmd_id = src->next_cmd_id;
    d->scratch = src->scratch;
}

uint32_t alias_mr(QRdmaSession *d, uint32_t pd, uint64_t iova,
                  uint64_t page, uint32_t len)
{
    struct rs_cmd_reg_mr c = {
        .iova = iova,
        .length = len,
        .npages = len / PAGE,
        .pd = pd,
        .page_shift = 12,
        .access = STD_ACCESS,
    };

    c.pbl_addr = make_pbl(d, page, 0, c.npages);
    return reg_mr_ok(d, &c);
}
