/* gridgpu site: site profiles in the configuration file. The keys, their
 * options and their checks are the library's (GG_SITE_KEYS in gridgpu/core.h,
 * gridgpu/site.h): this file parses, calls it, and prints. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "gridgpu/site.h"

/* Option ids: site key i is O_KEY + i. */
enum { O_KEY = 256, O_DEFAULT = O_KEY + GG_SITE_NKEYS, O_FORCE };

/* site add's options: one a site key, then --default and --force. Filled by
 * cli_site_opts_init before the command table is read. */
struct gg_opt cmd_site_add_opts[GG_SITE_NKEYS + 3];
static char opt_help[GG_SITE_NKEYS][256];

static const struct gg_opt flags[] = {
	{"default", 0, OPT_NONE, NULL, "make this the default site", O_DEFAULT},
	{"force", 0, OPT_NONE, NULL, "replace the site if it exists (what changed is shown)",
	 O_FORCE},
	OPT_END,
};

void cli_site_opts_init(void)
{
	static const enum gg_opt_arg arg[] = {
		[GG_SK_FILE] = OPT_FILE, [GG_SK_DIR] = OPT_DIR, [GG_SK_CHOICE] = OPT_CHOICE};
	size_t n = 0;
	for (const struct gg_site_key *k; n < GG_SITE_NKEYS && (k = gg_site_key_at(n)); n++) {
		enum gg_opt_arg a = (size_t)k->kind < sizeof arg / sizeof arg[0] ? arg[k->kind] : 0;
		snprintf(opt_help[n], sizeof opt_help[n], k->dflt ? "%s (default %s)" : "%s",
			 k->help, k->dflt);
		cmd_site_add_opts[n] = (struct gg_opt){k->option,  k->shortopt, a ? a : OPT_ARG,
						       k->argname, opt_help[n], O_KEY + (int)n};
	}
	memcpy(&cmd_site_add_opts[n], flags, sizeof flags);
}

/* A value the library refused: a usage error (exit 2), else the failure. */
static int refused(struct gg_cli *cli, const struct gg_err *err)
{
	return err->code == GG_EUSAGE
		       ? ui_usage(cli, "%s", err->msg)
		       : ui_fail(cli, err, "site %s", cli->sub ? cli->sub->name : "");
}

static int is_default(const struct gg_config *cfg, const char *name)
{
	return cfg->default_site && !strcmp(cfg->default_site, name);
}

static json_t *site_json(const struct gg_config *cfg, const struct gg_site *s)
{
	json_t *o = gg_site_to_json(s);
	if (o)
		gg_json_set(o, "default", json_boolean(is_default(cfg, s->name)));
	return o;
}

/* One "KEY: OLD → NEW" line (KEY as the option's name). */
static void print_change(void *cli, const struct gg_site_key *k, const char *a, const char *b)
{
	ui_info(cli, "  %s: %s → %s", k->option, a ? a : "(none)", b ? b : "(none)");
}

/* Say what changed from before (was_default) to the site now in cfg. */
static void print_changes(struct gg_cli *cli, const struct gg_config *cfg,
			  const struct gg_site *before, int was_default)
{
	const struct gg_site *now = gg_config_site(cfg, before->name);
	int n = was_default != is_default(cfg, now->name);
	ui_info(cli, "site '%s' changed in %s:", now->name, cfg->path);
	if (n)
		ui_info(cli, "  default: %s → %s", was_default ? "yes" : "no",
			was_default ? "no" : "yes");
	int c = gg_site_changes(before, now, print_change, cli);
	if (n + (c > 0 ? c : 0) == 0)
		ui_info(cli, "  (nothing changed)");
}

/* Store s (replacing a site of the same name) and say what changed. */
static int save_site(struct gg_cli *cli, struct gg_config *cfg, const struct gg_site *s,
		     int make_default, const char *what)
{
	struct gg_err err = {0};
	const struct gg_site *old = gg_config_site(cfg, s->name);
	struct gg_site before = {0};
	int was_default = is_default(cfg, s->name);
	int ok = (!old || gg_site_copy(&before, old, &err) == 0) &&
		 gg_config_set_site(cfg, s, &err) == 0;
	if (ok && (make_default || cfg->nsites == 1)) {
		free(cfg->default_site);
		cfg->default_site = strdup(s->name);
	}
	if (!ok || gg_config_save(cfg, &err) < 0) {
		gg_site_clear(&before);
		return ui_fail(cli, &err, "site %s %s", what, s->name);
	}
	if (!old)
		ui_info(cli, "site '%s' saved in %s", s->name, cfg->path);
	else
		print_changes(cli, cfg, &before, was_default);
	if (cli->json)
		ui_json_doc("site", site_json(cfg, gg_config_site(cfg, s->name)));
	gg_site_clear(&before);
	return EXIT_OK;
}

/* site add NAME, its options in s: checked, and saved unless it exists. */
static int add_site(struct gg_cli *cli, struct gg_site *s, const char *name, int make_default,
		    int force)
{
	struct gg_err err = {0};
	if (!(s->name = strdup(name)))
		return EXIT_FAIL;
	if (gg_site_check(s, &err) < 0)
		return ui_usage(cli, "site add %s: %s", s->name, err.msg);
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	if (!force && gg_config_site(cfg, s->name))
		return ui_usage(cli,
				"site '%s' exists (nothing changed): add --force to replace it, "
				"or change one setting with 'gridgpu site set %s KEY VALUE'",
				s->name, s->name);
	return save_site(cli, cfg, s, make_default, "add");
}

int cmd_site_add(struct gg_cli *cli, int argc, char **argv)
{
	struct gg_site s = {0};
	struct gg_err err = {0};
	int make_default = 0, force = 0, c, rc = EXIT_OK;
	while (rc == EXIT_OK && (c = cli_next_opt(cli, argc, argv, cmd_site_add_opts)) > 0) {
		if (c == O_DEFAULT)
			make_default = 1;
		else if (c == O_FORCE)
			force = 1;
		else if (gg_site_add_value(&s, gg_site_key_at((size_t)(c - O_KEY))->key,
					   cli->optarg, &err) < 0)
			rc = refused(cli, &err);
	}
	if (rc == EXIT_OK && c < 0)
		rc = c == -2 ? EXIT_OK : EXIT_USAGE;
	else if (rc == EXIT_OK && argc - cli->optind != 1)
		rc = ui_usage(cli, "site add: expected one site NAME");
	else if (rc == EXIT_OK)
		rc = add_site(cli, &s, argv[cli->optind], make_default, force);
	gg_site_clear(&s);
	return rc;
}

/* Parse a sub-command that takes only the global options and min..max
 * operands (argv[cli->optind..]): -1 to go on, else the exit code. */
static int plain_args(struct gg_cli *cli, int argc, char **argv, int min, int max,
		      const char *usage)
{
	int c;
	while ((c = cli_next_opt(cli, argc, argv, NULL)) > 0)
		;
	if (c < 0)
		return c == -2 ? EXIT_OK : EXIT_USAGE;
	int n = argc - cli->optind;
	return n < min || n > max ? ui_usage(cli, "%s", usage) : -1;
}

/* site set's KEY is not a key: say so, with the nearest one. */
static int unknown_key(struct gg_cli *cli, const char *key)
{
	const char *keys[GG_SITE_NKEYS];
	size_t n = 0;
	for (; n < GG_SITE_NKEYS && gg_site_key_at(n); n++)
		keys[n] = gg_site_key_at(n)->option;
	const char *near = cli_nearest(key, keys, n);
	return ui_usage(
		cli,
		"site set: unknown KEY '%s'%s%s%s (KEY is an option of 'site add', e.g. gpu-queue)",
		key, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
}

int cmd_site_set(struct gg_cli *cli, int argc, char **argv)
{
	int rc = plain_args(cli, argc, argv, 3, 3,
			    "site set: expected NAME KEY VALUE (VALUE \"\" clears KEY)");
	if (rc >= 0)
		return rc;
	const char *name = argv[cli->optind], *key = argv[cli->optind + 1];
	if (!gg_site_key_find(key))
		return unknown_key(cli, key);
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	const struct gg_site *old = gg_config_site(cfg, name);
	struct gg_err err = {0};
	if (!old) {
		gg_err_set(&err, GG_ENOTFOUND,
			   "no such site in %s (add it with 'gridgpu site add')", cfg->path);
		return ui_fail(cli, &err, "site '%s'", name);
	}
	struct gg_site s;
	if (gg_site_copy(&s, old, &err) < 0)
		return ui_fail(cli, &err, "site set");
	if (gg_site_set_key(&s, key, argv[cli->optind + 2], &err) < 0)
		rc = refused(cli, &err);
	else
		rc = save_site(cli, cfg, &s, 0, "set");
	gg_site_clear(&s);
	return rc;
}

int cmd_site_list(struct gg_cli *cli, int argc, char **argv)
{
	int rc = plain_args(cli, argc, argv, 0, 0, "site list takes no arguments");
	if (rc >= 0)
		return rc;
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	if (cli->json) {
		json_t *a = json_array();
		for (size_t i = 0; i < cfg->nsites; i++)
			gg_json_append(a, site_json(cfg, &cfg->sites[i]));
		ui_json_doc("site-list", a);
		return EXIT_OK;
	}
	if (cfg->nsites == 0) {
		ui_info(cli, "no sites yet: add one with 'gridgpu site add NAME --ce URL --jump "
			     "USER@HOST'");
		return EXIT_OK;
	}
	ui_out("%-1s %-16s %-40s %s\n", "", "SITE", "CE", "HOPS");
	for (size_t i = 0; i < cfg->nsites; i++) {
		const struct gg_site *s = &cfg->sites[i];
		ui_out("%-1s %-16s %-40s %d\n", is_default(cfg, s->name) ? "*" : "", s->name,
		       s->ce ? s->ce : "-", s->njumps);
	}
	return EXIT_OK;
}

static int site_show_or_remove(struct gg_cli *cli, int argc, char **argv, int remove)
{
	int rc = plain_args(cli, argc, argv, remove, 1,
			    remove ? "site remove: expected one site NAME"
				   : "site show: expected one site NAME");
	if (rc >= 0)
		return rc;
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	const char *name = argc > cli->optind ? argv[cli->optind] : cli->site;
	name = name ? name : cfg->default_site;
	if (!name)
		return ui_usage(cli, "site show: no default site: name one");
	const struct gg_site *s = gg_config_site(cfg, name);
	struct gg_err err = {0};
	if (!s) {
		gg_err_set(&err, GG_ENOTFOUND, "no such site in %s (see 'gridgpu site list')",
			   cfg->path);
		return ui_fail(cli, &err, "site '%s'", name);
	}
	if (remove) {
		int was_default = is_default(cfg, name);
		gg_config_remove_site(cfg, name);
		if (was_default) {
			free(cfg->default_site);
			cfg->default_site = NULL;
		}
		if (gg_config_save(cfg, &err) < 0)
			return ui_fail(cli, &err, "site remove %s", name);
		ui_info(cli, "site '%s' removed", name);
		return EXIT_OK;
	}
	if (cli->json) {
		ui_json_doc("site", site_json(cfg, s));
		return EXIT_OK;
	}
	/* The INI snippet a site admin can hand to users. */
	struct gg_config one = {.path = cfg->path, .sites = (struct gg_site *)s, .nsites = 1};
	char *text = gg_config_format(&one);
	if (!text)
		return EXIT_FAIL;
	ui_out_lines(strchr(text, '\n') + 2); /* without the header comment line and blank */
	free(text);
	return EXIT_OK;
}

int cmd_site_show(struct gg_cli *cli, int argc, char **argv)
{
	return site_show_or_remove(cli, argc, argv, 0);
}

int cmd_site_remove(struct gg_cli *cli, int argc, char **argv)
{
	return site_show_or_remove(cli, argc, argv, 1);
}
