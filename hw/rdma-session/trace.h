#include "trace/trace-hw_rdma_session.h"
