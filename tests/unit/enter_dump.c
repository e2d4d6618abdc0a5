/* make sh-check: the node's gridgpu-enter script as the library writes it, for the
 * runtime named in argv[1] (apptainer, bwrap), with binds of both kinds and GPUs, on
 * stdout; scripts/check-sh.sh parses it with dash and posh and runs shellcheck on it. */
#include "node/node.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: enter_dump apptainer|bwrap\n");
		return 2;
	}
	const char *binds[] = {"/data/in:/in put", "/scratch"};
	char *site[] = {"/cvmfs", "/etc/grid-security/certificates"};
	struct gg_enter_opts o = {.runtime = argv[1],
				  .image = "/x/it's.sif",
				  .gpus = 1,
				  .binds = binds,
				  .nbinds = 2,
				  .site_binds = site,
				  .nsite_binds = 2};
	char *text = NULL;
	struct gg_err err = {0};
	if (gg_session_enter_script(&o, &text, &err) < 0) {
		fprintf(stderr, "enter_dump: %s\n", err.msg);
		return 1;
	}
	fputs(text, stdout);
	free(text);
	return 0;
}
