/*
 * rdma-session-test: the rdma-session qtests that start two adapters or
 * a second QEMU (migration), as a qtest binary of its own in the shape of
 * migration-test: its own main(), one GTest case per test, one QEMU per
 * case.  The tests are those the area files register with
 * rs_add_standalone_test() (rs-test.h); qos-test runs the others.
 *
 * Each case starts the machine that the qos graph gives its tests (pc,
 * the adapter on the PCI bus with the graph's command line), lets the
 * test's "before" function edit that command line as qos-test does, and
 * calls the test with the adapter, the test's argument and the guest
 * allocator.  Paths: /ARCH/rdma-session/AREA/NAME.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqos/pci-pc.h"
#include "libqos/malloc-pc.h"
#include "rs-test.h"

/* What qos-test starts for a test of the rdma-session node. */
#define RS_MACHINE_CMD_LINE \
    "-M pc  " RS_QOS_NETDEV_OPTS " -device rdma-session," RS_QOS_DEVICE_OPTS

typedef struct RsCase {
    QOSTestFunc func;
    QOSBeforeTest before;
    void *arg;
} RsCase;

/*
 * The command line before the test's "before" function edits it, as
 * qos-test has it: a migration starts the destination with it.
 */
const char *qos_get_current_command_line(void)
{
    return RS_MACHINE_CMD_LINE;
}

/* qos-test reuses a QEMU for the next test; here every case has its own. */
void qos_invalidate_command_line(void)
{
}

static void rs_find_adapter(QPCIDevice *dev, int devfn, void *data)
{
    int *first = data;

    if (*first < 0) {
        *first = devfn;
    }
    g_free(dev);
}

static void rs_run_case(const void *data)
{
    const RsCase *c = data;
    g_autoptr(GString) cmd_line = g_string_new(RS_MACHINE_CMD_LINE);
    QGuestAllocator alloc;
    QRdmaSession d;
    QTestState *qts;
    QPCIBus *bus;
    void *arg = c->arg;
    int devfn = -1;

    if (c->before) {
        arg = c->before(cmd_line, arg);
    }
    qts = qtest_init(cmd_line->str);
    pc_alloc_init(&alloc, qts, ALLOC_NO_FLAGS);
    bus = qpci_new_pc(qts, &alloc);
    /* The graph's adapter: the first one (a test may add more). */
    qpci_device_foreach(bus, RS_PCI_VENDOR_ID, RS_PCI_DEVICE_ID,
                        rs_find_adapter, &devfn);
    g_assert_cmpint(devfn, >=, 0);
    qrs_attach_new(&d, bus, devfn, &alloc);

    c->func(&d, arg, &alloc);

    qrs_detach(&d);
    qpci_free_pc(bus);
    alloc_destroy(&alloc);
    qtest_quit(qts);
}

static void rs_add_case(const char *name, QOSTestFunc test_func,
                        QOSGraphTestOptions *opts)
{
    RsCase *c = g_new0(RsCase, 1);
    g_autofree char *path = g_strdup_printf("rdma-session/%s", name);

    c->func = test_func;
    if (opts) {
        c->before = opts->before;
        c->arg = opts->arg;
    }
    qtest_add_data_func_full(path, c, rs_run_case, g_free);
}

int main(int argc, char **argv)
{
    int ret;

    g_test_init(&argc, &argv, NULL);
    /*
     * The area files register their tests from libqos_init(): the qos
     * graph's ones go into a graph that nothing walks here, ours through
     * rs_add_case().
     */
    rs_standalone_add = rs_add_case;
    qos_graph_init();
    module_call_init(MODULE_INIT_QOM);
    module_call_init(MODULE_INIT_LIBQOS);

    ret = g_test_run();

    qos_graph_destroy();
    return ret;
}
