#!/bin/sh
# bash and zsh completion, driven the way the shells drive them.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$(dirname "$GRIDGPU")
"$GRIDGPU" site add glasgow --ce https://ce.example.org/arex >/dev/null 2>&1
"$GRIDGPU" site add lancaster --ce https://ce2.example.org/arex >/dev/null 2>&1
# Two stored records (a session and a job), as request and submit leave them.
recs=$XDG_STATE_HOME/gridgpu/records
mkdir -p "$recs" && chmod 700 "$XDG_STATE_HOME/gridgpu" "$recs"
for n in dev1 job-7; do
	kind=session; [ $n = job-7 ] && kind=job
	printf '{"version":1,"name":"%s","kind":"%s","site":"glasgow","ce":"https://ce.example.org/arex","state":"queued","created":1}\n' \
		$n $kind > "$recs/$n.json"
done
chmod 600 "$recs"/*.json
work=$T_TMP/work
mkdir -p "$work/my dir" "$work/other"
: > "$work/my file.sif"
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
expect_eq "bash: commands" "$(bc gridgpu si)" "site "
expect_eq "bash: all commands come from the table" "$(bc gridgpu '')" "$("$GRIDGPU" __complete commands | sort | tr '\n' ' ')"
expect_eq "bash: subcommands" "$(bc gridgpu site '')" "add list remove set show "
expect_eq "bash: command options" "$(bc gridgpu site add --gpu)" "--gpu-queue --gpu-rte "
expect_eq "bash: a sub-command's own options only" "$(bc gridgpu proxy destroy --f)" "--file "
expect_eq "bash: global options" "$(bc gridgpu --js)" "--json "
expect_eq "bash: site names after --site" "$(bc gridgpu --site '')" "glasgow lancaster "
# readline splits --site=gl into "--site" "=" "gl"
expect_eq "bash: site names after --site=" "$(bc gridgpu --site = '')" "glasgow lancaster "
expect_eq "bash: --site=la" "$(bc gridgpu request --site = la)" "lancaster "
expect_eq "bash: site names for site show" "$(bc gridgpu site show la)" "lancaster "
expect_eq "bash: help COMMAND" "$(bc gridgpu help si)" "site "
expect_eq "bash: help COMMAND SUB-COMMAND" "$(bc gridgpu help proxy i)" "info init "
expect_eq "bash: connect offers record names" "$(bc gridgpu connect '')" "dev1 job-7 "
for c in status kill get clean; do
	expect_eq "bash: $c offers record names" "$(bc gridgpu $c d)" "dev1 "
done
expect_eq "bash: freeze --session offers record names" "$(bc gridgpu freeze --session '')" "dev1 job-7 "
expect_eq "bash: --format offers its choices" "$(bc gridgpu freeze --format '')" "dir oci tar "
expect_eq "bash: --comp=z offers zstd" "$(bc gridgpu freeze --comp = z)" "zstd "
expect_eq "bash: --auth offers its choices" "$(bc gridgpu site add x --auth '')" "proxy token "
expect_eq "bash: --runtime offers its choices" "$(bc gridgpu site add x --runtime '')" "apptainer bwrap "
expect_eq "bash: --walltime offers nothing (not files)" "$(bc gridgpu request --walltime '')" ""
expect_eq "bash: --timeout offers nothing" "$(bc gridgpu connect --timeout '')" ""
rm -f "$HOME/.compopt"
expect_eq "bash: file operands" "$(bc gridgpu freeze my)" "my dir my file.sif "
grep -q -- "-o filenames" "$HOME/.compopt" 2>/dev/null && ok "bash: file names completed with -o filenames" || not_ok "bash: -o filenames asked for"
expect_eq "bash: --dir offers directories only" "$(bc gridgpu get x --dir '')" "my dir other "
expect_eq "bash: after -- in submit, files" "$(bc gridgpu submit x.sif -- my)" "my dir my file.sif "

# bash for real: type the line and TAB into an interactive bash (readline on a
# pty) and read the line it leaves, with and without bash-completion loaded.
bt() { PATH="$bindir:$PATH" /usr/bin/python3 "$top/tests/e2e/bash-type.py" "$top/completions/gridgpu.bash" "$@"; }
for pre in "" /usr/share/bash-completion/bash_completion; do
	[ -n "$pre" ] && [ ! -f "$pre" ] && continue
	w=${pre:+ (bash-completion loaded)}
	expect_eq "bash typed: a file with a space is one quoted word$w" "$(bt 'gridgpu freeze my\ f' $pre)" 'gridgpu freeze my\ file.sif '
	expect_eq "bash typed: a directory gets '/' and no space$w" "$(bt 'gridgpu freeze --output oth' $pre)" 'gridgpu freeze --output other/'
	expect_eq "bash typed: --site=<TAB>$w" "$(bt 'gridgpu --site=gl' $pre)" 'gridgpu --site=glasgow '
	expect_eq "bash typed: connect <TAB>$w" "$(bt 'gridgpu connect de' $pre)" 'gridgpu connect dev1 '
	expect_eq "bash typed: --walltime <TAB> inserts nothing$w" "$(bt 'gridgpu request --walltime ' $pre)" 'gridgpu request --walltime '
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
	expect_eq "zsh: site show NAME" "$(zc gridgpu site show '')" "glasgow lancaster "
	expect_eq "zsh: connect offers record names" "$(zc gridgpu connect '')" "dev1 job-7 "
	expect_eq "zsh: freeze --session offers record names" "$(zc gridgpu freeze --session '')" "dev1 job-7 "
	expect_eq "zsh: --comp offers its choices" "$(zc gridgpu freeze --comp '')" "gzip lz4 xz zstd "
	expect_eq "zsh: --walltime offers nothing" "$(zc gridgpu request --walltime '')" ""
	expect_eq "zsh: file operands" "$(zc gridgpu inspect '')" "<files > "
	expect_eq "zsh: directory values" "$(zc gridgpu get x --dir '')" "<files -/> "
	# zsh's own _files, for real: a name with a space comes back as one word.
	out=$(cd "$work" && timeout 20 zsh -f -c 'autoload -U compinit; compinit -u -d "$HOME/.zcompdump2"
		zmodload zsh/zpty
		zpty z "zsh -f -i"
		zpty -w z "PS1=; fpath=($0 \$fpath); autoload -U compinit; compinit -u -d \$HOME/.zcd3; PATH=$1:\$PATH"
		zpty -w -n z "gridgpu freeze my\\ f"$'"'"'\t'"'"'
		sleep 1; zpty -r z line "*file.sif*" ; print -r -- "$line"; zpty -d z' "$top/completions" "$bindir" 2>/dev/null | tr -d '\r' | tail -1)
	case $out in *'my\ file.sif'*) ok "zsh typed: a file with a space is one quoted word" ;; *) not_ok "zsh typed: '$out'" ;; esac
else
	not_ok "zsh is installed (make deps)"
fi
done_testing
