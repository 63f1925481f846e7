/*
 * rdma-session adapter: query-rdma-session and info rdma-session in a
 * QEMU built without the adapter.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/qapi-commands-rdma-session.h"
#include "monitor/hmp.h"
#include "monitor/monitor.h"

RdmaSessionInfoList *qmp_query_rdma_session(const char *device, Error **errp)
{
    error_setg(errp, "this QEMU has no rdma-session adapter");
    return NULL;
}

void hmp_info_rdma_session(Monitor *mon, const QDict *qdict)
{
    monitor_printf(mon, "this QEMU has no rdma-session adapter\n");
}
