#!/bin/sh
# bash and zsh completion, driven the way the shells drive them.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$(dirname "$GRIDGPU")
"$GRIDGPU" site add glasgow --ce https://ce.example.org/arex >/dev/null 2>&1
"$GRIDGPU" site add lancaster --ce https://ce2.example.org/arex >/dev/null 2>&1

# bash: source the script, fill COMP_WORDS as readline would, read COMPREPLY.
bash_complete() { # words... (the last one is the word being completed)
	PATH="$bindir:$PATH" bash --norc --noprofile -c '
		[ -f /usr/share/bash-completion/bash_completion ] && . /usr/share/bash-completion/bash_completion
		. "$0"
		shift 0
		COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_gridgpu
		printf "%s\n" "${COMPREPLY[@]}" | sort' "$top/completions/gridgpu.bash" "$@"
}
expect_eq "bash: commands" "$(bash_complete gridgpu si | tr '\n' ' ')" "site "
expect_eq "bash: all commands come from the table" "$(bash_complete gridgpu '' | tr '\n' ' ')" "$("$GRIDGPU" __complete commands | sort | tr '\n' ' ')"
expect_eq "bash: subcommands" "$(bash_complete gridgpu site '' | tr '\n' ' ')" "add list remove show "
expect_eq "bash: command options" "$(bash_complete gridgpu site add --gpu | tr '\n' ' ')" "--gpu-queue --gpu-rte "
expect_eq "bash: global options" "$(bash_complete gridgpu --js | tr '\n' ' ')" "--json "
expect_eq "bash: site names after --site" "$(bash_complete gridgpu --site '' | tr '\n' ' ')" "glasgow lancaster "
expect_eq "bash: site names for site show" "$(bash_complete gridgpu site show la | tr '\n' ' ')" "lancaster "
expect_eq "bash: help COMMAND" "$(bash_complete gridgpu help si | tr '\n' ' ')" "site "

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
			_files() { print -r -- "<files>"; }
			words=("$@"); CURRENT=$#
			_gridgpu | sort' "$top/completions" "$@"
	}
	out=$(zsh_complete gridgpu '' | tr '\n' ' ')
	expect_eq "zsh: commands" "$out" "$("$GRIDGPU" __complete commands | sort | tr '\n' ' ')"
	expect_eq "zsh: subcommands" "$(zsh_complete gridgpu site '' | tr '\n' ' ')" "add list remove show "
	zsh_complete gridgpu site add --g | grep -qx -- --gpu-queue && ok "zsh: command options" || not_ok "zsh: command options"
	expect_eq "zsh: site names" "$(zsh_complete gridgpu --site '' | tr '\n' ' ')" "glasgow lancaster "
	expect_eq "zsh: site show NAME" "$(zsh_complete gridgpu site show '' | tr '\n' ' ')" "glasgow lancaster "
else
	not_ok "zsh is installed (make deps)"
fi
done_testing
