/*
 * rdma-session adapter: what the engine's life cycle
 * (rdma-session-engine.c) starts of the requester and responder.
 *
 * Copyright (c) 2026 rdma-session developers
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_RDMA_SESSION_ENGINE_H
#define HW_RDMA_SESSION_ENGINE_H

#include "rdma-session-core.h"

/* rdma-session-req.c: its bottom half and timers, their arming */
void rs_req_process(void *opaque);
void rs_req_retry_tick(void *opaque);
void rs_req_rnr_tick(void *opaque);
void rs_req_arm_retry(RSCore *c);

#endif
