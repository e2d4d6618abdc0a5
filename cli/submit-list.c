/* submit --input-list FILE: one job per line of FILE, the line that job's own
 * input (a local file, uploaded; or a root://, davs://, https:// URL[:NAME] the
 * CE fetches). Blank lines and lines starting with '#' are skipped; each
 * file must be readable and each URL one the CE can stage, or nothing is
 * submitted (exit 2, naming the line). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctx.h"

/* line without its surrounding blanks (in place). */
static char *trim(char *line)
{
	size_t n = strlen(line);
	while (n && isspace((unsigned char)line[n - 1]))
		line[--n] = '\0';
	while (isspace((unsigned char)*line))
		line++;
	return line;
}

/* One item, checked; 0 or the exit code after saying what is wrong. */
static int list_item(struct gg_cli *cli, const char *path, int lineno, const char *item,
		     struct gg_job_spec *spec)
{
	struct gg_err err = {0};
	char *url = NULL, *name = NULL;
	int rc = gg_data_url_is_remote(item) ? gg_data_input_parse(item, &url, &name, &err)
					     : cli_local_file(item, &err);
	free(url);
	free(name);
	if (rc == 0)
		rc = gg_job_spec_add_each_input(spec, item, &err);
	if (rc == 0)
		return 0;
	char *shown = gg_str_printable(item, strlen(item));
	int code = ui_fail(cli, &err, "--input-list %s line %d ('%s')", path, lineno,
			   shown ? shown : "");
	free(shown);
	return code;
}

int cli_read_input_list(struct gg_cli *cli, const char *path, struct gg_job_spec *spec)
{
	struct gg_err err = {0};
	if (cli_local_file(path, &err) < 0)
		return ui_fail(cli, &err, "--input-list '%s'", path);
	FILE *f = fopen(path, "re");
	if (!f) {
		gg_err_sys(&err, GG_EIO, errno, "reading '%s'", path);
		return ui_fail(cli, &err, "--input-list");
	}
	char line[4096];
	int lineno = 0, rc = 0;
	while (!rc && fgets(line, sizeof line, f)) {
		lineno++;
		size_t n = strlen(line);
		if (n == sizeof line - 1 && line[n - 1] != '\n') {
			rc = ui_usage(cli, "--input-list %s line %d: longer than %zu bytes", path,
				      lineno, sizeof line - 2);
			break;
		}
		char *item = trim(line);
		if (*item && *item != '#')
			rc = list_item(cli, path, lineno, item, spec);
	}
	fclose(f);
	if (!rc && !gg_job_spec_each_count(spec))
		rc = ui_usage(cli, "--input-list %s: no input in it (one file or URL a line)",
			      path);
	return rc;
}
