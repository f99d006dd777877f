# Preflight prober functions (sent with the per-probe lines swarmkit appends, after
# CONNECT_TIMEOUT, UDP_ATTEMPTS and UDP_WAIT are set). Each prints "PROBE INDEX OK|FAIL <why>".
# tcp INDEX SOCAT_ADDRESS: a TCP connection is enough.
tcp() {
  if out=$(socat -T1 /dev/null "$2",connect-timeout="$CONNECT_TIMEOUT" 2>&1); then echo "PROBE $1 OK"
  else echo "PROBE $1 FAIL ${out##*: }"; fi
}
# udp INDEX SOCAT_ADDRESS TOKEN: the listener echoes datagrams; the token must come back.
udp() {
  for attempt in $(seq "$UDP_ATTEMPTS"); do
    out=$(echo "$3" | socat -T"$UDP_WAIT" - "$2" 2>&1)
    if [ "$out" = "$3" ]; then echo "PROBE $1 OK"; return; fi
  done
  echo "PROBE $1 FAIL ${out##*: }"
}
