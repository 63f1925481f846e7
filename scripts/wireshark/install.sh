#!/bin/bash
# Install the rdma-session dissector (rdma-session.lua) as a personal
# Wireshark Lua plugin of the calling user, so that Wireshark and tshark
# name the adapter's extension packets without -X lua_script:.
set -euo pipefail
dir=${HOME}/.local/lib/wireshark/plugins
mkdir -p "$dir"
install -m 0644 "$(dirname "$0")/rdma-session.lua" "$dir/rdma-session.lua"
echo "installed $dir/rdma-session.lua"
