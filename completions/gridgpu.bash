# bash completion for gridgpu. The word lists come from the binary itself
# (gridgpu __complete ...), so commands and options never drift from it.
_gridgpu()
{
	local cur prev words cword
	if declare -F _init_completion >/dev/null 2>&1; then
		_init_completion -n = || return
	else
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD-1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	fi
	local gg=${words[0]}
	# The command is the first word after the global options.
	local i cmd="" cmdi=0
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		--site|--config) ((i++)) ;;
		-*) ;;
		*) cmd=${words[i]}; cmdi=$i; break ;;
		esac
	done

	case $prev in
	--site)
		mapfile -t COMPREPLY < <(compgen -W "$("$gg" __complete sites 2>/dev/null)" -- "$cur")
		return ;;
	--config|--cert|--key|--out|-o|--ca-dir|--identity|-i|--known-hosts|--ca|--file)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return ;;
	esac

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$("$gg" __complete global-options 2>/dev/null | sed 's/=$//') --version" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$("$gg" __complete commands 2>/dev/null)" -- "$cur")
		fi
		return
	fi

	if [[ $cmd == help ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$("$gg" __complete commands 2>/dev/null)" -- "$cur")
		return
	fi

	if [[ $cur == -* ]]; then
		local opts
		opts=$("$gg" __complete options "$cmd" 2>/dev/null)
		mapfile -t COMPREPLY < <(compgen -W "${opts//=/}" -- "$cur")
		return
	fi

	# The subcommand, if the command has them and none was typed yet.
	local subs sub=""
	subs=$("$gg" __complete subcommands "$cmd" 2>/dev/null)
	if [[ -n $subs ]]; then
		for ((i = cmdi + 1; i < cword; i++)); do
			[[ ${words[i]} != -* ]] && { sub=${words[i]}; break; }
		done
		if [[ -z $sub ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
			return
		fi
	fi
	case $cmd:$sub in
	site:show|site:remove|site:rm)
		mapfile -t COMPREPLY < <(compgen -W "$("$gg" __complete sites 2>/dev/null)" -- "$cur") ;;
	connect:*|reconnect:*|status:*|kill:*|clean:*|get:*)
		mapfile -t COMPREPLY < <(compgen -W "$("$gg" __complete sessions 2>/dev/null)" -- "$cur") ;;
	*)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	esac
}
complete -F _gridgpu gridgpu
