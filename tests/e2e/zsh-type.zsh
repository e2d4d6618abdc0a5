#!/usr/bin/zsh -f
# Type a command line and TAB into an interactive zsh -f (on a pty, with zpty)
# with the completion directory in $fpath and compinit run; print the line as
# the line editor leaves it.
#
#     zsh -f zsh-type.zsh FPATH-DIR LINE
#
# No sleeps and no quiet-time reads: after the setup we wait for the text
# READY it prints, and after LINE and TAB we type C-x C-l, bound to a widget
# that prints $BUFFER between markers. The line editor handles keys in order,
# so that text comes once the completion is done; each wait has a deadline.
zmodload zsh/zpty zsh/zselect || exit 1
typeset -F SECONDS
dir=$1 line=$2 buf= chunk=
integer deadline=20 fd

# expect PATTERN: read until the output holds PATTERN (a glob), or fail.
expect() {
	local -F end=$(( SECONDS + deadline ))
	local -i left
	while [[ $buf != *$~1* ]]; do
		if (( SECONDS >= end )); then
			print -r -- "zsh-type: no '$1' within ${deadline}s; seen: ${(q)buf[-400,-1]}" >&2
			zpty -d z
			exit 1
		fi
		left=$(( (end - SECONDS) * 100 + 1 )) # hundredths of a second
		zselect -t $left -r $fd
		while zpty -rt z chunk; do buf+=$chunk; done
	done
}

zpty z 'zsh -f -i' || exit 1
fd=$REPLY
zpty -w z "PS1='$ '; PROMPT_EOL_MARK=''; fpath=(${(q)dir} \$fpath); autoload -U compinit; compinit -u -d \$HOME/.zcompdump-type"
zpty -w z 'show-buffer() { print -rn -- $'"'"'\n<<'"'"'$BUFFER$'"'"'>>\n'"'"'; }; zle -N show-buffer; bindkey "^X^L" show-buffer'
# RE""ADY: the echo of what we type does not hold the word we wait for.
zpty -w z 'print RE""ADY'
expect $'READY\r\n'
buf=
zpty -w -n z "$line"$'\t\C-x\C-l'
expect '<<*>>'
out=${buf#*<<}
out=${out%%>>*}
zpty -d z
print -rn -- "$out"
