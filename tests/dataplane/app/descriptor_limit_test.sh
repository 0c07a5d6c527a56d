#!/usr/bin/env bash
# dataplane raises its open-file limit (RLIMIT_NOFILE) from the soft to the
# hard limit at start, and its banner says so: started with 256 under a
# hard limit of 4096 it serves with 4096, and with --root it says what file
# responses may hold against that. Both limits are lowered here: a soft
# limit alone the server would simply raise again.
set -uo pipefail
DATAPLANE=$1
source "$2"

mkdir -p "$WORK/root"
echo "hello" >"$WORK/root/index.html"

# limit_line SOFT HARD [flags...]: the banner's open-files line of a server
# started under those limits (then stopped), in LINE.
limit_line() {
  local soft=$1 hard=$2
  shift 2
  cat >"$WORK/limited" <<WRAPPER
#!/usr/bin/env bash
ulimit -S -n $soft && ulimit -H -n $hard && exec "$DATAPLANE" "\$@"
WRAPPER
  chmod +x "$WORK/limited"
  start_dataplane "$WORK/limited" "$@"
  LINE=$(grep "open files limit" "$WORK/server.log")
  stop_dataplane
}

limit_line 256 4096
[[ $LINE == "dataplane: open files limit 4096 (raised from 256)" ]] ||
  fail "banner said '$LINE', expected the limit raised from 256 to 4096"

limit_line 4096 4096
[[ $LINE == "dataplane: open files limit 4096" ]] ||
  fail "banner said '$LINE', expected 4096 and nothing raised"

limit_line 256 4096 --root="$WORK/root" --max-connections=64
want="dataplane: open files limit 4096 (raised from 256); file responses hold up to 2048 (32 per connection)"
[[ $LINE == "$want" ]] || fail "banner said '$LINE', expected '$want'"

limit_line 256 1024 --root="$WORK/root"
want="dataplane: open files limit 1024 (raised from 256); file responses hold up to 131072 (32 per connection), more than the limit: beyond it a file request gets 503"
[[ $LINE == "$want" ]] || fail "banner said '$LINE', expected '$want'"

echo "descriptor limit: ok"
