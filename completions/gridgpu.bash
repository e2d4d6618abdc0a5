# bash completion for gridgpu. What to offer comes from the binary itself
# (gridgpu __complete line -- WORDS...), worked out from its command and option
# tables, so commands, sub-commands, options and option values never drift from
# it. The script only joins "--opt=value" back together (readline splits it at
# '=') and inserts the answer: words, file names, directory names or images
# (directories and the files with an image's ending).
_gridgpu()
{
	local gg=${COMP_WORDS[0]} i w
	local -a words=()
	# Rejoin "--opt" "=" "value", which readline splits at '='.
	for ((i = 0; i <= COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if ((${#words[@]})) && [[ $w == = && ${words[-1]} == --* && ${words[-1]} != *=* ]]; then
			words[-1]+="="
			if ((i < COMP_CWORD)); then
				((i++))
				words[-1]+=${COMP_WORDS[i]}
			fi
		else
			words+=("$w")
		fi
	done
	local cur=${words[-1]} out kind
	out=$("$gg" __complete line -- "${words[@]}" 2>/dev/null) || return
	kind=${out%%$'\n'*}
	# Of "--opt=value" only the value is replaced when '=' breaks words.
	local prefix=""
	if [[ $cur == --*=* ]]; then
		[[ $COMP_WORDBREAKS == *=* ]] || prefix=${cur%%=*}=
		cur=${cur#*=}
	fi
	COMPREPLY=()
	case $kind in
	words)
		[[ $out == *$'\n'* ]] || return
		mapfile -t COMPREPLY <<<"${out#*$'\n'}"
		[[ -n $prefix ]] && COMPREPLY=("${COMPREPLY[@]/#/$prefix}") ;;
	files | dirs)
		# -o filenames: names with spaces are inserted quoted, directories
		# get a '/' and no space after them.
		compopt -o filenames 2>/dev/null
		if declare -F _filedir >/dev/null 2>&1 && [[ -z $prefix ]]; then
			if [[ $kind == dirs ]]; then _filedir -d; else _filedir; fi
		else
			local opt=-f
			[[ $kind == dirs ]] && opt=-d
			mapfile -t COMPREPLY < <(compgen "$opt" -- "$cur")
			[[ -n $prefix ]] && COMPREPLY=("${COMPREPLY[@]/#/$prefix}")
		fi ;;
	images)
		# Directories, and the files whose names end as an image's (the
		# endings follow "images", one a line).
		compopt -o filenames 2>/dev/null
		local -a ends=()
		[[ $out == *$'\n'* ]] && mapfile -t ends <<<"${out#*$'\n'}"
		if declare -F _filedir >/dev/null 2>&1 && [[ -z $prefix ]]; then
			local pat
			pat=$(IFS='|' && echo "${ends[*]}")
			_filedir "@($pat)"
		else
			local f e
			while IFS= read -r f; do
				[[ -d $f ]] && { COMPREPLY+=("$prefix$f"); continue; }
				for e in "${ends[@]}"; do
					[[ $f == *."$e" ]] && { COMPREPLY+=("$prefix$f"); break; }
				done
			done < <(compgen -f -- "$cur")
		fi ;;
	esac
	return 0
}
complete -F _gridgpu gridgpu
