# verbs: after every feature of the boot.
b=$(badlog)
if [ -z "$b" ]; then ck "$VB_PAIRING/dmesg-clean" ok; else ck "$VB_PAIRING/dmesg-clean" fail "$b"; fi
