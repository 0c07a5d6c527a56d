#!/usr/bin/env bash
# docs/fleet.nft in a network namespace of its own (unshare --net: the
# host's ruleset is never touched): it loads, the rolling-restart recipe's
# one command takes host 1 out of the Initial buckets while the server-ID
# map still names it, and putting it back restores the template's buckets.
set -uo pipefail
ruleset=$1
fail() { echo "FAIL: $*"; exit 1; }
command -v nft >/dev/null || fail "nft is missing (tools/setup.sh installs nftables)"

# The recipe's commands, as docs/fleet.md gives them.
take_out='delete element ip dpquic_lb initial_hosts { 0, 3 };
  add element ip dpquic_lb initial_hosts { 0 : 10.0.1.2, 3 : 10.0.1.3 }'
put_back='delete element ip dpquic_lb initial_hosts { 0, 3 };
  add element ip dpquic_lb initial_hosts { 0 : 10.0.1.1, 3 : 10.0.1.1 }'

out=$(unshare --net bash -c "
  set -e
  nft -f '$ruleset'
  echo '--- loaded'; nft list ruleset
  nft '$take_out'
  echo '--- taken out'; nft list ruleset
  nft '$put_back'
  echo '--- put back'; nft list ruleset
" 2>&1) || fail "nft: $out"

section() { sed -n "/^--- $1\$/,/^---/p" <<<"$out"; }
buckets() { section "$1" | tr -d '\n\t' | grep -o 'elements = {[^}]*}'; }
server_ids() { section "$1" | grep -o 'dnat to @th,80,8 map {[^}]*}'; }

[[ $(buckets loaded | grep -o '10\.0\.1\.1' | wc -l) -eq 2 ]] ||
  fail "the template does not give host 1 two buckets: $(buckets loaded)"
buckets "taken out" | grep -q '10\.0\.1\.1' && fail "host 1 still has Initial buckets"
[[ $(buckets "taken out" | grep -o '10\.0\.1\.[23]' | wc -l) -eq 6 ]] ||
  fail "the other hosts do not hold all six buckets: $(buckets "taken out")"
server_ids "taken out" | grep -q '1 : 10\.0\.1\.1' || fail "host 1 left the server-ID map"
[[ $(buckets "put back") == "$(buckets loaded)" ]] ||
  fail "putting host 1 back did not restore the buckets: $(buckets "put back")"
section loaded | grep -q '@th,64,8 & 0x80 == 0x0 dnat to @th,80,8 map' ||
  fail "no short-header rule by server ID"
echo "fleet ruleset: ok"
