#!/bin/bash
# Start N guests (default 2) with the rdma-session adapter under TCG on one
# L2 segment, wait until each is ready, run a command in each, collect the
# outputs and exit statuses, and tear everything down (also on failure,
# timeout or Ctrl-C).
#
# The segment is QEMU's own multicast socket backend on the loopback
# interface (-netdev socket,mcast=230.x.y.z:port,localaddr=127.0.0.1, a
# random group per run): nothing leaves the host and no switch or tap
# device is needed.  VM i (1..N) gets MAC 52:54:00:77:00:<i> and address
# 10.77.0.<i>/24 on its interface (the adapter's Ethernet function).
#
# Each guest's /init (scripts/guest-image.sh) loads the modules, brings the
# interface up, prints "rs-init: ready", then waits on its second serial
# port until the launcher sends the command, which it sends to all VMs
# once every VM is ready.  The command runs with sh -c and sees
#   RS_VM_INDEX  its VM's index (1..N)      RS_VM_COUNT  N
#   RS_IP        its own address            RS_PEERS     the other VMs' addresses
#   RS_PEER      the next VM's address (VM N: VM 1's)   RS_IFACE  interface
# (with --netdev-user the addresses come from DHCP: RS_IP, RS_PEER and
# RS_PEERS are empty).
#
# Usage: scripts/launch-vms.sh [options] [-- extra QEMU arguments for every VM]
#   -n N               number of VMs (default 2)
#   --cmd 'CMD'        command for every VM (default: ibv_devinfo; ip -4 addr)
#   --vm-cmd I 'CMD'   command for VM I only (overrides --cmd for that VM)
#   --timeout S        seconds the commands may run (default 120)
#   --boot-timeout S   seconds for all VMs to become ready (default 120)
#   --netdev-user      each VM on its own -netdev user (slirp) instead of the
#                      shared segment; the interface is configured by DHCP
#   --dgram            two VMs only: connect them with -netdev dgram (a
#                      unicast UDP socket pair on loopback) instead of the
#                      multicast segment; each QEMU then receives only its
#                      peer's frames, not every frame on the segment
#   --stream           two VMs only: connect them with -netdev stream over
#                      a Unix socket (VM 1 listens): no frame is lost,
#                      since the stream has flow control
#   --soft-roce        every VM gets virtio-net-pci instead of the adapter
#                      and Linux soft-RoCE (rdma_rxe, device rxe0)
#   --soft-roce-vm I   only VM I does (repeatable)
#   --pcap I FILE      record VM I's network traffic, both directions, into
#                      the pcap FILE (QEMU's filter-dump on its netdev;
#                      repeatable; after VM I's k-th migration in FILE.k)
#   --shell I          interactive shell on VM I's console (the others boot
#                      and run --cmd if one was given); exit powers it off
#   --device DEV       the adapter's -device name (default rdma-session)
#   --mem MB           guest memory (default 512)
#   --migrate I@S[xN]  live-migrate VM I to a new QEMU on this host S seconds
#                      after the commands start, N times (default 1), every S
#                      seconds (repeatable, one VM each;
#                      tests/guest/migrate_vm.py; the multicast segment
#                      only); each migration's figures are printed (QEMU's
#                      and the RDMA stall VM I's peer, RS_PEER, saw at the
#                      switch, from a capture of the peer's netdev,
#                      <run>/vmJ/migrate-peer.pcap; their median and
#                      worst), and a failed migration fails the run
#   --migrate-hold S   each of those migrations holds the switchover S
#                      seconds with the VM stopped (a long downtime)
#   --migrate-drill    first try migrations that must fail and leave VM I
#                      running (another max-qps, another MAC, cancelled)
#   --no-build         do not run scripts/build-qemu.sh first
#   -q, --quiet        only the command outputs and the summary
# Environment: RS_ACCEL=kvm (KVM instead of TCG; only if it really works),
#   RS_BUILD, RS_CACHE (scripts/build-qemu.sh), RS_NO_BUILD=1 (--no-build),
#   RS_KERNEL_ARGS (more guest kernel parameters for every VM, e.g.
#   tsc=reliable: bench/run-bench.sh),
#   RS_VMS_LOGDIR (default $RS_BUILD/vms/<run>; the last run is linked as
#   $RS_BUILD/vms/last), the guest-image.sh variables.
# Each VM has a QMP socket, <run>/vmI/qmp.sock (scripts/qmp.py sends it
# commands, e.g. system_reset); its /init takes a new command on the control
# port after every boot ("go BASE64" written to <run>/vmI/ctl.in).
# Output: the command's output of each VM, each line prefixed "[vmI] ", then
# "launch-vms: vmI: exit status S" per VM and a summary line.  Exits 0 if
# every command exited 0 and every QEMU powered off cleanly, 1 otherwise,
# 2 on a setup error.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
: "${RS_BUILD:=$top/build}"
export RS_BUILD

log() { [ "$quiet" = 1 ] || printf '[launch-vms] %s\n' "$*" >&2; }
die() { printf '[launch-vms] error: %s\n' "$*" >&2; exit 2; }

n=2 cmd='ibv_devinfo; ip -4 addr' tmo=120 btmo=120 user=0 softall=0 shellvm=0
device=rdma-session mem=512 build=1 quiet=0 cmd_given=0 dgram=0 stream=0
migrate=''
mig_hold=0
mig_drill=''
declare -A mig_after=() mig_count=() mig_peer=()
[ "${RS_NO_BUILD:-0}" = 1 ] && build=0
declare -A vmcmd=() soft=() pcap=()
while [ $# -gt 0 ]; do
    case $1 in
    -n) n=${2:?}; shift ;;
    --cmd) cmd=${2?}; cmd_given=1; shift ;;
    --vm-cmd) vmcmd[${2:?}]=${3?}; shift 2 ;;
    --timeout) tmo=${2:?}; shift ;;
    --boot-timeout) btmo=${2:?}; shift ;;
    --netdev-user) user=1 ;;
    --dgram) dgram=1 ;;
    --stream) stream=1 ;;
    --soft-roce) softall=1 ;;
    --soft-roce-vm) soft[${2:?}]=1; shift ;;
    --pcap) pcap[${2:?}]=${3:?}; shift 2 ;;
    --shell) shellvm=${2:?}; shift ;;
    --device) device=${2:?}; shift ;;
    --mem) mem=${2:?}; shift ;;
    --migrate) migrate+=" ${2:?}"; shift ;;
    --migrate-hold) mig_hold=${2:?}; shift ;;
    --migrate-drill) mig_drill=--drill ;;
    --no-build) build=0 ;;
    -q|--quiet) quiet=1 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
    shift
done
case $n in ''|*[!0-9]*) die "-n needs a number" ;; esac
[ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "-n must be 1..200"
[ "$shellvm" -le "$n" ] || die "--shell $shellvm: there are only $n VMs"
[ $dgram = 0 ] || [ "$n" = 2 ] || die "--dgram connects exactly two VMs (-n 2)"
[ $stream = 0 ] || [ "$n" = 2 ] || die "--stream connects exactly two VMs (-n 2)"
[ $((dgram + stream)) -lt 2 ] || die "--dgram or --stream, not both"
for m in $migrate; do
    [[ $m =~ ^([0-9]+)@([0-9.]+)(x([0-9]+))?$ ]] ||
        die "--migrate takes I@SECONDS[xCOUNT], e.g. 1@10x3"
    v=${BASH_REMATCH[1]}
    [ "$v" -ge 1 ] && [ "$v" -le "$n" ] || die "--migrate $m: no VM $v"
    [ -z "${mig_after[$v]:-}" ] || die "--migrate $m: VM $v twice"
    mig_after[$v]=${BASH_REMATCH[2]} mig_count[$v]=${BASH_REMATCH[4]:-1}
    mig_peer[$v]=$(( v % n + 1 ))      # its RS_PEER
    [ "${mig_peer[$v]}" != "$v" ] || mig_peer[$v]=''
done
if [ -n "$migrate" ]; then
    [ $((user + dgram + stream)) = 0 ] ||
        die "--migrate needs the multicast segment (the destination joins it too)"
    [[ $mig_hold =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--migrate-hold takes seconds, e.g. 30"
fi
for i in "${!vmcmd[@]}" "${!soft[@]}" "${!pcap[@]}"; do
    [ "$i" -ge 1 ] && [ "$i" -le "$n" ] || die "VM index $i out of range 1..$n"
done

qemu="$RS_BUILD/qemu/qemu-system-x86_64"
t0=$(date +%s.%N)
if [ $build = 1 ]; then
    log "building QEMU (scripts/build-qemu.sh)"
    "$top/scripts/build-qemu.sh" qemu-system-x86_64 >&2 ||
        die "QEMU build failed (scripts/build-qemu.sh)"
fi
[ -x "$qemu" ] || die "$qemu does not exist: run scripts/build-qemu.sh"
log "building the guest image (scripts/guest-image.sh)"
img=$("$top/scripts/guest-image.sh" 2> >(if [ "$quiet" = 1 ]; then cat >/dev/null; else cat >&2; fi)) ||
    die "guest image build failed (scripts/guest-image.sh)"
eval "$img"

grep -q "^name \"$device\"" <("$qemu" -device help 2>/dev/null) ||
    die "this QEMU build has no device \"$device\" ($qemu -device help)"
fw=()
for d in /usr/share/seabios /usr/share/qemu /usr/lib/ipxe/qemu; do
    [ -d "$d" ] && fw+=(-L "$d")
done
[ -e /usr/share/seabios/bios-256k.bin ] ||
    die "SeaBIOS is missing: install Debian's seabios package (scripts/build-qemu.sh does)"
case ${RS_ACCEL:-tcg} in
kvm) acc=(-accel kvm -cpu host) ;;
tcg) acc=(-accel tcg) ;;
*) die "RS_ACCEL must be tcg or kvm, not $RS_ACCEL" ;;
esac

# --- Run directory and teardown ------------------------------------------------
mkdir -p "$RS_BUILD/vms"
run=${RS_VMS_LOGDIR:-$(mktemp -d "$RS_BUILD/vms/run.XXXXXX")}
mkdir -p "$run"
[ -n "${RS_VMS_LOGDIR:-}" ] || ln -sfn "${run##*/}" "$RS_BUILD/vms/last"
# keep the five most recent runs
find "$RS_BUILD/vms" -mindepth 1 -maxdepth 1 -type d -name 'run.*' -printf '%T@ %p\n' |
    sort -rn | tail -n +6 | cut -d' ' -f2- | xargs -r rm -rf

declare -A pid=() qrc=()
cleanup()
{
    local i left=0
    for i in "${!pid[@]}"; do
        kill -0 "${pid[$i]}" 2>/dev/null && { kill -TERM "${pid[$i]}" 2>/dev/null; left=1; }
    done
    if [ $left = 1 ]; then
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            left=0
            for i in "${!pid[@]}"; do kill -0 "${pid[$i]}" 2>/dev/null && left=1; done
            [ $left = 0 ] && break
            sleep 0.2
        done
        for i in "${!pid[@]}"; do kill -KILL "${pid[$i]}" 2>/dev/null; done
    fi
    wait 2>/dev/null
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

# --- Start the VMs ---------------------------------------------------------------
r() { echo $(( (RANDOM << 15 | RANDOM) % $1 )); }
mcast="230.$(r 256).$(r 256).$(( $(r 254) + 1 )):$(( $(r 30000) + 20000 ))"
dport=$(( $(r 30000) + 20000 ))
ip_of() { [ $user = 1 ] && return; echo "10.77.0.$1"; }
is_soft() { [ $softall = 1 ] || [ -n "${soft[$1]:-}" ]; }

start_vm()  # index
{
    local i=$1 d="$run/vm$1" mac append dev net con qmp
    mkdir -p "$d"
    mac=$(printf '52:54:00:77:00:%02x' "$i")
    # no_timer_check: on a loaded host TCG can miss the kernel's IO-APIC
    # timer check, which then panics ("IO-APIC + timer doesn't work!")
    append="console=ttyS0 panic=-1 quiet no_timer_check rs.name=vm$i${RS_KERNEL_ARGS:+ $RS_KERNEL_ARGS}"
    if [ $user = 1 ]; then
        net=(-netdev "user,id=n0")
        append+=" rs.dhcp=1"
    else
        if [ $dgram = 1 ]; then
            net=(-netdev "dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port=$((dport + i)),remote.type=inet,remote.host=127.0.0.1,remote.port=$((dport + 3 - i))")
        elif [ $stream = 1 ]; then
            # VM 1 listens; VM 2 connects, and tries again until VM 1 is up
            if [ "$i" = 1 ]; then
                net=(-netdev "stream,id=n0,server=on,addr.type=unix,addr.path=$run/segment.sock")
            else
                net=(-netdev "stream,id=n0,server=off,reconnect-ms=100,addr.type=unix,addr.path=$run/segment.sock")
            fi
        else
            net=(-netdev "socket,id=n0,mcast=$mcast,localaddr=127.0.0.1")
        fi
        append+=" rs.ip=$(ip_of "$i")/24"
    fi
    if [ -n "${pcap[$i]:-}" ]; then
        # the filter sees every frame the NIC sends and receives
        net+=(-object "filter-dump,id=dump0,netdev=n0,file=${pcap[$i]}")
    fi
    if [[ " ${mig_peer[*]} " == *" $i "* ]]; then
        # the headers of the segment's frames: the RDMA stall the peer saw
        net+=(-object "filter-dump,id=dumpmig,netdev=n0,maxlen=96,file=$run/vm$i/migrate-peer.pcap")
    fi
    if is_soft "$i"; then
        dev="virtio-net-pci,netdev=n0,mac=$mac"
        append+=" rs.modules=virtio_net,crc32_generic,rdma_rxe rs.skip=rdma_session"
    else
        dev="$device,netdev=n0,mac=$mac"
    fi
    : > "$d/serial.log"
    if [ "$i" = "$shellvm" ]; then
        con=(-chardev "stdio,id=con,mux=on,logfile=$d/serial.log,signal=off"
             -serial chardev:con -mon chardev=con,mode=readline)
    else
        rm -f "$d/ctl.in" "$d/ctl.out"
        mkfifo "$d/ctl.in" "$d/ctl.out"
        con=(-chardev "file,id=con,path=$d/serial.log" -serial chardev:con
             -chardev "pipe,id=ctl,path=$d/ctl" -serial chardev:ctl)
        append+=" rs.go=ttyS1"
    fi
    # (a Unix socket's path has at most 107 bytes: no QMP for deeper runs)
    qmp=()
    [ ${#d} -gt 96 ] || qmp=(-qmp "unix:$d/qmp.sock,server=on,wait=off")
    args=(-machine q35 "${acc[@]}" -m "$mem" -smp 1 -nodefaults -display none
          -no-reboot "${fw[@]}" -name "vm$i" "${qmp[@]+"${qmp[@]}"}"
          -kernel "$RS_KERNEL" -initrd "$RS_INITRD" -append "$append"
          "${net[@]}" -device "$dev" "${con[@]}" "${extra[@]+"${extra[@]}"}")
    printf '%q ' "$qemu" "${args[@]}" > "$d/cmdline"
    if [ "$i" = "$shellvm" ]; then
        shell_args=("${args[@]}")
        return 0
    fi
    "$qemu" "${args[@]}" </dev/null >"$d/qemu.log" 2>&1 &
    pid[$i]=$!
    echo "${pid[$i]}" > "$d/pid"
}

extra=("$@")
tb=$(date +%s.%N)
seg="-netdev socket mcast $mcast on 127.0.0.1"
[ $user = 1 ] && seg="-netdev user (one slirp network per VM)"
[ $dgram = 1 ] && seg="-netdev dgram, UDP ports $((dport + 1))/$((dport + 2)) on 127.0.0.1"
[ $stream = 1 ] && seg="-netdev stream, Unix socket $run/segment.sock"
log "starting $n VM(s) (${RS_ACCEL:-tcg}, kernel $RS_KVER, $seg); logs in $run"
for i in $(seq 1 "$n"); do start_vm "$i"; done

# script_for I: the shell script VM I runs
script_for()
{
    local i=$1 peers='' j
    for j in $(seq 1 "$n"); do
        [ "$j" = "$i" ] || peers+="${peers:+ }$(ip_of "$j")"
    done
    printf 'export RS_VM_INDEX=%s RS_VM_COUNT=%s RS_IP=%s RS_PEERS=%q RS_PEER=%s\n' \
        "$i" "$n" "$(ip_of "$i")" "$peers" "$(ip_of $(( i % n + 1 )))"
    echo 'ip() { /usr/bin/ip "$@"; }  # iproute2, not the busybox applet'
    echo 'tc() { /usr/bin/tc "$@"; }'
    echo 'RS_IFACE=$(ls /sys/class/net | grep -v "^lo$" | head -n 1); export RS_IFACE'
    if is_soft "$i"; then
        echo 'rdma link add rxe0 type rxe netdev "$RS_IFACE" || echo "launch-vms: rdma link add rxe0 failed"'
    fi
    printf '%s\n' "${vmcmd[$i]:-$cmd}"
}

# --- Wait for readiness ---------------------------------------------------------------
declare -A ready=()
wait_ready()
{
    local deadline i
    deadline=$(( $(date +%s) + btmo ))
    while :; do
        local all=1
        for i in "${!pid[@]}"; do
            [ -n "${ready[$i]:-}" ] && continue
            if grep -q '^rs-init: ready' "$run/vm$i/serial.log" 2>/dev/null; then
                ready[$i]=$(awk -v a="$tb" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
                log "vm$i ready after ${ready[$i]} s: $(tr -d '\r' < "$run/vm$i/serial.log" |
                    grep -E '^rs-init: (eth|en|no network|[a-z0-9]+ \()|^rs-init: RDMA' | sed 's/^rs-init: //' | tr '\n' ';')"
                continue
            fi
            all=0
            if ! kill -0 "${pid[$i]}" 2>/dev/null; then
                wait "${pid[$i]}"; qrc[$i]=$?
                printf '[launch-vms] vm%s: QEMU exited (status %s) before the guest was ready:\n' "$i" "${qrc[$i]}" >&2
                tail -n 15 "$run/vm$i/qemu.log" "$run/vm$i/serial.log" >&2
                return 1
            fi
        done
        [ $all = 1 ] && return 0
        if [ "$(date +%s)" -ge "$deadline" ]; then
            for i in "${!pid[@]}"; do
                [ -n "${ready[$i]:-}" ] || { printf '[launch-vms] vm%s not ready after %s s; its console:\n' "$i" "$btmo" >&2
                                             tail -n 15 "$run/vm$i/serial.log" >&2; }
            done
            return 1
        fi
        sleep 0.2
    done
}

if [ "$shellvm" != 0 ]; then
    # The others run --cmd (if any) in the background; the shell VM gets the
    # terminal.  Its console is also logged.
    # (without --cmd they stay up, idle, until the shell VM powers off)
    if [ ${#pid[@]} -gt 0 ] && wait_ready && { [ $cmd_given = 1 ] || [ ${#vmcmd[@]} -gt 0 ]; }; then
        for i in "${!pid[@]}"; do
            s=$(script_for "$i" | base64 -w0)
            printf 'go %s\n' "$s" 1<>"$run/vm$i/ctl.in"
        done
    fi
    log "shell on vm$shellvm (its address $(ip_of "$shellvm"); the others: $(for i in "${!pid[@]}"; do printf '%s ' "$(ip_of "$i")"; done))"
    log "\"exit\" powers it off; Ctrl-A x quits QEMU"
    "$qemu" "${shell_args[@]}"
    exit $?
fi

if ! wait_ready; then
    echo "launch-vms: FAIL: not every VM became ready (logs in $run)"
    exit 1
fi
tr0=$(date +%s.%N)

# --- Run the commands ---------------------------------------------------------------
for i in $(seq 1 "$n"); do
    script_for "$i" > "$run/vm$i/cmd.sh"
    printf 'go %s\n' "$(base64 -w0 < "$run/vm$i/cmd.sh")" 1<>"$run/vm$i/ctl.in"
done
declare -A st=() adopted=()
declare -A mig_pid=()
for v in "${!mig_after[@]}"; do
    p=${mig_peer[$v]}
    RS_BUILD=$RS_BUILD "$top/tests/guest/migrate_vm.py" --after "${mig_after[$v]}" \
        --count "${mig_count[$v]}" --interval "${mig_after[$v]}" \
        --hold "$mig_hold" $mig_drill ${p:+--capture "$run/vm$p/migrate-peer.pcap" \
        "$(ip_of "$v")" "$(ip_of "$p")"} "$run/vm$v" \
        > "$run/vm$v/migrate.log" 2>&1 &
    mig_pid[$v]=$!
done
deadline=$(( $(date +%s) + tmo ))
while :; do
    all=1
    for i in $(seq 1 "$n"); do
        [ -n "${st[$i]:-}" ] && continue
        s=$(tr -d '\r' < "$run/vm$i/serial.log" | sed -n 's/^rs-init: command exit status \([0-9]*\)$/\1/p' | tail -n 1)
        if [ -n "$s" ]; then st[$i]=$s; continue; fi
        all=0
        if ! kill -0 "${pid[$i]}" 2>/dev/null &&
           [ "$(cat "$run/vm$i/pid" 2>/dev/null)" != "${pid[$i]}" ]; then
            # live-migrated: the destination QEMU is the VM now
            pid[$i]=$(cat "$run/vm$i/pid")
            adopted[$i]=1
            continue
        fi
        if ! kill -0 "${pid[$i]}" 2>/dev/null; then
            # It may have written its status just after the read above.
            s=$(tr -d '\r' < "$run/vm$i/serial.log" | sed -n 's/^rs-init: command exit status \([0-9]*\)$/\1/p' | tail -n 1)
            st[$i]=${s:-QEMU exited}
        fi
    done
    [ $all = 1 ] && break
    if [ "$(date +%s)" -ge "$deadline" ]; then
        for i in $(seq 1 "$n"); do [ -n "${st[$i]:-}" ] || st[$i]="timed out after $tmo s"; done
        break
    fi
    sleep 0.2
done
tr1=$(date +%s.%N)

# Let the guests power off; QEMU must end with status 0.
for i in $(seq 1 "$n"); do
    for _ in $(seq 1 50); do kill -0 "${pid[$i]}" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "${pid[$i]}" 2>/dev/null; then
        qrc[$i]="still running after the command"
    elif [ -n "${adopted[$i]:-}" ]; then
        # not our child: its log says whether it ended well
        qrc[$i]=0
        ! grep -q . "$run/vm$i/qemu-"*.log 2>/dev/null || qrc[$i]="see qemu-*.log"
    else
        wait "${pid[$i]}"; qrc[$i]=$?
    fi
done
for v in $(printf '%s\n' "${!mig_pid[@]}" | sort -n); do
    wait "${mig_pid[$v]}"; mrc=$?
    sed 's/^/[launch-vms] /' "$run/vm$v/migrate.log"
    [ $mrc = 0 ] || qrc[$v]="migration failed (see $run/vm$v/migrate.log)"
done

# --- Report --------------------------------------------------------------------------
fail=0
for i in $(seq 1 "$n"); do
    tr -d '\r' < "$run/vm$i/serial.log" |
        sed -n '/^rs-init: running the launcher.s command$/,/^rs-init: command exit status [0-9]*$/p' |
        sed '1d; /^rs-init: command exit status [0-9]*$/d' > "$run/vm$i/output"
    sed "s/^/[vm$i] /" "$run/vm$i/output"
done
for i in $(seq 1 "$n"); do
    note=''
    [ "${qrc[$i]:-0}" = 0 ] || note=", QEMU: ${qrc[$i]} (see $run/vm$i/qemu.log)"
    [ "${st[$i]}" = 0 ] && [ "${qrc[$i]:-0}" = 0 ] || fail=1
    echo "launch-vms: vm$i: exit status ${st[$i]}$note"
done
summary=$(awk -v a="$t0" -v b="$tb" -v c="$tr0" -v d="$tr1" \
    'BEGIN { printf "build %.1f s, boot to ready %.1f s, commands %.1f s", b - a, c - b, d - c }')
for i in $(seq 1 "$n"); do summary+=", vm$i ready at ${ready[$i]} s"; done
if [ $fail = 0 ]; then
    echo "launch-vms: PASS: $n VM(s) ($summary)"
else
    echo "launch-vms: FAIL ($summary; logs in $run)"
fi
exit $fail
