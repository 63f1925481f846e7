#!/bin/bash
# Private apt configuration: Debian bookworm, bookworm-backports and trixie
# (binary and source) in a state directory of our own, so the machine's
# /etc/apt/sources.list* stay untouched.  Source this file, then use
# "apt_priv <apt-get args>".
#
# Pinning keeps trixie from being picked for anything we did not ask for
# with -t.

: "${RS_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/rdma-session}"
RS_APT="$RS_CACHE/apt"

apt_priv_setup()
{
    local mirror=${RS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
    mkdir -p "$RS_APT/lists/partial" "$RS_APT/archives/partial" \
             "$RS_APT/etc/preferences.d"
    cat > "$RS_APT/etc/sources.list" <<EOS
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
deb $mirror bookworm-backports main
deb $mirror trixie main
deb-src $mirror bookworm-backports main
deb-src $mirror trixie main
EOS
    cat > "$RS_APT/etc/preferences" <<EOS
Package: *
Pin: release n=trixie
Pin-Priority: 100

Package: *
Pin: release n=bookworm-backports
Pin-Priority: 100
EOS
    cat > "$RS_APT/apt.conf" <<EOS
Dir::Etc::SourceList "$RS_APT/etc/sources.list";
Dir::Etc::SourceParts "$RS_APT/etc/sources.list.d";
Dir::Etc::Preferences "$RS_APT/etc/preferences";
Dir::Etc::PreferencesParts "$RS_APT/etc/preferences.d";
Dir::State::Lists "$RS_APT/lists";
Dir::Cache::Archives "$RS_APT/archives";
Dir::Cache::pkgcache "$RS_APT/pkgcache.bin";
Dir::Cache::srcpkgcache "$RS_APT/srcpkgcache.bin";
APT::Get::Assume-Yes "true";
APT::Sandbox::User "root";
Acquire::Retries "3";
EOS
    mkdir -p "$RS_APT/etc/sources.list.d"
    local stamp="$RS_APT/lists/.updated"
    if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440)" ]; then
        APT_CONFIG="$RS_APT/apt.conf" flock "$RS_APT/.lock" apt-get -q update >&2 ||
            { echo "apt-get update (private sources) failed" >&2; return 1; }
        touch "$stamp"
    fi
}

# One apt at a time: the test command prepares some guests in the
# background while it builds (scripts/run-tests.sh), and two apt-gets on
# one state directory or on dpkg would fail on each other's locks.
apt_priv()
{
    mkdir -p "$RS_APT"
    DEBIAN_FRONTEND=noninteractive APT_CONFIG="$RS_APT/apt.conf" \
        flock "$RS_APT/.lock" apt-get -o DPkg::Lock::Timeout=600 "$@"
}

# apt_need SUITE PKG...: install packages not yet installed; SUITE may be
# "" for the default release.
apt_need()
{
    local suite=$1; shift
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    apt_priv_setup || return 1
    echo "installing ${missing[*]}${suite:+ from $suite}" >&2
    if ! apt_priv install -q --no-install-recommends ${suite:+-t "$suite"} "${missing[@]}" >&2; then
        echo "error: cannot install ${missing[*]} from Debian ${suite:-bookworm}" >&2
        return 1
    fi
}

# guest_deb_version PKG [MADISON]: the newest version of PKG for the guest
# images: in bookworm (with -updates and -security), else in
# bookworm-backports; never trixie.  MADISON is apt-cache madison's output
# to look in (default: asked now, about 2 s).  Not apt's candidate: the
# host's dpkg status takes part in that choice, and a library the host has
# from bookworm-backports (priority 100, like trixie) makes apt pick
# trixie's newer one, built against a newer glibc than the guest's 2.36
# (libudev1 257 needs GLIBC_2.38).
guest_deb_version()
{
    local m=${2:-} v re
    [ -n "$m" ] || m=$(apt-cache madison "$1" 2>/dev/null) || return 0
    for re in ' bookworm(-updates|-security)?/' ' bookworm-backports/'; do
        v=$(printf '%s\n' "$m" | awk -F' *[|] *' -v re="$re" -v p="$1" '
            { sub(/^ */, "", $1) } $1 == p && $3 ~ re && $3 ~ / (amd64|all) Packages$/ {print $2}' | {
                best=''
                while read -r x; do
                    if [ -z "$best" ] || dpkg --compare-versions "$x" gt "$best"; then best=$x; fi
                done
                echo "$best"; })
        [ -z "$v" ] || { echo "$v"; return 0; }
    done
}

# guest_deb_fetch PKG DIR [MADISON]: the .deb of guest_deb_version's
# version of PKG in DIR, downloaded if missing; prints its path, or an
# error on stderr and status 1.
guest_deb_fetch()
{
    local pkg=$1 dir=$2 ver f
    ver=$(guest_deb_version "$pkg" "${3:-}")
    if [ -z "$ver" ]; then
        echo "error: package $pkg is not known to the private apt sources in bookworm or bookworm-backports" >&2
        return 1
    fi
    f=$(ls -1 "$dir/${pkg}_"*"${ver#*:}_"*.deb 2>/dev/null | head -n 1 || true)
    if [ -z "$f" ]; then
        echo "downloading $pkg $ver" >&2
        (cd "$dir" && apt_priv download -q "$pkg=$ver" >&2) || {
            echo "error: could not download $pkg=$ver from the Debian mirror" >&2
            return 1; }
        f=$(ls -1 "$dir/${pkg}_"*"${ver#*:}_"*.deb 2>/dev/null | head -n 1 || true)
        [ -n "$f" ] || { echo "error: apt-get download $pkg=$ver left no .deb in $dir" >&2; return 1; }
    fi
    echo "$f"
}
