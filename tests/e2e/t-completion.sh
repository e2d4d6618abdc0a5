#!/bin/sh
# bash and zsh completion, driven the way the shells drive them.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$(dirname "$GRIDGPU")
"$GRIDGPU" site add glasgow --ce https://ce.example.org/arex >/dev/null 2>&1
"$GRIDGPU" site add lancaster --ce https://ce2.example.org/arex >/dev/null 2>&1
# Stored records as request and submit leave them: a queued session and job,
# a session that was killed and a job that finished.
recs=$XDG_STATE_HOME/gridgpu/records
mkdir -p "$recs" && chmod 700 "$XDG_STATE_HOME/gridgpu" "$recs"
for r in dev1:session:queued job-7:job:queued old1:session:killed jdone:job:finished; do
	n=${r%%:*} kind=${r#*:} state=${r##*:}
	kind=${kind%%:*}
	printf '{"version":1,"name":"%s","kind":"%s","site":"glasgow","ce":"https://ce.example.org/arex","state":"%s","created":1}\n' \
		$n $kind $state > "$recs/$n.json"
done
chmod 600 "$recs"/*.json
work=$T_TMP/work
mkdir -p "$work/my dir" "$work/other"
: > "$work/my file.sif"
: > "$work/dev.tar" && : > "$work/x.tar.gz" && : > "$work/notes.txt"
cd "$work" || exit 1

# bash: source the script, fill COMP_WORDS as readline would, read COMPREPLY.
# compopt only works under readline: here it records what the script asked for.
bash_complete() { # words... (the last one is the word being completed)
	PATH="$bindir:$PATH" bash --norc --noprofile -c '
		[ -f /usr/share/bash-completion/bash_completion ] && . /usr/share/bash-completion/bash_completion
		. "$0"
		compopt() { echo "compopt $*" >> "$HOME/.compopt"; }
		COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_gridgpu
		[ ${#COMPREPLY[@]} -gt 0 ] && printf "%s\n" "${COMPREPLY[@]}" | sort' "$top/completions/gridgpu.bash" "$@"
}
bc() { bash_complete "$@" | tr '\n' ' '; }
expect_eq "bash: commands" "$(bc gridgpu si)" "site sites "
expect_eq "bash: all commands come from the table" "$(bc gridgpu '')" "$("$GRIDGPU" __complete commands | sort | tr '\n' ' ')"
expect_eq "bash: subcommands" "$(bc gridgpu site '')" "add list remove set show "
expect_eq "bash: command options" "$(bc gridgpu site add --gpu)" "--gpu-capability --gpu-memory --gpu-model --gpu-queue --gpu-rte --gpus-per-node "
expect_eq "bash: a sub-command's own options only" "$(bc gridgpu proxy destroy --f)" "--file "
expect_eq "bash: global options" "$(bc gridgpu --js)" "--json "
expect_eq "bash: site names after --site" "$(bc gridgpu --site '')" "glasgow lancaster "
# readline splits --site=gl into "--site" "=" "gl"
expect_eq "bash: site names after --site=" "$(bc gridgpu --site = '')" "glasgow lancaster "
expect_eq "bash: --site=la" "$(bc gridgpu request --site = la)" "lancaster "
expect_eq "bash: site names for site show" "$(bc gridgpu site show la)" "lancaster "
expect_eq "bash: site set NAME" "$(bc gridgpu site set la)" "lancaster "
expect_eq "bash: site set NAME KEY (site add's value options)" "$(bc gridgpu site set glasgow gpu)" "gpu-capability gpu-memory gpu-model gpu-queue gpu-rte gpus-per-node "
expect_eq "bash: site set NAME auth VALUE" "$(bc gridgpu site set glasgow auth '')" "proxy token "
expect_eq "bash: site set NAME queue VALUE offers nothing" "$(bc gridgpu site set glasgow queue '')" ""
expect_eq "bash: site set NAME ca-dir VALUE offers directories" "$(bc gridgpu site set glasgow ca-dir '')" "my dir other "
expect_eq "bash: site set: nothing after VALUE" "$(bc gridgpu site set glasgow auth proxy '')" ""
expect_eq "bash: help COMMAND" "$(bc gridgpu help si)" "site sites "
expect_eq "bash: help COMMAND SUB-COMMAND" "$(bc gridgpu help proxy i)" "info init "
# Only what the command can act on: connect and freeze --session a live
# interactive session (they refuse a batch job, an ended session cannot be
# reached), kill what has not ended, get a batch job, request --resume an
# ended session; status and clean any.
expect_eq "bash: connect offers live session names" "$(bc gridgpu connect '')" "dev1 "
expect_eq "bash: reconnect offers live session names" "$(bc gridgpu reconnect '')" "dev1 "
expect_eq "bash: kill offers what has not ended" "$(bc gridgpu kill '')" "dev1 job-7 "
expect_eq "bash: get offers batch jobs" "$(bc gridgpu get '')" "jdone job-7 "
expect_eq "bash: request --resume offers ended sessions" "$(bc gridgpu request --resume '')" "old1 "
for c in status clean; do
	expect_eq "bash: $c offers every session and job" "$(bc gridgpu $c '')" "dev1 jdone job-7 old1 "
	expect_eq "bash: $c d offers dev1" "$(bc gridgpu $c d)" "dev1 "
done
expect_eq "bash: kill NAME NAME... (more operands)" "$(bc gridgpu kill dev1 j)" "job-7 "
expect_eq "bash: freeze --session offers session names" "$(bc gridgpu freeze --session '')" "dev1 "
expect_eq "bash: freeze --session= offers session names" "$(bc gridgpu freeze --session = '')" "dev1 "
expect_eq "bash: --format offers its choices" "$(bc gridgpu freeze --format '')" "dir oci tar "
expect_eq "bash: --comp=z offers zstd" "$(bc gridgpu freeze --comp = z)" "zstd "
expect_eq "bash: --auth offers its choices" "$(bc gridgpu site add x --auth '')" "proxy token "
expect_eq "bash: --runtime offers its choices" "$(bc gridgpu site add x --runtime '')" "apptainer bwrap "
expect_eq "bash: --mig offers the MIG profiles" "$(bc gridgpu request --mig 1g.1)" "1g.10gb 1g.10gb+me 1g.12gb 1g.12gb+me 1g.18gb 1g.18gb+me "
expect_eq "bash: submit --mig=7 offers the whole-GPU profiles" "$(bc gridgpu submit x.sif --mig = 7)" "7g.141gb 7g.180gb 7g.40gb 7g.80gb 7g.94gb 7g.96gb "
# what completion offers is what request takes (one table in the library)
migs=$("$GRIDGPU" __complete line -- gridgpu request --mig '' | tail -n +2)
bad_migs=
for m in $migs; do
	run_gg request --mig "$m" --walltime 4
	printf '%s' "$ERR" | grep -q -- "--walltime: '4' needs a unit" || bad_migs="$bad_migs $m: $ERR"
done
[ "$(printf '%s\n' $migs | wc -l)" -ge 30 ] && [ -z "$bad_migs" ] && ok "each --mig profile offered is taken by request" || not_ok "--mig profiles offered: $migs; refused:$bad_migs"
expect_eq "bash: --walltime offers nothing (not files)" "$(bc gridgpu request --walltime '')" ""
expect_eq "bash: --timeout offers nothing" "$(bc gridgpu connect --timeout '')" ""
rm -f "$HOME/.compopt"
expect_eq "bash: file operands" "$(bc gridgpu freeze my)" "my dir my file.sif "
grep -q -- "-o filenames" "$HOME/.compopt" 2>/dev/null && ok "bash: file names completed with -o filenames" || not_ok "bash: -o filenames asked for"
expect_eq "bash: --dir offers directories only" "$(bc gridgpu get x --dir '')" "my dir other "
expect_eq "bash: after -- in submit, files" "$(bc gridgpu submit x.sif -- my)" "my dir my file.sif "
# submit and request --image take images: directories and the files named as
# one (a SIF, a tar, compressed or not), not every file (notes.txt)
expect_eq "bash: submit offers images only" "$(bc gridgpu submit '')" "dev.tar my dir my file.sif other x.tar.gz "
expect_eq "bash: request --image offers images only" "$(bc gridgpu request --image '')" "dev.tar my dir my file.sif other x.tar.gz "
expect_eq "bash: --image= offers images only" "$(bc gridgpu request --image = '')" "dev.tar my dir my file.sif other x.tar.gz "

# Typed for real: the line and TAB go into an interactive shell on a pty and
# the line it leaves is read back (bash-type.py, zsh-type.zsh: each waits for
# the shell's own output with a deadline, never for quiet). One case a line:
# LINE|WHAT THE LINE BECOMES|. The directory ~/.globus is for ~ expansion.
mkdir -p "$HOME/.globus"
typed() { # description-prefix command [args]: each case through "command LINE args"
	_p=$1 _f=$2
	shift 2
	while IFS='|' read -r line want _; do
		expect_eq "$_p: '$line<TAB>'" "$("$_f" "$line" "$@" </dev/null)" "$want"
	done <<'EOF'
gridgpu freeze my|gridgpu freeze my\ |
gridgpu freeze my\ f|gridgpu freeze my\ file.sif |
gridgpu freeze my\ d|gridgpu freeze my\ dir/|
gridgpu freeze --output oth|gridgpu freeze --output other/|
gridgpu freeze --output=my\ d|gridgpu freeze --output=my\ dir/|
gridgpu proxy init --cert ~/.glo|gridgpu proxy init --cert ~/.globus/|
gridgpu --site=gl|gridgpu --site=glasgow |
gridgpu --site la|gridgpu --site lancaster |
gridgpu request --site=la|gridgpu request --site=lancaster |
gridgpu connect d|gridgpu connect dev1 |
gridgpu kill jo|gridgpu kill job-7 |
gridgpu status de|gridgpu status dev1 |
gridgpu submit de|gridgpu submit dev.tar |
gridgpu freeze --session d|gridgpu freeze --session dev1 |
gridgpu freeze --comp=z|gridgpu freeze --comp=zstd |
gridgpu freeze --format o|gridgpu freeze --format oci |
gridgpu site add x --auth t|gridgpu site add x --auth token |
gridgpu site set glasgow gpu-r|gridgpu site set glasgow gpu-rte |
gridgpu request --walltime m|gridgpu request --walltime m|
gridgpu request -t m|gridgpu request -t m|
EOF
}
# bash, with and without bash-completion loaded.
bt() { PATH="$bindir:$PATH" /usr/bin/python3 "$top/tests/e2e/bash-type.py" "$top/completions/gridgpu.bash" "$@"; }
for pre in "" /usr/share/bash-completion/bash_completion; do
	[ -n "$pre" ] && [ ! -f "$pre" ] && continue
	typed "bash typed${pre:+ (bash-completion loaded)}" bt $pre
done

# zsh: load the function with compinit under zsh -f, with _describe/compadd
# replaced by recorders, so the test sees exactly what zsh would be offered.
if command -v zsh >/dev/null 2>&1; then
	zsh_complete() {
		PATH="$bindir:$PATH" zsh -f -c '
			fpath=("$0" $fpath)
			autoload -U compinit; compinit -u -d "$HOME/.zcompdump"
			autoload -U _gridgpu
			_describe() { for x in ${(P)${@[-1]}}; do print -r -- "${x%%:*}"; done; }
			compadd() { [[ $1 == -- ]] && shift; print -rl -- "$@"; }
			compset() { print -r -- "<compset $*>"; }
			_files() { print -r -- "<files $*>"; }
			words=("$@"); CURRENT=$#
			_gridgpu | sort' "$top/completions" "$@"
	}
	zc() { zsh_complete "$@" | tr '\n' ' '; }
	expect_eq "zsh: commands" "$(zc gridgpu '')" "$("$GRIDGPU" __complete commands | sort | tr '\n' ' ')"
	expect_eq "zsh: subcommands" "$(zc gridgpu site '')" "add list remove set show "
	zsh_complete gridgpu site add --g | grep -qx -- --gpu-queue && ok "zsh: command options" || not_ok "zsh: command options"
	expect_eq "zsh: site names" "$(zc gridgpu --site '')" "glasgow lancaster "
	expect_eq "zsh: --site= (the prefix kept by compset)" "$(zc gridgpu --site=la)" "<compset -P *=> lancaster "
	expect_eq "zsh: site set NAME KEY" "$(zc gridgpu site set glasgow run)" "runtime "
	expect_eq "zsh: site show NAME" "$(zc gridgpu site show '')" "glasgow lancaster "
	expect_eq "zsh: connect offers live session names" "$(zc gridgpu connect '')" "dev1 "
	expect_eq "zsh: kill offers what has not ended" "$(zc gridgpu kill '')" "dev1 job-7 "
	expect_eq "zsh: get offers batch jobs" "$(zc gridgpu get '')" "jdone job-7 "
	expect_eq "zsh: status offers every session and job" "$(zc gridgpu status '')" "dev1 jdone job-7 old1 "
	expect_eq "zsh: freeze --session offers session names" "$(zc gridgpu freeze --session '')" "dev1 "
	expect_eq "zsh: --comp offers its choices" "$(zc gridgpu freeze --comp '')" "gzip lz4 xz zstd "
	expect_eq "zsh: --mig offers the MIG profiles" "$(zc gridgpu request --mig 3g.4)" "3g.40gb 3g.47gb 3g.48gb "
	expect_eq "zsh: --walltime offers nothing" "$(zc gridgpu request --walltime '')" ""
	expect_eq "zsh: file operands" "$(zc gridgpu inspect '')" "<files > "
	expect_eq "zsh: directory values" "$(zc gridgpu get x --dir '')" "<files -/> "
	expect_eq "zsh: submit offers images only" "$(zc gridgpu submit '')" \
		"<files -g *.(sif|tar|tar.gz|tgz|tar.xz|txz|tar.zst|tzst|tar.bz2|tbz2|tar.lz4)(-.)> "
	# zsh for real, under zsh -f on a pty (zpty), with zsh's own _files.
	zt() { PATH="$bindir:$PATH" zsh -f "$top/tests/e2e/zsh-type.zsh" "$top/completions" "$1"; }
	typed "zsh typed" zt
else
	not_ok "zsh is installed (make deps)"
fi
done_testing
