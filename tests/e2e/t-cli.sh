#!/bin/sh
# The command-line skeleton: help, version, unknown commands, exit codes, site profiles.
. "$(dirname "$0")/lib.sh"

run_gg --version
expect_eq "--version prints the version" "$(echo "$OUT" | cut -d' ' -f1)" gridgpu
printf '%s\n' "$OUT" | grep -qE '^  OpenSSL +3\.' && printf '%s\n' "$OUT" | grep -qE '^  libcurl +[0-9]' && printf '%s\n' "$OUT" | grep -qE '^  libssh2 +[0-9]' &&
	ok "--version lists the libraries' versions" || not_ok "--version: $OUT"
for args in "--json --version" "--version --json"; do
	run_gg $args
	printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["version"] and d["libraries"]["OpenSSL"].startswith("3.") and "jansson" in d["libraries"]' 2>/dev/null &&
		ok "gridgpu $args: JSON with the libraries" || not_ok "gridgpu $args: $OUT"
	json_valid version
done
run_gg --help
expect_eq "--help exits 0" "$RC" 0
echo "$OUT" | grep -q "Exit codes:" && ok "--help documents exit codes" || not_ok "--help documents exit codes"
run_gg
expect_eq "no command is a usage error" "$RC" 2
expect_fail "unknown command suggests the nearest" 2 "did you mean 'site'" sitte
expect_fail "a transposition is one edit: lsit suggests list" 2 "did you mean 'list'?" lsit
expect_fail "a mistyped long option suggests the nearest" 2 "unknown option '--sitee'; did you mean '--site'?" list --sitee x
expect_fail "a mistyped command option suggests the nearest" 2 "did you mean '--gpu-queue'?" site add x --ce https://ce/arex --gpu-queeu q
expect_fail "an ambiguous option prefix names the candidates" 2 "option '--gpu' is ambiguous: --gpu-queue, --gpu-rte" site add x --ce https://ce/arex --gpu q
expect_fail "voms-style -valid: one line saying to use --valid" 2 "single-dash long options are not supported: use --valid" doctor -valid 24:00
expect_fail "connect -L: ssh options go after --" 2 "unknown option '-L': to hand it on, put it after '--'" connect x -L 8888:localhost:8888
expect_fail "submit: the job's options go after --" 2 "put it after '--'" submit x.sif python -u
expect_fail "a mistyped sub-command suggests the nearest" 2 "site: unknown sub-command 'ad'; did you mean 'add'?" site ad x
expect_fail "a mistyped proxy sub-command" 2 "did you mean 'info'?" proxy ifno
expect_fail "proxy without a sub-command names them" 2 "expected a sub-command: init, info or destroy" proxy
expect_fail "unknown global option" 2 "unknown option '--bogus'" --bogus site list
run_gg help site
expect_eq "help COMMAND exits 0" "$RC" 0
echo "$OUT" | grep -q -- "--jump" && ok "help site lists its options" || not_ok "help site lists its options"
# Each sub-command with only its own options: --ce under add, nothing under show.
printf '%s\n' "$OUT" | awk '/^  site show/{s=1;next} /^  site /{s=0} s' > "$T_TMP/show-part"
[ -s "$T_TMP/show-part" ] && ! grep -q -- "--ce" "$T_TMP/show-part" && ok "help site: add's options are not listed under show" || not_ok "help site: add's options under show: $(cat "$T_TMP/show-part")"
printf '%s\n' "$OUT" | awk '/^  site add/{s=1;next} /^  site /{s=0} s' | grep -q -- "--force" && ok "help site: --force under add" || not_ok "help site: --force under add"
run_gg help site add
expect_eq "help site add exits 0" "$RC" 0
printf '%s' "$OUT" | grep -q "^Usage: gridgpu site add NAME --ce URL" && ok "help site add: the sub-command's usage" || not_ok "help site add: $OUT"
run_gg help proxy
printf '%s\n' "$OUT" | awk '/^  proxy destroy/{s=1;next} /^  proxy /{s=0} /^Global/{s=0} s' > "$T_TMP/destroy-part"
grep -q -- "--file" "$T_TMP/destroy-part" && ! grep -q -- "--bits" "$T_TMP/destroy-part" && ok "help proxy: destroy lists --file, not init's --bits" || not_ok "help proxy: destroy part: $(cat "$T_TMP/destroy-part")"
run_gg proxy info --help
printf '%s' "$OUT" | grep -q -- "--bits" && not_ok "proxy info --help lists init's --bits" || ok "proxy info --help: only info's options"
expect_fail "help of an unknown command" 2 "is not a gridgpu command" help nosuch

# Site profiles.
run_gg site list
expect_eq "site list on an empty config" "$RC" 0
run_gg site
expect_eq "site with no sub-command lists (exit 0)" "$RC" 0
printf '%s' "$ERR" | grep -q "no sites yet" && ok "site alone is site list" || not_ok "site alone is site list: $ERR"
# No site yet: request says what to do, step by step (the README's sequence).
expect_fail "request with no site and no default site" 2 "no site given and no default site" request
printf '%s' "$ERR" | grep -q "^Getting started" && printf '%s' "$ERR" | grep -q "gridgpu site add NAME --default --ce URL" &&
	ok "request with no site prints the getting-started steps" || not_ok "request with no site: $ERR"
run_gg site add glasgow --ce https://ce.example.org:443/arex --jump alice@gw.example.org \
	--jump alice@login2.example.org:2222 --gpu-queue gpu --idle-limit 2h --connect-deadline 20m
expect_eq "site add" "$RC" 0
[ "$(stat -c %a "$XDG_CONFIG_HOME/gridgpu/config")" = 600 ] && ok "config written 0600" || not_ok "config written 0600"
run_gg site show glasgow
printf '%s\n' "$OUT" > "$T_TMP/snippet"
grep -q '^jump = alice@login2.example.org:2222$' "$T_TMP/snippet" && ok "site show prints the INI snippet" || not_ok "site show prints the INI snippet"
run_gg --json site list
json_valid site-list
expect_eq "site list --json" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin)["items"]; print(d[0]["name"], d[0]["jumps"][1], d[0]["idle_limit"], d[0]["default"])')" "glasgow alice@login2.example.org:2222 7200 True"
# The snippet handed out by an admin is a valid config by itself.
run_gg --config "$T_TMP/snippet" site show glasgow
expect_eq "a site snippet is a config file" "$RC" 0
expect_fail "site add without --ce" 2 "--ce URL is required" site add x
# site add over an existing site: refused, nothing changed; --force replaces and says what changed.
cp "$XDG_CONFIG_HOME/gridgpu/config" "$T_TMP/config-before"
expect_fail "site add on an existing site is refused" 2 "site 'glasgow' exists (nothing changed): add --force" site add glasgow --ce https://other.example.org/arex
cmp -s "$XDG_CONFIG_HOME/gridgpu/config" "$T_TMP/config-before" && ok "the refused site add changed nothing" || not_ok "the refused site add changed the config"
run_gg site add glasgow --ce https://other.example.org/arex --jump bob@gw2.example.org --force
expect_eq "site add --force replaces" "$RC" 0
printf '%s' "$ERR" | grep -qF "ce: https://ce.example.org:443/arex → https://other.example.org/arex" && ok "--force shows the changed CE (old → new)" || not_ok "--force changes: $ERR"
printf '%s' "$ERR" | grep -qF "gpu-queue: gpu → (none)" && ok "--force shows a setting it dropped" || not_ok "--force dropped setting: $ERR"
printf '%s' "$ERR" | grep -qF "jump: alice@gw.example.org, alice@login2.example.org:2222 → bob@gw2.example.org" && ok "--force shows the new jump hosts" || not_ok "--force jumps: $ERR"
run_gg site show glasgow
printf '%s\n' "$OUT" | grep -q '^ce = https://other.example.org/arex$' && ! printf '%s' "$OUT" | grep -q gpu_queue && ok "--force replaced the whole site" || not_ok "--force replaced: $OUT"
run_gg site set glasgow gpu-queue gpu2
expect_eq "site set KEY VALUE" "$RC" 0
printf '%s' "$ERR" | grep -qF "gpu-queue: (none) → gpu2" && ok "site set shows the change" || not_ok "site set change: $ERR"
run_gg site show glasgow
printf '%s\n' "$OUT" | grep -q '^gpu_queue = gpu2$' && printf '%s\n' "$OUT" | grep -q '^jump = bob@gw2.example.org$' && ok "site set changes one setting, keeps the others" || not_ok "site set: $OUT"
run_gg site set glasgow jump "a@h1.example.org,b@h2.example.org:2222"
run_gg site show glasgow
expect_eq "site set jump takes the hops separated by ','" "$(printf '%s\n' "$OUT" | grep -c '^jump = ')" 2
run_gg site set glasgow gpu-queue ""
run_gg site show glasgow
printf '%s' "$OUT" | grep -q gpu_queue && not_ok "site set KEY '' clears it" || ok "site set KEY '' clears it"
# token_refresh could be set only in the file: it is a KEY (and an option) as every key is
run_gg --json site set glasgow token-refresh 10m
json_valid site
expect_eq "site set token-refresh: in --json, in seconds" "$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("token_refresh"))')" 600
run_gg site show glasgow
printf '%s\n' "$OUT" | grep -q '^token_refresh = 10m$' && ok "site set token-refresh writes token_refresh" || not_ok "site set token-refresh: $OUT"
run_gg site set glasgow token-refresh ""
expect_fail "site set an unknown key suggests the nearest" 2 "unknown KEY 'gpuqueue'; did you mean 'gpu-queue'?" site set glasgow gpuqueue x
expect_fail "site set a bad value" 2 "must start with https://" site set glasgow ce http://x
expect_fail "site set an unknown site" 5 "no such site" site set nosuch queue q
expect_fail "site set without VALUE" 2 "expected NAME KEY VALUE" site set glasgow queue
run_gg site add glasgow --ce https://ce.example.org:443/arex --jump alice@gw.example.org \
	--jump alice@login2.example.org:2222 --gpu-queue gpu --idle-limit 2h --connect-deadline 20m --force
expect_eq "site add --force back to the first profile" "$RC" 0
expect_fail "site add with http" 2 "must start with https://" site add x --ce http://ce/arex
expect_fail "site add with a bad jump" 2 "expected [USER@]HOST[:PORT]" site add x --ce https://ce/arex --jump 'a@b:99999'
expect_fail "site add with a bad duration" 2 "invalid duration '5q'" site add x --ce https://ce/arex --idle-limit 5q
expect_fail "site add with a spelled-out unit" 2 "did you mean 30m?" site add x --ce https://ce/arex --idle-limit 30min
expect_fail "site add with a bad name" 2 "invalid site name" site add '../x' --ce https://ce/arex
expect_fail "site show unknown" 5 "no such site" site show nosuch
# The --json error's what names things bare: no quotes from the message's wording.
for args in "status nosuch" "site show nosuch" "--site glasow list"; do
	run_gg --json $args
	expect_eq "--json $args: the error's what without quotes" \
		"$(printf '%s' "$OUT" | python3 -c 'import json,sys; w=json.load(sys.stdin)["error"]["what"]; print("quoted" if "\x27" in w or "\"" in w else "bare")')" bare
done
# An unknown --site is refused by every command (exit 2), naming the nearest profile.
for cmd in "list" "status x" "kill x" "connect x" "get x" "clean" "ssh-config" "doctor" "request" "submit x.sif -- true" "site show" "freeze x -o y.sif"; do
	expect_fail "--site glasow $cmd: refused (2) with a did-you-mean" 2 "--site 'glasow': no such site; did you mean 'glasgow'?" --site glasow $cmd
done
expect_fail "list --site after the command: refused too" 2 "--site 'nowhere': no such site in" list --site nowhere
expect_fail "a second --site that is unknown is refused" 2 "--site 'glasow'" --site glasgow --site glasow list
run_gg --site glasgow list
expect_eq "a known --site is taken by list" "$RC" 0
printf '[site a]\nce = https://x\nbogus = 1\n' > "$T_TMP/bad.conf"
expect_fail "config with an unknown key names the line" 2 "line 3" --config "$T_TMP/bad.conf" site list
expect_fail "request --cpus that is not a number" 2 "--cpus 'many': expected a whole number from 1 to 4096" request --cpus many
expect_fail "submit --count out of range" 2 "--count '0': expected a whole number from 1 to 1000" submit x.sif --count 0 -- true
# Durations and sizes need a unit: a bare number is not silently seconds or bytes.
expect_fail "request --walltime 4 is refused, saying what to type" 2 "--walltime: '4' needs a unit: 4h, 4m or 4d" request --walltime 4
expect_fail "request --memory 16 is refused, saying what to type" 2 "--memory: '16' needs a unit: 16G or 16M" request --memory 16
expect_fail "submit --walltime 4 is refused" 2 "--walltime: '4' needs a unit" submit x.sif --walltime 4 -- true
expect_fail "submit --memory 16 is refused" 2 "--memory: '16' needs a unit" submit x.sif --memory 16 -- true
expect_fail "submit --min-gpu-memory 40 is refused" 2 "--min-gpu-memory: '40' needs a unit" submit x.sif --min-gpu-memory 40 -- true
expect_fail "request -t 4 (the short option) is refused" 2 "--walltime: '4' needs a unit" request -t 4
expect_fail "request --idle-limit 3600 is refused" 2 "--idle-limit: '3600' needs a unit" request --idle-limit 3600
expect_fail "request --timeout 30 is refused" 2 "--timeout: '30' needs a unit" request --timeout 30
expect_fail "connect --timeout 30 is refused" 2 "--timeout: '30' needs a unit" connect x --timeout 30
expect_fail "get --timeout 30 is refused" 2 "--timeout: '30' needs a unit" get x --timeout 30
expect_fail "doctor --valid 2 is refused" 2 "--valid: '2' needs a unit" doctor --valid 2
expect_fail "proxy info --valid 6 is a usage error (2), as --walltime 4 is" 2 "'6' needs a unit: 6h" proxy info --valid 6
expect_fail "proxy init --valid 12 is a usage error (2), as --walltime 4 is" 2 "'12' needs a unit: 12h" proxy init --valid 12
expect_fail "site add --idle-limit 7200 is refused" 2 "--idle-limit: '7200' needs a unit" site add u --ce https://ce/arex --idle-limit 7200
run_gg site show u
expect_eq "the refused site was not added" "$RC" 5
run_gg site add u --ce https://ce/arex --idle-limit 0
expect_eq "a bare 0 (none) is still taken" "$RC" 0
run_gg site remove u
printf '[site a]\nce = https://x/arex\nconnect_deadline = 1200\n' > "$T_TMP/bare.conf"
expect_fail "a bare number in the config file names the key and the unit" 2 "connect_deadline: '1200' needs a unit: 1200h, 1200m" --config "$T_TMP/bare.conf" site list
# MIG profiles in NVIDIA's spelling, the right one suggested for a near miss.
expect_fail "request --mig 1g10gb suggests 1g.10gb" 2 "--mig: '1g10gb' is not a MIG profile: did you mean '1g.10gb'?" request --mig 1g10gb
expect_fail "submit --mig 1G.10GB suggests 1g.10gb" 2 "did you mean '1g.10gb'?" submit x.sif --mig 1G.10GB -- true
expect_fail "request --mig 9g.90gb: at most 7 slices" 2 "1 to 7 slices" request --mig 9g.90gb
expect_fail "request --mig nonsense shows NVIDIA's form" 2 "e.g. 1g.10gb" request --mig fast
run_gg request --mig 1g.10gb+me --walltime 4
printf '%s' "$ERR" | grep -q -- "--mig" && not_ok "request --mig 1g.10gb+me is a valid profile: $ERR" || ok "request --mig 1g.10gb+me is a valid profile (only --walltime is refused)"
# ssh-config --install keeps the backup it reports.
mkdir -p "$HOME/.ssh"
printf 'Host old\n  User me\n' > "$HOME/.ssh/config"
run_gg ssh-config --install
expect_eq "ssh-config --install" "$RC" 0
bak=$(printf '%s' "$ERR" | sed -n 's/.*(backup: \(.*\))$/\1/p')
[ -n "$bak" ] && [ -f "$bak" ] && ok "ssh-config --install: the backup it reports exists" || not_ok "ssh-config --install backup '$bak': $ERR"
[ -n "$bak" ] && printf 'Host old\n  User me\n' | cmp -s - "$bak" && ok "the backup holds the config as it was" || not_ok "the backup holds the config as it was"
# This HOME is not the passwd entry's, where OpenSSH looks for ~/.ssh/config: one line says so and what to do.
pwhome=$(getent passwd "$(id -u)" | cut -d: -f6)
expect_eq "ssh-config --install into a HOME ssh does not read: one warning naming the passwd home" \
	"$(printf '%s\n' "$ERR" | grep -c "^gridgpu: warning: ssh reads ~/.ssh/config in $pwhome (your passwd entry), not in \$HOME ($HOME): .*add 'Include .*' to $pwhome/.ssh/config, or run this with HOME=$pwhome$")" 1
rm -f "$HOME/.ssh/config" "$bak"
# Through a symbolic link (a dotfile manager's): the target is changed and backed up, the link kept.
mkdir -p "$HOME/dotfiles"
printf 'Host old\n  User me\n' > "$HOME/dotfiles/ssh_config"
ln -s "$HOME/dotfiles/ssh_config" "$HOME/.ssh/config"
run_gg ssh-config --install
expect_eq "ssh-config --install through a symlink" "$RC" 0
bak=$(printf '%s' "$ERR" | sed -n 's/.*(backup: \(.*\))$/\1/p')
expect_eq "the backup it reports is next to the link's target" "$bak" "$HOME/dotfiles/ssh_config.gridgpu-backup"
[ -f "$bak" ] && printf 'Host old\n  User me\n' | cmp -s - "$bak" && ok "symlink: the backup exists and holds the old config" || not_ok "symlink: backup '$bak'"
[ -L "$HOME/.ssh/config" ] && grep -q '^Include ' "$HOME/dotfiles/ssh_config" && ok "symlink: the link is kept, its target has the Include" || not_ok "symlink: link or target: $(ls -l "$HOME/.ssh/config")"
rm -f "$HOME/.ssh/config" "$bak" "$HOME/dotfiles/ssh_config"
run_gg ssh-config --install
printf '%s' "$ERR" | grep -q "backup" && not_ok "no backup claimed for a new ~/.ssh/config: $ERR" || ok "no backup claimed for a new ~/.ssh/config"
ls "$HOME/.ssh/" | grep -q gridgpu-backup && not_ok "no backup file for a new ~/.ssh/config" || ok "no backup file for a new ~/.ssh/config"
run_gg site remove glasgow
run_gg site show glasgow
expect_eq "site remove" "$RC" 5

# An empty listing says what would fill it, also when only the other kind is there.
run_gg jobs
expect_eq "jobs with none: what runs one" "$RC $OUT$ERR" "0 no batch jobs: 'gridgpu submit IMAGE.sif -- COMMAND' runs one"
mkdir -p "$XDG_STATE_HOME/gridgpu/records" && chmod 700 "$XDG_STATE_HOME/gridgpu/records"
printf '{"version":1,"kind":"session","name":"s1","site":"tb","state":"ready","created":%s}\n' "$(date +%s)" \
	>"$XDG_STATE_HOME/gridgpu/records/s1.json"
chmod 600 "$XDG_STATE_HOME/gridgpu/records/s1.json"
run_gg jobs
expect_eq "jobs with a session only: no bare table header" "$RC $OUT$ERR" "0 no batch jobs: 'gridgpu submit IMAGE.sif -- COMMAND' runs one"
run_gg list --sessions
printf '%s\n' "$OUT" | grep -q '^s1 ' && ok "list --sessions shows the session" || not_ok "list --sessions: $OUT"
# connect with no NAME and two live sessions names them (an ended one is not live).
for r in "s2 queued" "s0 finished"; do
	printf '{"version":1,"kind":"session","name":"%s","site":"tb","state":"%s","created":%s}\n' ${r% *} ${r#* } "$(date +%s)" \
		>"$XDG_STATE_HOME/gridgpu/records/${r% *}.json"
	chmod 600 "$XDG_STATE_HOME/gridgpu/records/${r% *}.json"
done
expect_fail "connect with two live sessions names them (usage, 2)" 2 "connect: 2 live sessions: s1, s2: name one (gridgpu connect NAME)" connect
rm -f "$XDG_STATE_HOME/gridgpu/records/s1.json" "$XDG_STATE_HOME/gridgpu/records/s2.json" "$XDG_STATE_HOME/gridgpu/records/s0.json"
run_gg list --sessions
expect_eq "list --sessions with none" "$RC $OUT$ERR" "0 no sessions: 'gridgpu request' starts one"
done_testing
