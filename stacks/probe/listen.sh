# Preflight listener functions (sent with the per-port socat lines swarmkit appends).
# report KEY: turn socat's -d -d log into "BOUND KEY" once it listens, or "BUSY KEY <bind error>".
report() {
  while read -r line; do
    case "$line" in
      *"listening on"*|*"receiving on"*) echo "BOUND $1" ;;
      *" E "*) echo "BUSY $1 ${line##*: }" ;;
    esac
  done
}
