#!/usr/bin/env bash
# The server binary's command line: --help, and a one-line error with exit
# code 2 for every bad flag, value or configuration.
set -uo pipefail
bin="$1"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/cli.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$bin" --help) || fail "--help exited $?"
for flag in --backend --listen --cert --key --root --cores --poll --retry --max-connections \
  --max-half-open-per-address --cc --gso --qlog-dir --qlog-max-mb --stats --drain-timeout --eal; do
  grep -q -- "$flag" <<<"$out" || fail "--help does not mention $flag"
done

# expect_error "what the message must contain" ARGS...: exit 2, one line.
expect_error() {
  local want=$1
  shift
  local err rc
  err=$(timeout 10 "$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  [[ $rc -eq 2 ]] || fail "'$*' exited $rc, expected 2 (stderr: $err)"
  [[ $(wc -l <<<"$err") -eq 1 ]] || fail "'$*' printed more than one line: $err"
  grep -q -- "$want" <<<"$err" || fail "'$*' said '$err', expected it to mention '$want'"
}

port=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

expect_error "unknown flag --frobnicate" --frobnicate=1
expect_error "expected udp or dpdk" --backend=tcp
expect_error "needs --ip and/or --ip6" --backend=dpdk
expect_error "there is no --ip6" --backend=dpdk --ip=10.0.0.2/24 --gateway=fd00::1
expect_error "--listen=nowhere" --listen=nowhere
expect_error "--listen=127.0.0.1:99999" --listen=127.0.0.1:99999
expect_error "--cores=0" --cores=0
expect_error "online cores" --cores=255
expect_error "expected auto, always or never" --retry=sometimes
expect_error "--max-connections=0" --max-connections=0
expect_error "--max-half-open-per-address=some" --max-half-open-per-address=some
expect_error "--max-half-open-per-address=-1" --max-half-open-per-address=-1
expect_error "expected newreno or cubic" --cc=bbr
expect_error "expected on or off" --gso=maybe
expect_error "--stats=x" --stats=x
expect_error "--drain-timeout=x" --drain-timeout=x
expect_error "--drain-timeout=-1" --drain-timeout=-1
expect_error "--qlog-max-mb=0" --qlog-max-mb=0
expect_error "--qlog-max-mb=lots" --qlog-max-mb=lots
expect_error "--cert and --key go together" --cert=/nonexistent.pem
expect_error "needs a value" --listen
expect_error "invalid CIDR" --backend=dpdk --ip=10.0.0.2/33
expect_error "invalid CIDR" --backend=dpdk --ip=10.0.0.300/24
expect_error "invalid CIDR" --backend=dpdk --ip6=fd00::2/129
expect_error "IPv6 goes in --ip6" --backend=dpdk --ip=fd00::2/64
expect_error "expected an IP address" --backend=dpdk --gateway=10.0.0.1/24
expect_error "apply to --backend=dpdk only" --ip=10.0.0.2/24
expect_error "not a directory" --listen=127.0.0.1:$port --root="$work/missing"
expect_error "not a directory" --listen=127.0.0.1:$port --qlog-dir="$work/missing"
expect_error "/nonexistent/cert.pem" --listen=127.0.0.1:$port --cert=/nonexistent/cert.pem \
  --key=/nonexistent/key.pem

# A certificate file that holds no certificate.
echo "not a certificate" >"$work/junk.pem"
expect_error "junk.pem" --listen=127.0.0.1:$port --cert="$work/junk.pem" --key="$work/junk.pem"

# A key that does not match the certificate.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=a \
  -keyout "$work/a.key" -out "$work/a.pem" >/dev/null 2>&1 || fail "openssl"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/b.key" >/dev/null 2>&1 ||
  fail "openssl"
expect_error "match" --listen=127.0.0.1:$port --cert="$work/a.pem" --key="$work/b.key"

# A port another process holds, even one that set SO_REUSEPORT.
python3 -c "
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(('127.0.0.1', $port))
open('$work/bound', 'w').close()
time.sleep(30)
" &
pids+=($!)
# Bound for sure before the server tries (a loaded machine starts python slowly).
for _ in $(seq 1 100); do [[ -e $work/bound ]] && break; sleep 0.1; done
[[ -e $work/bound ]] || fail "the port holder did not start"
expect_error "Address already in use" --listen=127.0.0.1:$port

echo "dataplane CLI: ok"
