# resilience: guest-side part 'vm2a' (sent by tests/guest/resilience.py)
timeout 120 ib_write_bw -d rsess0 -x "$gi" -p 18601 -F -s 4096 -D 30 -u 15 > /tmp/bw1.log 2>&1
echo "resilience: step 1 ended without a reset: $?: $(tail -n 3 /tmp/bw1.log | tr '\n' ' ')"
