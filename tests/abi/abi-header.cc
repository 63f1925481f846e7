// SPDX-License-Identifier: (GPL-2.0-or-later OR BSD-2-Clause)
//
// The ABI header on its own as a C++ translation unit: it must be
// self-contained and valid C++11 (its size checks become static_assert),
// twice over to exercise the include guard.  Prints one TAP result.
#include "hw/rdma-session/rdma-session-abi.h"
#include "hw/rdma-session/rdma-session-abi.h"

#include <cstdio>

int main()
{
    std::printf("ok 1 - rdma-session-abi.h compiles as C++ "
                "(struct rs_admin_cmd is %u bytes)\n1..1\n",
                static_cast<unsigned>(sizeof(rs_admin_cmd)));
    return 0;
}
