/* list-and-connect: what `gridgpu list` and `gridgpu connect` do, as a second
 * front end would (a notebook extension, a site portal), through the calls the
 * command itself makes and nothing else: the installed libgridgpu's public
 * headers. Lists the user's records, then connects to a live session over the
 * SSH configuration the library generates (jump hosts, pinned host key).
 *
 *   cc -o list-and-connect list-and-connect.c $(pkg-config --cflags --libs gridgpu)
 *   ./list-and-connect [--print] [NAME [-- COMMAND...]]
 *
 * Without NAME it lists; with NAME it runs ssh into that session (--print:
 * shows the ssh command instead of running it). The records are the user's
 * ($XDG_STATE_HOME/gridgpu/records), the sites the user's configuration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gridgpu/engine.h>
#include <gridgpu/session.h>
#include <gridgpu/ssh.h>

static int fail(const char *what, const struct gg_err *err)
{
	fprintf(stderr, "list-and-connect: %s: %s\n", what, err->msg);
	return 1;
}

/* As `gridgpu list --no-sync`: one line per record, from the store's rows. */
static int list(struct gg_store *st)
{
	struct gg_err err = {0};
	struct gg_record_row *rows;
	size_t n, bad;
	if (gg_store_rows(st, &rows, &n, &bad, &err) < 0)
		return fail("store", &err);
	for (size_t i = 0; i < n; i++) { /* a site's name is the user's text: escaped */
		const char *s = rows[i].site;
		char *site = s ? gg_str_printable(s, strlen(s)) : NULL;
		printf("%-16s %-7s %-9s %s\n", rows[i].name,
		       rows[i].kind == GG_REC_JOB ? "job" : "session",
		       gg_sess_state_name(rows[i].state), site ? site : "-");
		free(site);
	}
	gg_record_rows_free(rows, n);
	return 0;
}

/* As `gridgpu connect NAME -- ARGS`: the session must be ready; the library
 * writes the SSH configuration and gives ssh's command line. */
static int connect_to(struct gg_engine *e, const char *name, char **args, int nargs, int print)
{
	struct gg_err err = {0};
	struct gg_record r;
	if (gg_store_load(gg_engine_store(e), name, &r, &err) < 0)
		return fail(name, &err);
	int rc = 1;
	struct gg_ssh_paths sp;
	if (r.kind != GG_REC_SESSION || r.state != GG_S_READY)
		fprintf(stderr, "list-and-connect: %s: not a ready session (%s)\n", name,
			gg_sess_state_name(r.state));
	else if (gg_ssh_paths_init(&sp, &err) < 0)
		rc = fail("ssh paths", &err);
	else if (gg_engine_write_ssh_config(e, &err) < 0)
		rc = fail("ssh config", &err), gg_ssh_paths_clear(&sp);
	else {
		char **av = gg_ssh_session_argv(sp.config, name, args, nargs);
		for (int i = 0; print && av && av[i]; i++)
			printf("%s%s", av[i], av[i + 1] ? " " : "\n");
		if (av && !print)
			execvp("ssh", av); /* returns only when ssh could not be run */
		rc = av && print ? 0 : (perror("list-and-connect: ssh"), 1);
		free(av);
		gg_ssh_paths_clear(&sp);
	}
	gg_record_clear(&r);
	return rc;
}

int main(int argc, char **argv)
{
	int a = 1, print = argc > 1 && !strcmp(argv[1], "--print");
	a += print;
	int dd = a + 1 < argc && !strcmp(argv[a + 1], "--") ? a + 2 : argc;
	if (argc > a + 1 && dd == argc) {
		fprintf(stderr, "usage: list-and-connect [--print] [NAME [-- COMMAND...]]\n");
		return 2;
	}
	struct gg_err err = {0};
	struct gg_config *cfg = NULL;
	struct gg_store *st = NULL;
	struct gg_engine *e = NULL;
	if (gg_config_load(NULL, &cfg, &err) < 0 || gg_store_open(NULL, &st, &err) < 0 ||
	    gg_engine_new(st, cfg, &e, &err) < 0) {
		gg_store_free(st);
		gg_config_free(cfg);
		return fail("setup", &err);
	}
	int rc = a < argc ? connect_to(e, argv[a], argv + dd, argc - dd, print) : list(st);
	gg_engine_free(e);
	gg_store_free(st);
	gg_config_free(cfg);
	return rc;
}
