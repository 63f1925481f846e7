# incast: guest-side part 'common' (after lib.sh, multipath-common.sh).
# cnt NAME: the device's counter NAME (rdma statistic), 0 if it has none
cnt() {
    rdma statistic show link "$dev/1" | tr ' ' '\n' |
        awk -v k="$1" 'p { print; f = 1; exit } $0 == k { p = 1 } END { if (!f) print 0 }'
}
# cnt_start, cnt_delta: the counters of $IN_CNT now, and "NAME=CHANGE ..."
# since
cnt_start() { for c in $IN_CNT; do eval "c0_$c=$(cnt "$c")"; done; }
cnt_delta() {
    for c in $IN_CNT; do
        eval "v=\$c0_$c"
        printf '%s=%d ' "$c" $(( $(cnt "$c") - v ))
    done
}
