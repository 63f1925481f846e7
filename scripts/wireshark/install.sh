#!/bin/bash
# Install the rdma-session dissector (rdma-session.lua) as a personal
# Wireshark Lua plugin of the calling user, so that Wireshark and tshark
# name the adapter's extension packets and decode the packets inside its
# bundles without -X lua_script:.  Once installed, a copy given with -X
# fails to load ("Lua: Error ... two protocols with the same
# description") and the installed one is used: install again after
# changing the script.
set -euo pipefail
dir=${HOME}/.local/lib/wireshark/plugins
mkdir -p "$dir"
install -m 0644 "$(dirname "$0")/rdma-session.lua" "$dir/rdma-session.lua"
echo "installed $dir/rdma-session.lua"
