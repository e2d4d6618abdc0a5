#!/bin/sh
# The command-line skeleton: help, version, unknown commands, exit codes, site profiles.
. "$(dirname "$0")/lib.sh"

run_gg --version
expect_eq "--version prints the version" "$(echo "$OUT" | cut -d' ' -f1)" gridgpu
run_gg --help
expect_eq "--help exits 0" "$RC" 0
echo "$OUT" | grep -q "Exit codes:" && ok "--help documents exit codes" || not_ok "--help documents exit codes"
run_gg
expect_eq "no command is a usage error" "$RC" 2
expect_fail "unknown command suggests the nearest" 2 "did you mean 'site'" sitte
expect_fail "unknown global option" 2 "unknown option '--bogus'" --bogus site list
run_gg help site
expect_eq "help COMMAND exits 0" "$RC" 0
echo "$OUT" | grep -q -- "--jump" && ok "help site lists its options" || not_ok "help site lists its options"
expect_fail "help of an unknown command" 2 "is not a gridgpu command" help nosuch

# Site profiles.
run_gg site list
expect_eq "site list on an empty config" "$RC" 0
run_gg site add glasgow --ce https://ce.example.org:443/arex --jump alice@gw.example.org \
	--jump alice@login2.example.org:2222 --gpu-queue gpu --idle-limit 2h --connect-deadline 20m
expect_eq "site add" "$RC" 0
[ "$(stat -c %a "$XDG_CONFIG_HOME/gridgpu/config")" = 600 ] && ok "config written 0600" || not_ok "config written 0600"
run_gg site show glasgow
printf '%s\n' "$OUT" > "$T_TMP/snippet"
grep -q '^jump = alice@login2.example.org:2222$' "$T_TMP/snippet" && ok "site show prints the INI snippet" || not_ok "site show prints the INI snippet"
run_gg --json site list
expect_eq "site list --json" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[0]["name"], d[0]["jumps"][1], d[0]["idle_limit"], d[0]["default"])')" "glasgow alice@login2.example.org:2222 7200 True"
# The snippet handed out by an admin is a valid config by itself.
run_gg --config "$T_TMP/snippet" site show glasgow
expect_eq "a site snippet is a config file" "$RC" 0
expect_fail "site add without --ce" 2 "--ce URL is required" site add x
expect_fail "site add with http" 2 "must start with https://" site add x --ce http://ce/arex
expect_fail "site add with a bad jump" 2 "expected [USER@]HOST[:PORT]" site add x --ce https://ce/arex --jump 'a@b:99999'
expect_fail "site add with a bad duration" 2 "invalid duration '5q'" site add x --ce https://ce/arex --idle-limit 5q
expect_fail "site add with a bad name" 2 "invalid site name" site add '../x' --ce https://ce/arex
expect_fail "site show unknown" 5 "no such site" site show nosuch
printf '[site a]\nce = https://x\nbogus = 1\n' > "$T_TMP/bad.conf"
expect_fail "config with an unknown key names the line" 2 "line 3" --config "$T_TMP/bad.conf" site list
expect_fail "request --cpus that is not a number" 2 "--cpus 'many': expected a whole number from 1 to 4096" request --cpus many
expect_fail "submit --count out of range" 2 "--count '0': expected a whole number from 1 to 1000" submit x.sif --count 0 -- true
run_gg site remove glasgow
run_gg site show glasgow
expect_eq "site remove" "$RC" 5
done_testing
