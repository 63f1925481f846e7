#!/bin/bash
# Build the demo/test guest: Debian's 6.12 kernel from bookworm-backports
# and a busybox initramfs with the RDMA stack: the guest kernel's RDMA
# modules (ib_core, ib_uverbs, ib_umad, ib_cm, iw_cm, rdma_cm, rdma_ucm with
# their dependencies; crc32_generic and rdma_rxe for soft-RoCE peers, not
# loaded by default; virtio_net, sch_netem and 8021q too; nvme_rdma, nvmet_rdma
# and brd for tests/guest/nvmf.py, not loaded by default), our
# rdma_session.ko (scripts/build-guest-module.sh),
# rdma-core userspace (libibverbs, librdmacm, providers, ibv_* utilities,
# rping, ucmatose) from build/rdma-core-stage (scripts/build-rdma-core.sh)
# when it exists, else Debian bookworm's packages, perftest from Debian,
# iproute2's ip, rdma and tc, every shared library they need, a udhcpc
# script, and the verbs suite's programs (tests/guest/progs, built here
# against the staging tree).  /init loads the modules, brings the network interface up,
# prints "rs-init: ready", runs the command given on the kernel command
# line (or over the second serial port) or starts a shell, and powers the
# VM off.
#
# Nothing is installed on the host except the kernel headers the module
# build needs: the .deb packages are fetched with the private apt
# configuration (scripts/apt-private.sh) into $RS_CACHE/guest/debs and
# unpacked with dpkg-deb.  The result is cached in
# $RS_CACHE/guest/<hash of the inputs>/ and only rebuilt when an input
# changes (package versions, the module, the rdma-core staging tree,
# module list, extra files, this script).
#
# Usage: scripts/guest-image.sh
# Prints on stdout, in a form that "eval" accepts:
#     RS_KERNEL=<path of vmlinuz>
#     RS_INITRD=<path of initramfs.cpio.gz>
#     RS_KVER=<kernel release>
# Progress goes to stderr.
#
# Environment:
#   RS_CACHE           cache directory (default ~/.cache/rdma-session)
#   RS_BUILD           build directory (default build/): rdma-core-stage,
#                      guest-module
#   RS_KERNEL_PKG      kernel package to use instead of the default
#                      (the linux-image-6.12.*-amd64 that bookworm-backports'
#                      linux-image-amd64 depends on, or the one matching an
#                      installed linux-headers-6.12.*-amd64)
#   RS_KERNEL_VARIANT  boot a guest kernel variant built from Debian's source
#                      instead (scripts/build-guest-kernel.sh NAME, e.g.
#                      p2p; or the path of a variant directory); the
#                      module is built against it too
#   RS_GUEST_MODULES   more kernel modules to put into the image and load at
#                      boot, space separated; dependencies are added
#   RS_GUEST_EXTRA     a directory copied over the initramfs root (optional)
#   RS_EXTRA_MODULES   out-of-tree .ko files (paths, space separated) copied
#                      into the image and loaded after RS_GUEST_MODULES; an
#                      rdma_session.ko given here replaces the built one
#   RS_GUEST_DRIVER=0  no rdma_session.ko (default: build it)
#   RS_GUEST_KO        use this rdma_session.ko instead of building it
#   RS_RDMA_CORE_STAGE rdma-core DESTDIR tree (default
#                      $RS_BUILD/rdma-core-stage; used only if it has
#                      usr/bin/ibv_devinfo); RS_RDMA_CORE_STAGE=none uses
#                      Debian's rdma-core 44 packages
#
# Guest kernel command line understood by /init:
#   rs.cmd=WORD or rs.cmd="several words"   run it with sh -c, then power off
#   rs.cmd64=BASE64                          the same, base64 encoded
#   rs.go=ttyS1       after "ready", read "go BASE64" from /dev/ttyS1 and run
#                     the decoded script (scripts/launch-vms.sh)
#   rs.shell=1        shell after the command
#   rs.ip=A.B.C.D/N   address of the network interface
#   rs.gw=A.B.C.D     default route via this gateway (with rs.ip)
#   rs.dhcp=1         configure the interface with udhcpc instead
#   rs.if=NAME        the interface (default: the first one that is not lo)
#   rs.modules=a,b    load these modules too (modprobe; e.g. crc32_generic,rdma_rxe)
#   rs.skip=a,b       do not load these modules of the default list
#   rs.name=NAME      host name
#   (no command: an interactive shell; exiting it powers the VM off)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# The guest's /init, profile, udhcpc script and lspci, as installed.
files=$top/scripts/guest-image
progs=$top/tests/guest/progs
examples=$top/guest-driver/examples
. "$top/scripts/apt-private.sh"

log() { printf '[guest-image] %s\n' "$*" >&2; }
die() { printf '[guest-image] error: %s\n' "$*" >&2; exit 1; }

gdir="$RS_CACHE/guest"
debs="$gdir/debs"
mkdir -p "$debs"
export APT_CONFIG="$RS_APT/apt.conf"

command -v dpkg-deb >/dev/null || die "dpkg-deb not found (this script needs Debian)"
# Host tools: depmod (kmod), xz (the kernel's modules are .ko.xz),
# readelf and strip (binutils).
need=()
command -v depmod >/dev/null || [ -x /usr/sbin/depmod ] || [ -x /sbin/depmod ] || need+=(kmod)
command -v xz >/dev/null || need+=(xz-utils)
command -v readelf >/dev/null && command -v strip >/dev/null || need+=(binutils)
command -v gcc >/dev/null || need+=(gcc)
[ ${#need[@]} -eq 0 ] || apt_need "" "${need[@]}" || die "cannot install ${need[*]}"
PATH=$PATH:/usr/sbin:/sbin
apt_priv_setup || die "apt-get update with the private sources failed"

# --- Which kernel package ------------------------------------------------
kernel_pkg()
{
    if [ -n "${RS_KERNEL_PKG:-}" ]; then
        echo "$RS_KERNEL_PKG"; return
    fi
    # If the module build has installed 6.12 headers, boot the same ABI.
    local h
    h=$(dpkg-query -W -f='${Package} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null |
        awk '$1 ~ /^linux-headers-6\.12\.[0-9]+\+.*-amd64$/ && /install ok installed/ {print $1}' |
        sort -V | tail -n 1)
    if [ -n "$h" ]; then
        echo "linux-image-${h#linux-headers-}"; return
    fi
    # Otherwise what bookworm-backports' linux-image-amd64 points to.
    local v
    v=$(apt-cache madison linux-image-amd64 2>/dev/null |
        awk -F' *[|] *' '$3 ~ /bookworm-backports/ {print $2}' | sort -V | tail -n 1)
    [ -n "$v" ] || die "bookworm-backports has no linux-image-amd64 (private apt lists in $RS_APT)"
    apt-cache show "linux-image-amd64=$v" |
        sed -n 's/^Depends: *\(linux-image-[^ ,]*\).*/\1/p' | head -n 1
}

# fetch PKG: the .deb (scripts/apt-private.sh, guest_deb_fetch).
fetch() { guest_deb_fetch "$1" "$debs" || die "cannot fetch $1"; }

# Debian packages of the guest userspace.  rdma-core's come from here only
# when there is no rdma-core staging tree; perftest links against
# libibverbs.so.1 and librdmacm.so.1, which either provides.  The library
# packages are what the binaries need (DT_NEEDED, resolved below); the
# host's own libraries (the same Debian release) are the fallback.
user_pkgs="ibverbs-utils rdmacm-utils libibverbs1 librdmacm1 ibverbs-providers
    libibumad3 perftest iproute2"
lib_pkgs="libc6 libgcc-s1 libnl-3-200 libnl-route-3-200 libpci3 libudev1 libmnl0 libelf1
    libbpf1 libcap2 libbsd0 libmd0 zlib1g libzstd1"

# Resolving versions with apt-cache takes seconds; remember the answer
# until the package lists are refreshed or the choice inputs change.
memo="$gdir/.resolved-$( { stat -c %Y "$RS_APT/lists/.updated" 2>/dev/null
    echo "${RS_KERNEL_PKG:-}" $user_pkgs $lib_pkgs
    echo "versions: bookworm, then bookworm-backports, never trixie"
    dpkg-query -W -f='${Package} ${Version} ${Status}\n' 'linux-headers-6.12*' 2>/dev/null || true
  } | sha1sum | cut -c1-12)"

# The module first: building it may install the kernel headers, which
# decide the guest kernel.
ko=''
if [ -n "${RS_GUEST_KO:-}" ]; then
    [ -s "$RS_GUEST_KO" ] || die "RS_GUEST_KO=$RS_GUEST_KO is not a file"
    ko=$RS_GUEST_KO
elif [ "${RS_GUEST_DRIVER:-1}" != 0 ]; then
    case " ${RS_EXTRA_MODULES:-} " in
    *'/rdma_session.ko '*|*' rdma_session.ko '*) ;;
    *) ko=$("$top/scripts/build-guest-module.sh") ||
           die "rdma_session.ko does not build (scripts/build-guest-module.sh; RS_GUEST_DRIVER=0 builds the image without it)" ;;
    esac
fi

# A kernel variant (after the module, which builds it if needed).
vdir=''
case ${RS_KERNEL_VARIANT:-} in
'') ;;
*/*) vdir=$RS_KERNEL_VARIANT ;;
*) vdir=$("$top/scripts/build-guest-kernel.sh" "$RS_KERNEL_VARIANT") ||
       die "the guest kernel variant $RS_KERNEL_VARIANT does not build (scripts/build-guest-kernel.sh)" ;;
esac
[ -z "$vdir" ] || [ -s "$vdir/vmlinuz" ] || die "$vdir is not a guest kernel variant directory (no vmlinuz)"

declare -A deb=()
if [ -s "$memo" ]; then
    while read -r name path; do
        [ -s "$path" ] || { deb=(); break; }
        deb[$name]=$path
    done < "$memo"
fi
if [ -z "${deb[kernel]:-}" ] || [ -z "${deb[busybox-static]:-}" ]; then
    deb=()
    kpkg=$(kernel_pkg)
    [ -n "$kpkg" ] || die "could not determine the guest kernel package"
    deb[kernel]=$(fetch "$kpkg")
    for p in busybox-static $user_pkgs $lib_pkgs; do
        deb[$p]=$(fetch "$p")
    done
    rm -f "$gdir"/.resolved-*
    for p in "${!deb[@]}"; do echo "$p ${deb[$p]}"; done | sort > "$memo"
fi
kdeb=${deb[kernel]}
bdeb=${deb[busybox-static]}

# rdma-core with our provider (scripts/build-rdma-core.sh, incremental).
if [ -z "${RS_RDMA_CORE_STAGE:-}" ]; then
    log "building rdma-core (scripts/build-rdma-core.sh)"
    "$top/scripts/build-rdma-core.sh" > "${RS_BUILD:-$top/build}/rdma-core-build.log" 2>&1 ||
        { tail -n 20 "${RS_BUILD:-$top/build}/rdma-core-build.log" >&2
          die "rdma-core build failed (scripts/build-rdma-core.sh, log in ${RS_BUILD:-$top/build}/rdma-core-build.log)"; }
fi
stage=${RS_RDMA_CORE_STAGE:-${RS_BUILD:-$top/build}/rdma-core-stage}
if [ "$stage" = none ] || [ ! -x "$stage/usr/bin/ibv_devinfo" ]; then
    stage=''
fi

# --- Cache key -------------------------------------------------------------
modules=${RS_GUEST_MODULES:-}
extra=${RS_GUEST_EXTRA:-}
extrasum=none
extramods=${RS_EXTRA_MODULES:-}
extramodsum=none
if [ -n "$extramods" ]; then
    for f in $extramods; do
        [ -f "$f" ] || die "RS_EXTRA_MODULES: $f is not a file"
    done
    extramodsum=$(for f in $extramods; do basename "$f"; sha1sum < "$f"; done | sha1sum | cut -c1-40)
fi
if [ -n "$extra" ]; then
    [ -d "$extra" ] || die "RS_GUEST_EXTRA=$extra is not a directory"
    extrasum=$(cd "$extra" && tar --sort=name --mtime=@0 --owner=0 --group=0 -cf - . | sha1sum | cut -c1-40)
fi
stagesum=none
[ -z "$stage" ] ||
    stagesum=$(cd "$stage" && find . \( -type f -o -type l \) -printf '%p %s %T@\n' | LC_ALL=C sort | sha1sum | cut -c1-40)
kosum=none
[ -z "$ko" ] || kosum=$(sha1sum < "$ko" | cut -c1-40)
key=$( { for p in "${!deb[@]}"; do basename "${deb[$p]}"; done | LC_ALL=C sort
         echo "$modules"; echo "$extrasum"
         [ "$extramodsum" = none ] || echo "extramods $extramodsum"
         echo "stage $stagesum ko $kosum"
         [ -z "$vdir" ] || echo "variant $vdir $(sha1sum < "$vdir/vmlinuz")"
         sha1sum < "$0"; cat "$files"/* "$progs"/* "$examples"/*; } | sha1sum | cut -c1-16)
out="$gdir/$key"
# emit: the image's variables on stdout.
emit()
{
    printf 'RS_KERNEL=%q\nRS_INITRD=%q\nRS_KVER=%q\n' \
        "$out/vmlinuz" "$out/initramfs.cpio.gz" "$(cat "$out/kver")"
}
if [ -s "$out/vmlinuz" ] && [ -s "$out/initramfs.cpio.gz" ] && [ -s "$out/kver" ]; then
    log "up to date: $out"
    emit
    exit 0
fi

# --- Build -----------------------------------------------------------------
tb=$(date +%s.%N)
log "building guest image $key (${vdir:-$(basename "$kdeb")}, rdma-core from ${stage:-the Debian packages})"
work=$(mktemp -d "$gdir/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$bdeb" "$work/bb"
if [ -n "$vdir" ]; then
    vmlinuz=$vdir/vmlinuz
    kver=$(cat "$vdir/kver")
    moddir=$vdir/lib/modules/$kver
else
    dpkg-deb -x "$kdeb" "$work/k"
    vmlinuz=$(ls -1 "$work"/k/boot/vmlinuz-* 2>/dev/null | head -n 1 || true)
    [ -n "$vmlinuz" ] || die "$(basename "$kdeb") contains no /boot/vmlinuz-*"
    kver=${vmlinuz##*/vmlinuz-}
    moddir=$(ls -d "$work"/k/lib/modules/"$kver" "$work"/k/usr/lib/modules/"$kver" 2>/dev/null | head -n 1 || true)
fi
bb="$work/bb/bin/busybox"
[ -x "$bb" ] || die "$(basename "$bdeb") contains no bin/busybox"

root="$work/root"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,root,etc,usr/bin,usr/sbin,lib/modules/"$kver"}
mkdir -p "$root"/{lib/x86_64-linux-gnu,usr/lib/x86_64-linux-gnu,lib64,usr/share/udhcpc,etc/libibverbs.d}
cp "$bb" "$root/bin/busybox"
for a in $("$bb" --list); do
    [ "$a" = busybox ] || [ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
done

# Kernel modules: resolve "depends=" from each module's .modinfo, copy them
# uncompressed (busybox insmod cannot read .ko.xz) and write the load order;
# depmod writes modules.dep for busybox's modprobe.
declare -A seen=()
order=()
modfile()   # name -> path of the .ko[.xz] in the package, or empty
{
    local n=${1//-/_} alt=${1//_/-}
    find "$moddir/kernel" \( -name "$n.ko*" -o -name "$alt.ko*" \) 2>/dev/null | head -n 1
}
modcat() { case $1 in *.xz) xz -dc "$1";; *.zst) zstd -qdc "$1";; *.gz) gzip -dc "$1";; *) cat "$1";; esac; }
addmod()    # name [noload]
{
    local m=${1//-/_} f deps d
    [ -z "${seen[$m]:-}" ] || return 0
    seen[$m]=1
    f=$(modfile "$m")
    if [ -z "$f" ]; then
        if grep -qE "/${m}\.ko\$|/${m//_/-}\.ko\$" "$moddir/modules.builtin"; then
            log "module $m is built into the kernel"
            return 0
        fi
        die "kernel $kver has no module $m"
    fi
    modcat "$f" > "$work/m.ko"
    deps=$(tr '\0' '\n' < "$work/m.ko" | sed -n 's/^depends=//p' | head -n 1)
    for d in ${deps//,/ }; do addmod "$d" "${2:-}"; done
    modcat "$f" > "$root/lib/modules/$kver/$m.ko"
    [ -n "${2:-}" ] || order+=("$m")
}
# Kernel modules the out-of-tree ones need, from their .modinfo.
ko_deps() { tr '\0' '\n' < "$1" | sed -n 's/^depends=//p' | head -n 1 | tr , ' '; }
for m in ib_core ib_uverbs ib_umad ib_cm iw_cm rdma_cm rdma_ucm $modules; do addmod "$m"; done
# sch_netem: the loss tests shape the soft-RoCE VM's interface with tc;
# 8021q: the verbs suite's VLAN interfaces (verbs-vlan.sh loads it).
for m in virtio_net crc32_generic rdma_rxe sch_netem 8021q; do addmod "$m" noload; done
# NVMe over Fabrics (RDMA host and target) for the kernel-consumer test.
for m in nvme_rdma nvmet_rdma brd; do addmod "$m" noload; done
outoftree=()
[ -z "$ko" ] || outoftree+=("$ko")
for f in $extramods; do outoftree+=("$f"); done
for f in "${outoftree[@]+"${outoftree[@]}"}"; do
    m=$(basename "$f" .ko)
    [ -z "${seen[$m]:-}" ] || [ "$f" != "$ko" ] || continue   # RS_EXTRA_MODULES wins
    for d in $(ko_deps "$f"); do
        [ -n "${seen[$d]:-}" ] || [ -e "$root/lib/modules/$kver/$d.ko" ] || addmod "$d"
    done
    seen[$m]=1
    cp "$f" "$root/lib/modules/$kver/$m.ko"
    order+=("$m")
done
printf '%s\n' "${order[@]+"${order[@]}"}" | sed '/^$/d' > "$root/lib/modules/$kver/load.order"
cp "$moddir/modules.builtin" "$moddir/modules.order" "$root/lib/modules/$kver/" 2>/dev/null || true
depmod -b "$root" "$kver" 2>"$work/depmod.err" ||
    { cat "$work/depmod.err" >&2; die "depmod failed"; }
log "modules loaded at boot: ${order[*]}"

# --- User space -------------------------------------------------------------
deb_tree="$work/debs"
mkdir -p "$deb_tree"
for p in $user_pkgs $lib_pkgs; do
    dpkg-deb -x "${deb[$p]}" "$deb_tree"
done
bins="ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong
      ibv_srq_pingpong ibv_xsrq_pingpong ibv_asyncwatch rping ucmatose udaddy
      mckey rdma_client rdma_server rdma_xclient rdma_xserver rstream riostream
      cmtime"
if [ -n "$stage" ]; then
    uroot=$stage
    # Libraries and providers with their symbolic links, the provider
    # configuration, no headers, static or pkg-config files.
    (cd "$stage" && find . \( -path './usr/lib*' -o -path './lib*' \) \
        \( -name '*.so' -o -name '*.so.*' \) \( -type f -o -type l \) ! -path '*/pkgconfig/*' -print0 |
        xargs -0r cp -a --parents -t "$root")
    cp -a "$stage"/etc/libibverbs.d/. "$root/etc/libibverbs.d/" 2>/dev/null || true
else
    uroot=$deb_tree
    (cd "$deb_tree" && find . -path '*/libibverbs/*.so' -print0 | xargs -0r cp -a --parents -t "$root")
    cp -a "$deb_tree"/etc/libibverbs.d/. "$root/etc/libibverbs.d/"
fi
for b in $bins; do
    f=$(ls "$uroot/usr/bin/$b" 2>/dev/null | head -n 1 || true)
    [ -n "$f" ] || { log "no $b in ${stage:-the Debian packages}"; continue; }
    cp -L "$f" "$root/usr/bin/"
done
[ -x "$root/usr/bin/ibv_devinfo" ] || die "no ibv_devinfo in ${stage:-the Debian packages}"
# The verbs suite's own programs (tests/guest/progs/rsv-*.c, each linked
# with rsv-common.c) against the staging tree's headers and libraries.
if [ -n "$stage" ]; then
    for f in "$progs"/rsv-*.c; do
        [ "$f" = "$progs/rsv-common.c" ] && continue
        b=$(basename "$f" .c)
        gcc -O2 -g -Wall -Wextra -Wno-sign-compare -Wno-unused-parameter -Werror \
            -I"$stage/usr/include" -o "$root/usr/bin/$b" "$f" "$progs/rsv-common.c" \
            -L"$stage/usr/lib/x86_64-linux-gnu" -Wl,-rpath-link,"$stage/usr/lib/x86_64-linux-gnu" \
            -lrsession -lrdmacm -libverbs -lpthread >&2 || die "tests/guest/progs/$b.c does not build"
    done
    # The direct-verbs examples (guest-driver/examples/rsdv_*.c, with
    # their usage under -h), linked with librsession.
    for f in "$examples"/rsdv_*.c; do
        b=$(basename "$f" .c)
        gcc -O2 -g -Wall -Wextra -Wno-sign-compare -Wno-unused-parameter -Werror \
            -I"$stage/usr/include" -o "$root/usr/bin/$b" "$f" \
            -L"$stage/usr/lib/x86_64-linux-gnu" -Wl,-rpath-link,"$stage/usr/lib/x86_64-linux-gnu" \
            -lrsession -libverbs >&2 || die "guest-driver/examples/$b.c does not build"
    done
else
    log "no rdma-core staging tree: the verbs suite's programs are left out"
fi
# perftest: every ib_* / raw_ethernet_* test.
for f in "$deb_tree"/usr/bin/ib_* "$deb_tree"/usr/bin/raw_ethernet_*; do
    [ -e "$f" ] && cp -L "$f" "$root/usr/bin/"
done
# iproute2: ip (busybox's lacks -details, -json and rdma-related bits), rdma,
# tc (netem for the loss tests).
for b in ip rdma tc; do
    f=$(ls "$deb_tree"/bin/$b "$deb_tree"/sbin/$b "$deb_tree"/usr/bin/$b "$deb_tree"/usr/sbin/$b 2>/dev/null | head -n 1 || true)
    [ -n "$f" ] || die "iproute2 has no $b"
    cp -L "$f" "$root/usr/bin/$b"
done

# Shared libraries: everything the ELF files above need (DT_NEEDED),
# transitively, from the image itself, then the unpacked Debian packages,
# then the host (Debian 12 too).
elf() { [ "$(head -c 4 "$1" 2>/dev/null | tr -d '\0')" = $'\x7fELF' ]; }
libdirs=("$deb_tree/lib/x86_64-linux-gnu" "$deb_tree/usr/lib/x86_64-linux-gnu"
         /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu)
declare -A have=()
while IFS= read -r -d '' f; do have[${f##*/}]=1; done < <(find "$root" \( -type f -o -type l \) -name '*.so*' -print0)
queue=()
while IFS= read -r -d '' f; do
    elf "$f" && queue+=("$f")
done < <(find "$root/usr" "$root/lib/x86_64-linux-gnu" -type f -print0)
missing=()
# Not DT_NEEDED but dlopen()ed by glibc for pthread_cancel and unwinding
# (rping cancels its threads; without it, it aborts).
for n in libgcc_s.so.1; do
    [ -z "${have[$n]:-}" ] || continue
    for d in "${libdirs[@]}"; do
        [ -e "$d/$n" ] || continue
        cp -L "$d/$n" "$root/lib/x86_64-linux-gnu/$n"
        have[$n]=1
        queue+=("$root/lib/x86_64-linux-gnu/$n")
        break
    done
    [ -n "${have[$n]:-}" ] || missing+=("$n (dlopen()ed by libc)")
done
while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]}; queue=("${queue[@]:1}")
    for n in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        [ -z "${have[$n]:-}" ] || continue
        have[$n]=1
        src=''
        for d in "${libdirs[@]}"; do
            [ -e "$d/$n" ] && { src="$d/$n"; break; }
        done
        if [ -z "$src" ]; then
            missing+=("$n (needed by ${f#$root})")
            continue
        fi
        cp -L "$src" "$root/lib/x86_64-linux-gnu/$n"
        queue+=("$root/lib/x86_64-linux-gnu/$n")
    done
done
[ ${#missing[@]} -eq 0 ] || die "shared libraries not found in the Debian packages or on the host: ${missing[*]}"
[ -e "$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" ] || {
    src=''
    for d in "${libdirs[@]}"; do [ -e "$d/ld-linux-x86-64.so.2" ] && { src="$d/ld-linux-x86-64.so.2"; break; }; done
    [ -n "$src" ] || die "no dynamic loader ld-linux-x86-64.so.2"
    cp -L "$src" "$root/lib/x86_64-linux-gnu/"
}
ln -sf ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"
# Every versioned symbol reference (GLIBC_2.38, LIBUDEV_...) must be
# defined by the library the image holds: a library from a newer Debian
# than the guest's glibc only fails when the binary starts.
declare -A libpath=()
while IFS= read -r -d '' f; do
    [ -n "${libpath[${f##*/}]:-}" ] || libpath[${f##*/}]=$f
done < <(find "$root" \( -type f -o -type l \) -name '*.so*' -print0)
declare -A vdefs=()
unresolved=()
while IFS= read -r -d '' f; do
    elf "$f" || continue
    while read -r lib ver; do
        p=${libpath[$lib]:-}
        [ -n "$p" ] || { unresolved+=("${f#$root}: $lib not in the image"); continue; }
        if [ -z "${vdefs[$lib]:-}" ]; then
            vdefs[$lib]=" $(objdump -p "$p" 2>/dev/null | awk '/^Version definitions:/ {d=1; next}
                /^Version References:/ || /^$/ {d=0} d && NF >= 4 {print $4}' | tr '\n' ' ') "
        fi
        case ${vdefs[$lib]} in
        *" $ver "*) ;;
        *) unresolved+=("${f#$root}: $ver from $lib (image has $(basename "$(readlink -f "$p")"))") ;;
        esac
    done < <(objdump -p "$f" 2>/dev/null | awk '/^Version References:/ {r=1; next}
        r && /required from/ {lib=$3; sub(/:$/, "", lib); next}
        r && NF >= 4 {print lib, $4}')
done < <(find "$root/usr" "$root/lib/x86_64-linux-gnu" -type f -print0)
[ ${#unresolved[@]} -eq 0 ] || {
    printf '[guest-image]   %s\n' "${unresolved[@]}" >&2
    die "symbol versions the image's libraries do not define (a package from another Debian release?)"
}
# Debug information out (the staging tree is built with it).
find "$root/usr" "$root/lib/x86_64-linux-gnu" -type f \( -name '*.so*' -o -path '*/bin/*' \) \
    -exec strip --strip-unneeded {} + 2>/dev/null || true
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' > "$root/etc/ld.so.conf"
ldconfig -r "$root" 2>/dev/null || log "ldconfig -r failed (the loader's default paths still work)"
printf 'root:x:0:0:root:/root:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"
printf '127.0.0.1 localhost\n' > "$root/etc/hosts"

# udhcpc's script: address, default route, resolv.conf.
install -m 755 "$files/udhcpc.script" "$root/usr/share/udhcpc/default.script"
# Debian's busybox looks for it in /etc/udhcpc.
mkdir -p "$root/etc/udhcpc"
ln -s /usr/share/udhcpc/default.script "$root/etc/udhcpc/default.script"
# PCI listing without pciutils: "BB:DD.F CCCC: VVVV:DDDD (rev RR)" like
# "lspci -n"; -v adds the BARs and the IRQ, -d VVVV:DDDD filters.
install -m 755 "$files/lspci" "$root/bin/lspci"

install -m 755 "$files/init" "$root/init"
install -m 644 "$files/profile" "$root/etc/profile"

if [ -n "$extra" ]; then
    cp -a "$extra/." "$root/"
fi

mkdir -p "$work/out"
(cd "$root" && find . | LC_ALL=C sort | "$bb" cpio -o -H newc -R 0:0 2>/dev/null) |
    gzip -6 > "$work/out/initramfs.cpio.gz"
cp "$vmlinuz" "$work/out/vmlinuz"
echo "$kver" > "$work/out/kver"
# Another build of the same inputs may have finished meanwhile (several
# test runs can share the cache): keep its result, which may be in use.
if [ -s "$out/vmlinuz" ] && [ -s "$out/initramfs.cpio.gz" ] && [ -s "$out/kver" ]; then
    rm -rf "$work/out"
else
    rm -rf "$out"
    mv "$work/out" "$out"
fi
log "built $out in $(awk -v a="$tb" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s: kernel $kver, initramfs $(du -k "$out/initramfs.cpio.gz" | cut -f1) KiB ($(du -sk "$root" | cut -f1) KiB unpacked), rdma-core from ${stage:-Debian}"

# Keep the three most recent images.
find "$gdir" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended \
    -regex '.*/[0-9a-f]{16}' -printf '%T@ %p\n' | sort -rn | tail -n +4 |
    cut -d' ' -f2- | xargs -r rm -rf

emit
