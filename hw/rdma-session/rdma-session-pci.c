/*
 * rdma-session adapter: PCI/QOM glue.
 *
 * Realizes the BARs, MSI-X and PCIe capability, the network backend and
 * the QOM properties, and forwards MMIO, reset, link events and received
 * frames to the device core, which knows nothing about PCI; the core
 * transmits through rs_send().
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/iov.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "system/runstate.h"
#include "rdma-session-core.h"
#include "rdma-session-fabric.h"
#include "trace.h"

OBJECT_DECLARE_SIMPLE_TYPE(RSState, RDMA_SESSION)

struct RSState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion doorbells;
    NICConf conf;
    NICState *nic;

    RSCore core;
    VMChangeStateEntry *vmstate_change;
};

static uint64_t rs_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    RSState *s = opaque;

    return rs_core_reg_read(&s->core, addr);
}

static void rs_regs_write(void *opaque, hwaddr addr, uint64_t val,
                          unsigned size)
{
    RSState *s = opaque;

    rs_bundle_mmio_begin(&s->core);
    rs_core_reg_write(&s->core, addr, val);
    rs_bundle_mmio_end(&s->core);
}

static const MemoryRegionOps rs_regs_ops = {
    .read = rs_regs_read,
    .write = rs_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

static uint64_t rs_db_read(void *opaque, hwaddr addr, unsigned size)
{
    RS_GUEST_ERR(rdma_session_err_doorbell_read, "read of write-only "
                 "doorbell 0x%" HWADDR_PRIx, addr);
    return 0;
}

static void rs_db_write(void *opaque, hwaddr addr, uint64_t val,
                        unsigned size)
{
    RSState *s = opaque;

    rs_bundle_mmio_begin(&s->core);
    rs_core_db_write(&s->core, addr, val);
    rs_bundle_mmio_end(&s->core);
}

static const MemoryRegionOps rs_db_ops = {
    .read = rs_db_read,
    .write = rs_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

static void rs_notify(void *owner, unsigned vector)
{
    PCIDevice *pci_dev = owner;

    if (vector >= pci_dev->msix_entries_nr) {
        return;
    }
    if (msix_enabled(pci_dev)) {
        trace_rdma_session_irq(vector);
        msix_notify(pci_dev, vector);
    }
}

static void rs_sent_lan(NetClientState *nc, ssize_t len)
{
    RSState *s = qemu_get_nic_opaque(nc);

    rs_lan_tx_resume(&s->core);
}

static void rs_sent_roce(NetClientState *nc, ssize_t len)
{
    RSState *s = qemu_get_nic_opaque(nc);

    rs_engine_tx_resume(&s->core);
}

static bool rs_send(void *owner, const struct iovec *iov, int iovcnt,
                    bool roce)
{
    RSState *s = RDMA_SESSION(owner);

    return qemu_sendv_packet_async(qemu_get_queue(s->nic), iov, iovcnt,
                                   roce ? rs_sent_roce : rs_sent_lan) != 0;
}

/*
 * The migration hold sends while the VM is stopped, when QEMU's network
 * layer queues what a NIC sends until the VM runs again: its frames go to
 * the backend's receive function directly (and past any netdev filter).
 * Datagram backends only: a stream backend that took part of a frame
 * finishes it when the network layer offers the same frame again, which
 * it never would here.
 */
static bool rs_backend_datagram(NetClientState *peer)
{
    if (!peer || (!peer->info->receive && !peer->info->receive_iov)) {
        return false;
    }
    switch (peer->info->type) {
    case NET_CLIENT_DRIVER_TAP:
    case NET_CLIENT_DRIVER_DGRAM:
        return true;
    case NET_CLIENT_DRIVER_SOCKET:
        return strstr(peer->info_str, "mcast=") ||
               strstr(peer->info_str, "udp=");
    default:
        return false;
    }
}

static bool rs_send_stopped(void *owner, const struct iovec *iov, int iovcnt)
{
    RSState *s = RDMA_SESSION(owner);
    NetClientState *nc = qemu_get_queue(s->nic);
    NetClientState *peer = nc->peer;

    if (!peer || nc->link_down || peer->link_down ||
        peer->receive_disabled) {
        return false;
    }
    if (peer->info->receive_iov) {
        return peer->info->receive_iov(peer, iov, iovcnt) > 0;
    }
    return iovcnt == 1 &&
           peer->info->receive(peer, iov[0].iov_base, iov[0].iov_len) > 0;
}

static void rs_flush(void *owner)
{
    RSState *s = RDMA_SESSION(owner);

    qemu_flush_queued_packets(qemu_get_queue(s->nic));
}

/*
 * Peer-to-peer DMA reaches another PCI function's memory BARs (what a
 * p2pdma provider such as an NVMe CMB hands out), and nothing else that
 * is not RAM: not our own BARs, not I/O BARs, not chipset or host bridge
 * regions.  A BAR's subregions (an MSI-X table) count as the BAR.
 */
static bool rs_peer_region(void *owner, MemoryRegion *mr)
{
    PCIDevice *peer = (PCIDevice *)object_dynamic_cast(mr->owner,
                                                       TYPE_PCI_DEVICE);

    if (!peer || peer == owner) {
        return false;
    }
    for (MemoryRegion *m = mr; m; m = m->container) {
        for (int i = 0; i < PCI_ROM_SLOT; i++) {
            const PCIIORegion *r = &peer->io_regions[i];

            if (r->memory == m && r->addr != PCI_BAR_UNMAPPED &&
                !(r->type & PCI_BASE_ADDRESS_SPACE_IO)) {
                return true;
            }
        }
    }
    return false;
}

static bool rs_nc_can_receive(NetClientState *nc)
{
    RSState *s = qemu_get_nic_opaque(nc);

    return rs_lan_can_receive(&s->core);
}

/* A RoCEv2 frame to one of our GIDs is the engine's, any other the LAN's. */
static ssize_t rs_nc_receive_iov(NetClientState *nc, const struct iovec *iov,
                                 int iovcnt)
{
    RSState *s = qemu_get_nic_opaque(nc);

    if (rs_port_active(&s->core) && rs_resp_divert(&s->core, iov, iovcnt)) {
        return iov_size(iov, iovcnt);
    }
    return rs_lan_receive_iov(&s->core, iov, iovcnt);
}

static ssize_t rs_nc_receive(NetClientState *nc, const uint8_t *buf,
                             size_t size)
{
    const struct iovec iov = {
        .iov_base = (uint8_t *)buf,
        .iov_len = size,
    };

    return rs_nc_receive_iov(nc, &iov, 1);
}

static void rs_nc_link_status_changed(NetClientState *nc)
{
    RSState *s = qemu_get_nic_opaque(nc);

    rs_core_set_link(&s->core, !nc->link_down);
}

/* announce-self, and after a migration: where each GID is now. */
static void rs_nc_announce(NetClientState *nc)
{
    RSState *s = qemu_get_nic_opaque(nc);
    uint8_t buf[RS_ANNOUNCE_MAX];
    unsigned i;

    for (i = 0; i < s->core.p.max_gids; i++) {
        size_t len = rs_lan_announce_frame(&s->core, i, buf);

        if (len) {
            trace_rdma_session_announce(i, len);
            qemu_send_packet(nc, buf, len);
        }
    }
}

static NetClientInfo rs_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = rs_nc_can_receive,
    .receive = rs_nc_receive,
    .receive_iov = rs_nc_receive_iov,
    .link_status_changed = rs_nc_link_status_changed,
    .announce = rs_nc_announce,
};

/*
 * A VM that came in by migration starts to run: tell the driver
 * (MIGRATION_NOTICE), which may have to refresh what depends on where it
 * runs, and the peers (rs_migration_resume); QEMU's announce-self tells
 * the network.  A VM that stops to be migrated holds its peers
 * (rs_migration_hold_start) until its state is saved or it runs again.
 */
static void rs_vm_state_change(void *opaque, bool running, RunState state)
{
    RSState *s = opaque;

    if (!running) {
        if (state == RUN_STATE_FINISH_MIGRATE) {
            rs_fabric_vm_migrating(&s->core);
            rs_migration_hold_start(&s->core);
        }
        return;
    }
    rs_migration_hold_stop(&s->core);
    rs_fabric_vm_running(&s->core);
    if (s->core.migrated_in) {
        s->core.migrated_in = false;
        rs_migration_resume(&s->core);
        rs_core_raise_event(&s->core, RS_EV_MIGRATION_NOTICE, 1, 0);
    }
}

/*
 * Read-only counters (test and diagnostics), added at realize:
 * x-lan-rx-missed, and the bundle counters, which live in state realize
 * allocates and unrealize frees, so reading them is refused while the
 * device is not realized (qom-set realized=false, device_del).  They
 * stay on the object after unrealize and are not added twice.
 */
static const char *const rs_bundle_counter_name[RS_BUNDLE_COUNTERS] = {
    "x-bundle-tx", "x-bundle-tx-frames", "x-bundle-rx",
    "x-bundle-rx-dropped", "x-bundle-hello-tx", "x-bundle-hello-rx",
};

static void rs_get_bundle_counter(Object *obj, Visitor *v, const char *name,
                                  void *opaque, Error **errp)
{
    RSCore *c = &RDMA_SESSION(obj)->core;
    uint64_t val;

    if (!c->realized) {
        error_setg(errp, "rdma-session: %s: the device is not realized",
                   name);
        return;
    }
    val = *rs_bundle_counter(c, (uintptr_t)opaque);
    visit_type_uint64(v, name, &val, errp);
}

static const char *const rs_fabric_counter_name[RS_FAB_COUNTERS] = {
    "x-fabric-tx-inline", "x-fabric-tx-inline-bytes", "x-fabric-tx-ref",
    "x-fabric-tx-ref-bytes", "x-fabric-rx-inline",
    "x-fabric-rx-inline-bytes", "x-fabric-rx-ref", "x-fabric-rx-ref-bytes",
    "x-fabric-rx-dropped", "x-fabric-rx-bad-ref", "x-fabric-tx-lost",
    "x-fabric-garbage", "x-fabric-joined", "x-fabric-left", "x-fabric-full",
    "x-fabric-tx-msgs", "x-fabric-rx-msgs",
};

static void rs_get_fabric_counter(Object *obj, Visitor *v, const char *name,
                                  void *opaque, Error **errp)
{
    RSCore *c = &RDMA_SESSION(obj)->core;
    uint64_t val;

    if (!c->realized) {
        error_setg(errp, "rdma-session: %s: the device is not realized",
                   name);
        return;
    }
    val = *rs_fabric_counter(c, (uintptr_t)opaque);
    visit_type_uint64(v, name, &val, errp);
}

static void rs_add_counters(RSState *s)
{
    Object *obj = OBJECT(s);

    for (uintptr_t i = 0; s->core.p.local_fabric && i < RS_FAB_COUNTERS;
         i++) {
        if (!object_property_find(obj, rs_fabric_counter_name[i])) {
            object_property_add(obj, rs_fabric_counter_name[i], "uint64",
                                rs_get_fabric_counter, NULL, NULL,
                                (void *)i);
        }
    }

    if (!object_property_find(obj, "x-lan-rx-missed")) {
        object_property_add_uint64_ptr(obj, "x-lan-rx-missed",
                                       &s->core.lan_rx_missed,
                                       OBJ_PROP_FLAG_READ);
    }
    for (uintptr_t i = 0; i < RS_BUNDLE_COUNTERS; i++) {
        if (!object_property_find(obj, rs_bundle_counter_name[i])) {
            object_property_add(obj, rs_bundle_counter_name[i], "uint64",
                                rs_get_bundle_counter, NULL, NULL,
                                (void *)i);
        }
    }
}

static void rs_pci_realize(PCIDevice *pci_dev, Error **errp)
{
    RSState *s = RDMA_SESSION(pci_dev);
    DeviceState *dev = DEVICE(pci_dev);
    RSCore *c = &s->core;
    uint32_t nvec = c->p.num_comp_vectors + 1;

    c->owner = pci_dev;
    c->as = pci_get_address_space(pci_dev);
    c->notify = rs_notify;
    c->send = rs_send;
    c->flush = rs_flush;
    c->peer_region = rs_peer_region;
    c->guard = &dev->mem_reentrancy_guard;
    if (!rs_core_realize(c, errp)) {
        return;
    }

    pci_dev->config[PCI_INTERRUPT_PIN] = 0;
    memory_region_init_io(&s->regs, OBJECT(s), &rs_regs_ops, s,
                          "rdma-session-regs", RS_REGS_SIZE);
    pci_register_bar(pci_dev, RS_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY,
                     &s->regs);
    memory_region_init_io(&s->doorbells, OBJECT(s), &rs_db_ops, s,
                          "rdma-session-doorbells",
                          (uint64_t)c->p.db_pages * RS_DB_PAGE_SIZE);
    pci_register_bar(pci_dev, RS_BAR_DOORBELL,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->doorbells);

    if (msix_init_exclusive_bar(pci_dev, nvec, RS_BAR_MSIX, errp)) {
        rs_core_unrealize(c);
        return;
    }
    for (uint32_t i = 0; i < nvec; i++) {
        msix_vector_use(pci_dev, i);
    }
    if (pcie_endpoint_cap_init(pci_dev, 0x80) < 0) {
        error_setg(errp, "rdma-session: cannot add the PCIe capability");
        msix_uninit_exclusive_bar(pci_dev);
        rs_core_unrealize(c);
        return;
    }
    /* FLR runs the same reset as a system reset (rs_reset_hold). */
    pcie_cap_flr_init(pci_dev);

    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    c->mac = s->conf.macaddr;
    s->nic = qemu_new_nic(&rs_net_info, &s->conf,
                          object_get_typename(OBJECT(s)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), c->mac.a);
    if (rs_backend_datagram(qemu_get_queue(s->nic)->peer)) {
        c->send_stopped = rs_send_stopped;
    }
    s->vmstate_change = qemu_add_vm_change_state_handler(rs_vm_state_change,
                                                         s);
    c->link_up = !qemu_get_queue(s->nic)->link_down;
    rs_add_counters(s);
    rs_core_reset(c);
    c->realized = true;
}

/* Setting BCR_FLR in the PCIe device control resets the function. */
static void rs_pci_write_config(PCIDevice *pci_dev, uint32_t addr,
                                uint32_t val, int len)
{
    pci_default_write_config(pci_dev, addr, val, len);
    pcie_cap_flr_write_config(pci_dev, addr, val, len);
}

RSCore *rs_core_of(Object *obj)
{
    RSState *s = (RSState *)object_dynamic_cast(obj, TYPE_RDMA_SESSION);

    return s ? &s->core : NULL;
}

static void rs_pci_exit(PCIDevice *pci_dev)
{
    RSState *s = RDMA_SESSION(pci_dev);

    s->core.realized = false;
    qemu_del_vm_change_state_handler(s->vmstate_change);
    qemu_del_nic(s->nic);
    msix_uninit_exclusive_bar(pci_dev);
    rs_core_unrealize(&s->core);
}

static void rs_reset_hold(Object *obj, ResetType type)
{
    RSState *s = RDMA_SESSION(obj);

    rs_core_reset(&s->core);
}

static const VMStateDescription vmstate_rdma_session = {
    .name = "rdma-session",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, RSState),
        VMSTATE_MSIX(parent_obj, RSState),
        VMSTATE_STRUCT(core, RSState, 1, vmstate_rs_core, RSCore),
        VMSTATE_END_OF_LIST()
    },
};

static const Property rs_properties[] = {
    DEFINE_NIC_PROPERTIES(RSState, conf),
    DEFINE_PROP_UINT32("max-qps", RSState, core.p.max_qps, 256),
    DEFINE_PROP_UINT32("max-cqs", RSState, core.p.max_cqs, 256),
    DEFINE_PROP_UINT32("max-mrs", RSState, core.p.max_mrs, 1024),
    DEFINE_PROP_UINT32("max-pds", RSState, core.p.max_pds, 256),
    DEFINE_PROP_UINT32("max-ahs", RSState, core.p.max_ahs, 256),
    DEFINE_PROP_UINT32("max-sessions", RSState, core.p.max_sessions, 256),
    DEFINE_PROP_UINT32("max-session-groups", RSState, core.p.max_groups, 64),
    DEFINE_PROP_UINT32("max-gids", RSState, core.p.max_gids, 16),
    DEFINE_PROP_UINT32("max-msg-size", RSState, core.p.max_msg_size,
                       0x80000000u),
    DEFINE_PROP_UINT32("mtu", RSState, core.p.mtu, 4096),
    DEFINE_PROP_UINT32("num-comp-vectors", RSState, core.p.num_comp_vectors,
                       4),
    DEFINE_PROP_UINT32("db-pages", RSState, core.p.db_pages, 64),
    DEFINE_PROP_UINT32("max-mr-pages", RSState, core.p.max_mr_pages,
                       262144),
    DEFINE_PROP_UINT32("max-srqs", RSState, core.p.max_srqs, 256),
    DEFINE_PROP_UINT32("max-xrcds", RSState, core.p.max_xrcds, 64),
    DEFINE_PROP_UINT32("max-mcast-grps", RSState, core.p.max_mcast_grps, 32),
    DEFINE_PROP_UINT32("max-mcast-qp-attach", RSState,
                       core.p.max_mcast_qp_attach, 8),
    DEFINE_PROP_BOOL("odp", RSState, core.p.odp, true),
    DEFINE_PROP_BOOL("odp-pause", RSState, core.p.odp_pause, true),
    DEFINE_PROP_UINT32("odp-pages", RSState, core.p.odp_pages, 16384),
    DEFINE_PROP_UINT32("odp-fault-timeout", RSState,
                       core.p.odp_fault_timeout, 3000),
    DEFINE_PROP_UINT32("dc-contexts", RSState, core.p.dc_contexts, 64),
    DEFINE_PROP_UINT32("dc-idle", RSState, core.p.dc_idle_us, 1000),
    DEFINE_PROP_UINT32("path-flowlet", RSState, core.p.path_flowlet,
                       262144),
    DEFINE_PROP_UINT32("path-holddown", RSState, core.p.path_holddown_ms, 500),
    DEFINE_PROP_UINT32("x-window", RSState, core.p.window, 64),
    DEFINE_PROP_UINT32("x-fabric-window", RSState, core.p.fabric_window, 512),
    /* Test only: drop every Nth RoCE frame the engine sends (0: none). */
    DEFINE_PROP_UINT32("x-drop-tx", RSState, core.p.drop_tx, 0),
    DEFINE_PROP_UINT32("x-ack-backoff", RSState, core.p.ack_backoff, 3),
    DEFINE_PROP_BOOL("x-rxe-flush-icrc", RSState, core.p.rxe_flush_icrc,
                     false),
    DEFINE_PROP_BOOL("x-migration-hold", RSState, core.p.migration_hold,
                     true),
    DEFINE_PROP_BOOL("bundle", RSState, core.p.bundle, true),
    DEFINE_PROP_STRING("local-fabric", RSState, core.p.local_fabric),
    DEFINE_PROP_STRING("fabric-pcap", RSState, core.p.fabric_pcap),
    DEFINE_PROP_BOOL("peer-dma", RSState, core.p.peer_dma, true),
    DEFINE_PROP_BOOL("ecn", RSState, core.p.ecn, true),
    DEFINE_PROP_BOOL("db-record", RSState, core.p.db_record, true),
    DEFINE_PROP_UINT32("cnp-interval", RSState, core.p.cnp_interval_us, 50),
    DEFINE_PROP_BOOL("dcqcn", RSState, core.p.dcqcn, true),
    DEFINE_PROP_UINT32("dcqcn-line-rate", RSState, core.p.dcqcn_line_rate,
                       100000),
    DEFINE_PROP_UINT32("dcqcn-min-rate", RSState, core.p.dcqcn_min_rate, 1),
    DEFINE_PROP_UINT32("dcqcn-ai-rate", RSState, core.p.dcqcn_ai_rate, 5),
    DEFINE_PROP_UINT32("dcqcn-hai-rate", RSState, core.p.dcqcn_hai_rate, 50),
    DEFINE_PROP_UINT32("dcqcn-g", RSState, core.p.dcqcn_g, 1019),
    DEFINE_PROP_UINT32("dcqcn-initial-alpha", RSState,
                       core.p.dcqcn_initial_alpha, 1023),
    DEFINE_PROP_UINT32("dcqcn-alpha-period", RSState,
                       core.p.dcqcn_alpha_period_us, 55),
    DEFINE_PROP_UINT32("dcqcn-time-reset", RSState,
                       core.p.dcqcn_time_reset_us, 300),
    DEFINE_PROP_UINT32("dcqcn-byte-reset", RSState, core.p.dcqcn_byte_reset,
                       32767),
    DEFINE_PROP_UINT32("dcqcn-threshold", RSState, core.p.dcqcn_threshold, 5),
    DEFINE_PROP_UINT32("x-bundle-max", RSState, core.p.bundle_max, 60000),
};

/*
 * Network identities (rdma-session-netid.c): set on the command line or
 * at any time with qom-set, so they are QOM properties with their own
 * setters, not qdev ones.
 */
static char *rs_get_netids(Object *obj, Error **errp)
{
    return rs_netid_get_list(&RDMA_SESSION(obj)->core);
}

static void rs_set_netids(Object *obj, const char *str, Error **errp)
{
    rs_netid_set_list(&RDMA_SESSION(obj)->core, str, errp);
}

static void rs_get_vni(Object *obj, Visitor *v, const char *name,
                       void *opaque, Error **errp)
{
    uint32_t vni = RDMA_SESSION(obj)->core.netid[0].vni;

    visit_type_uint32(v, name, &vni, errp);
}

static void rs_set_vni(Object *obj, Visitor *v, const char *name,
                       void *opaque, Error **errp)
{
    uint32_t vni;

    if (visit_type_uint32(v, name, &vni, errp)) {
        rs_netid_set_vni(&RDMA_SESSION(obj)->core, vni, errp);
    }
}

/* What "-device rdma-session,help" and device-list-properties say. */
static const struct {
    const char *name;
    const char *desc;
} rs_property_desc[] = {
    { "max-qps", "QP table slots, DC target contexts included (2-65536)" },
    { "max-cqs", "completion queue table slots" },
    { "max-mrs", "memory key table slots (MRs, windows, indirect keys)" },
    { "max-pds", "protection domain table slots" },
    { "max-ahs", "address handle table slots" },
    { "max-sessions", "UDP session table slots" },
    { "max-session-groups", "session group table slots" },
    { "max-gids", "GID table entries (network identities)" },
    { "max-msg-size", "largest message in bytes (1-2^31)" },
    { "mtu", "largest RoCE path MTU: 256, 512, 1024, 2048 or 4096" },
    { "num-comp-vectors", "completion vectors (MSI-X vectors 1..n)" },
    { "db-pages", "4 KiB doorbell pages in BAR 2 (user contexts + 1)" },
    { "max-mr-pages", "pages all memory keys may translate together" },
    { "max-srqs", "shared receive queue table slots" },
    { "max-xrcds", "XRC domain table slots" },
    { "max-mcast-grps", "UD multicast groups" },
    { "max-mcast-qp-attach", "UD QPs attached to one multicast group" },
    { "odp", "on-demand paging (RS_CAP_ODP)" },
    { "odp-pause", "tell adapter requesters to pause during page faults" },
    { "odp-pages", "ODP translation entries (power of two, 64-2^20)" },
    { "odp-fault-timeout", "ms before an unresolved page fault fails" },
    { "dc-contexts", "DC initiators all DC targets serve at once (0-4096)" },
    { "dc-idle", "us a DC initiator stays connected without work" },
    { "path-flowlet", "bytes a QP sends on one session of its group before "
      "it moves on (0: every message)" },
    { "path-holddown", "ms before a failed session is tried again "
      "(1-60000)" },
    { "x-window", "test: RC packets in flight per QP" },
    { "x-fabric-window", "test: the same to a local fabric member (at least "
      "x-window)" },
    { "x-drop-tx", "test: drop every Nth RoCE frame sent (0: none)" },
    { "x-ack-backoff", "test: doublings of the local ACK timeout (0-6)" },
    { "x-rxe-flush-icrc", "test: RDMA FLUSH ICRC as soft-RoCE computes it" },
    { "x-migration-hold", "RNR NAKs keep peers waiting during migration" },
    { "vni", "VNI of network identity 0, the default (0-2^24-1; qom-set)" },
    { "netids", "identities 1-7: SUBNET=VNI,... e.g. 10.78.0.0/24=200 "
                "(qom-set at run time)" },
    { "bundle", "send runs of RoCE packets to adapter peers as one frame" },
    { "local-fabric", "directory of a local fabric: RoCE frames to adapters "
      "of VMs on this host that name it go over shared memory (needs the "
      "VM's RAM in a shared memfd backend)" },
    { "fabric-pcap", "pcap file of the frames that go over the local fabric "
      "(by reference: their headers)" },
    { "peer-dma", "data buffers may be in other PCI devices' memory BARs "
                  "(peer-to-peer)" },
    { "ecn", "send RoCE packets ECN-capable, answer CE marks with CNPs" },
    { "db-record", "QP doorbell records: posts without MMIO doorbells "
                   "(RS_CAP_DB_RECORD)" },
    { "cnp-interval", "microseconds between a QP's CNPs (0-1000000)" },
    { "dcqcn", "CNPs lower the QP's sending rate (DCQCN)" },
    { "dcqcn-line-rate", "DCQCN: rate of a QP without congestion, Mbps" },
    { "dcqcn-min-rate", "DCQCN: lowest rate a QP is limited to, Mbps" },
    { "dcqcn-ai-rate", "DCQCN: additive increase of the target, Mbps" },
    { "dcqcn-hai-rate", "DCQCN: hyper increase of the target, Mbps" },
    { "dcqcn-g", "DCQCN: weight of the old alpha, 1/1024 units" },
    { "dcqcn-initial-alpha", "DCQCN: alpha at the first CNP, 1/1024 units" },
    { "dcqcn-alpha-period", "DCQCN: microseconds per alpha update" },
    { "dcqcn-time-reset", "DCQCN: microseconds per rate increase stage" },
    { "dcqcn-byte-reset", "DCQCN: bytes sent per rate increase stage" },
    { "dcqcn-threshold", "DCQCN: fast recovery stages (F)" },
    { "x-bundle-max", "largest bundle frame in bytes (9000-65535)" },
};

static void rs_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(klass);

    pc->realize = rs_pci_realize;
    pc->exit = rs_pci_exit;
    pc->config_write = rs_pci_write_config;
    pc->vendor_id = RS_PCI_VENDOR_ID;
    pc->device_id = RS_PCI_DEVICE_ID;
    pc->revision = RS_PCI_REVISION;
    pc->class_id = RS_PCI_CLASS;
    pc->subsystem_vendor_id = RS_PCI_VENDOR_ID;
    pc->subsystem_id = RS_PCI_DEVICE_ID;

    dc->desc = "rdma-session RoCEv2 RDMA adapter";
    dc->vmsd = &vmstate_rdma_session;
    rc->phases.hold = rs_reset_hold;
    device_class_set_props(dc, rs_properties);
    object_class_property_add(klass, "vni", "uint32", rs_get_vni, rs_set_vni,
                              NULL, NULL);
    object_class_property_add_str(klass, "netids", rs_get_netids,
                                  rs_set_netids);
    for (size_t i = 0; i < ARRAY_SIZE(rs_property_desc); i++) {
        object_class_property_set_description(klass, rs_property_desc[i].name,
                                              rs_property_desc[i].desc);
    }
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo rs_info = {
    .name = TYPE_RDMA_SESSION,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(RSState),
    .class_init = rs_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void rs_register_types(void)
{
    type_register_static(&rs_info);
}

type_init(rs_register_types)
