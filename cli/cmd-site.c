/* gridgpu site: site profiles in the configuration file. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "ce/ce.h"
#include "session/engine.h"
#include "ssh/ssh.h"

enum {
	O_CE = 256,
	O_JUMP,
	O_IDENTITY,
	O_KNOWN_HOSTS,
	O_QUEUE,
	O_GPU_QUEUE,
	O_GPU_RTE,
	O_IMAGE,
	O_BIND,
	O_CA_DIR,
	O_AUTH,
	O_DEADLINE,
	O_IDLE,
	O_DEFAULT,
	O_WORKER,
	O_RUNTIME,
	O_TOKEN_COMMAND,
	O_OIDC_ACCOUNT,
	O_TOKEN_AUDIENCE,
	O_TOKEN_SCOPES,
	O_OUTPUT_BASE,
	O_CACHE,
	O_ALLOW,
	O_FORCE,
};

const struct gg_opt cmd_site_add_opts[] = {
	{"ce", 0, OPT_ARG, "URL", "CE endpoint, e.g. https://ce.example.org:443/arex", O_CE},
	{"jump", 'J', OPT_ARG, "USER@HOST[:PORT]", "a jump host, in order (repeat for more hops)",
	 O_JUMP},
	{"identity", 'i', OPT_FILE, "FILE", "your ssh key for the jump hosts", O_IDENTITY},
	{"known-hosts", 0, OPT_FILE, "FILE", "known_hosts file with the jump hosts' keys",
	 O_KNOWN_HOSTS},
	{"worker-address", 0, OPT_ARG, "ADDR", "address the last jump host reaches workers by",
	 O_WORKER},
	{"allow-from", 0, OPT_ARG, "ADDR[/BITS]",
	 "sessions admit ssh only from ADDR: the last jump host's (repeat for more)", O_ALLOW},
	{"queue", 0, OPT_ARG, "QUEUE", "default queue", O_QUEUE},
	{"gpu-queue", 0, OPT_ARG, "QUEUE", "queue for GPU jobs", O_GPU_QUEUE},
	{"gpu-rte", 0, OPT_ARG, "RTE", "runtime environment that requests GPUs", O_GPU_RTE},
	{"image", 0, OPT_ARG, "IMAGE", "default container image", O_IMAGE},
	{"bind", 0, OPT_ARG, "SRC[:DST]",
	 "a path of the node in every session's container (repeat for more)", O_BIND},
	{"ca-dir", 0, OPT_DIR, "DIR", "CA directory for this site", O_CA_DIR},
	{"auth", 0, OPT_CHOICE, "proxy|token", "credential the CE takes (default proxy)", O_AUTH},
	{"runtime", 0, OPT_CHOICE, "apptainer|bwrap",
	 "how batch jobs run images (default apptainer)", O_RUNTIME},
	{"token-command", 0, OPT_ARG, "CMD",
	 "get tokens by running CMD (split into words, no shell; stdout: the token)",
	 O_TOKEN_COMMAND},
	{"oidc-account", 0, OPT_ARG, "NAME", "get tokens from this oidc-agent account",
	 O_OIDC_ACCOUNT},
	{"token-audience", 0, OPT_ARG, "AUD", "the audience asked of oidc-agent", O_TOKEN_AUDIENCE},
	{"token-scopes", 0, OPT_ARG, "SCOPES", "the scopes asked of oidc-agent (space separated)",
	 O_TOKEN_SCOPES},
	{"output-base", 0, OPT_ARG, "URL",
	 "storage URL outputs go under, e.g. davs://se.example:1094/store/user/$USER/",
	 O_OUTPUT_BASE},
	{"cache", 0, OPT_ARG, "URL",
	 "the site's XCache (root://HOST:PORT): inputs are read through it", O_CACHE},
	{"connect-deadline", 0, OPT_ARG, "DUR", "end a session nobody connected to after DUR",
	 O_DEADLINE},
	{"idle-limit", 0, OPT_ARG, "DUR", "end a session idle for longer than DUR", O_IDLE},
	{"default", 0, OPT_NONE, NULL, "make this the default site", O_DEFAULT},
	{"force", 0, OPT_NONE, NULL, "replace the site if it exists (what changed is shown)",
	 O_FORCE},
	OPT_END,
};

static json_t *site_json(const struct gg_site *s, int is_default)
{
	json_t *o = json_object(), *jumps = json_array(), *binds = json_array(),
	       *allow = json_array();
	gg_json_set_text(o, "name", s->name);
	gg_json_set(o, "default", json_boolean(is_default));
	if (s->ce)
		gg_json_set_text(o, "ce", s->ce);
	for (int i = 0; i < s->njumps; i++)
		gg_json_append(jumps, gg_json_text(s->jumps[i]));
	gg_json_set(o, "jumps", jumps);
	for (int i = 0; i < s->nbinds; i++)
		gg_json_append(binds, gg_json_text(s->binds[i]));
	gg_json_set(o, "binds", binds);
	for (int i = 0; i < s->nallow; i++)
		gg_json_append(allow, gg_json_text(s->allow_from[i]));
	gg_json_set(o, "allow_from", allow);
	const struct {
		const char *k;
		const char *v;
	} f[] = {{"identity", s->identity},
		 {"known_hosts", s->known_hosts},
		 {"worker_address", s->worker_address},
		 {"queue", s->queue},
		 {"gpu_queue", s->gpu_queue},
		 {"gpu_rte", s->gpu_rte},
		 {"image", s->image},
		 {"ca_dir", s->ca_dir},
		 {"auth", s->auth},
		 {"runtime", s->runtime},
		 {"token_command", s->token_command},
		 {"oidc_account", s->oidc_account},
		 {"token_audience", s->token_audience},
		 {"token_scopes", s->token_scopes},
		 {"output_base", s->output_base},
		 {"cache", s->cache}};
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		if (f[i].v)
			gg_json_set_text(o, f[i].k, f[i].v);
	if (s->connect_deadline)
		gg_json_set(o, "connect_deadline", json_integer(s->connect_deadline));
	if (s->idle_limit)
		gg_json_set(o, "idle_limit", json_integer(s->idle_limit));
	return o;
}

/* The text setting of s that site add's option id sets, or NULL. */
static char **str_field(struct gg_site *s, int id)
{
	switch (id) {
	case O_CE: return &s->ce;
	case O_IDENTITY: return &s->identity;
	case O_KNOWN_HOSTS: return &s->known_hosts;
	case O_RUNTIME: return &s->runtime;
	case O_AUTH: return &s->auth;
	case O_WORKER: return &s->worker_address;
	case O_QUEUE: return &s->queue;
	case O_GPU_QUEUE: return &s->gpu_queue;
	case O_GPU_RTE: return &s->gpu_rte;
	case O_IMAGE: return &s->image;
	case O_CA_DIR: return &s->ca_dir;
	case O_TOKEN_COMMAND: return &s->token_command;
	case O_OIDC_ACCOUNT: return &s->oidc_account;
	case O_TOKEN_AUDIENCE: return &s->token_audience;
	case O_TOKEN_SCOPES: return &s->token_scopes;
	case O_OUTPUT_BASE: return &s->output_base;
	case O_CACHE: return &s->cache;
	}
	return NULL;
}

/* An output base: a storage URL the CE can stage to once a name is added
 * (checked as BASE/NAME, $USER replaced). */
static int check_output_base(struct gg_cli *cli, const char *v)
{
	struct gg_err err = {0};
	struct gg_site s = {.output_base = (char *)v};
	struct gg_data_url u;
	char *base = gg_site_output_base(&s);
	char *probe = base ? gg_strdup_printf("%sNAME", base) : NULL;
	int rc = probe ? gg_data_url_parse(probe, &u, &err) : -1;
	free(base);
	free(probe);
	if (rc < 0)
		return ui_usage(cli, "--output-base '%s': %s", v,
				err.msg[0] ? err.msg : "out of memory");
	return 0;
}

/* Check a value of option id; 0, or the usage exit code after saying why. */
static int check_value(struct gg_cli *cli, int id, const char *v)
{
	struct gg_err err = {0};
	struct gg_ssh_jump jp;
	switch (id) {
	case O_CE:
		if (strncmp(v, "https://", 8) != 0)
			return ui_usage(cli, "--ce '%s': the CE URL must start with https://", v);
		return 0;
	case O_JUMP:
		if (strchr(v, '/') || strchr(v, ',') || gg_ssh_jump_parse(v, &jp, &err) < 0)
			return ui_usage(cli, "--jump: %s",
					err.msg[0] ? err.msg : "expected [USER@]HOST[:PORT]");
		return 0;
	case O_IDENTITY:
	case O_KNOWN_HOSTS:
		if (gg_ssh_cfg_check(id == O_IDENTITY ? "--identity" : "--known-hosts", v,
				     GG_SSHV_PATH, &err) < 0)
			return ui_usage(cli, "%s", err.msg);
		return 0;
	case O_BIND:
		if (gg_session_bind_check("--bind", v, &err) < 0)
			return ui_usage(cli, "%s", err.msg);
		return 0;
	case O_RUNTIME:
		if (strcmp(v, "apptainer") && strcmp(v, "bwrap"))
			return ui_usage(cli, "--runtime '%s': expected apptainer or bwrap", v);
		return 0;
	case O_AUTH:
		if (strcmp(v, "proxy") && strcmp(v, "token"))
			return ui_usage(cli, "--auth '%s': expected proxy or token", v);
		return 0;
	case O_CACHE:
		if (gg_data_cache_check(v, &err) < 0)
			return ui_usage(cli, "--cache: %s", err.msg);
		return 0;
	case O_OUTPUT_BASE: return check_output_base(cli, v);
	case O_TOKEN_COMMAND: {
		char **argv = NULL;
		if (gg_argv_split(v, &argv, &err) < 0)
			return ui_usage(cli, "--token-command: %s", err.msg);
		gg_argv_free(argv);
		return 0;
	}
	}
	return 0;
}

/* One value of site add's option id into s; 0, or the exit code after saying
 * what is wrong. Shared by site add and site set. */
static int apply_opt(struct gg_cli *cli, struct gg_site *s, int id, const char *v)
{
	struct gg_err err = {0};
	int rc = check_value(cli, id, v);
	if (rc)
		return rc;
	if (id == O_JUMP) {
		if (s->njumps == GG_MAX_JUMPS)
			return ui_usage(cli, "at most %d jump hosts", GG_MAX_JUMPS);
		s->jumps[s->njumps++] = strdup(v);
	} else if (id == O_BIND) {
		if (s->nbinds == GG_MAX_BINDS)
			return ui_usage(cli, "at most %d bind paths", GG_MAX_BINDS);
		s->binds[s->nbinds++] = strdup(v);
	} else if (id == O_ALLOW) {
		if (gg_site_allow_add(s, v, &err) < 0)
			return ui_usage(cli, "--allow-from %s", err.msg);
	} else if (id == O_DEADLINE || id == O_IDLE) {
		int64_t *d = id == O_DEADLINE ? &s->connect_deadline : &s->idle_limit;
		if (gg_duration_parse_unit(v, d, &err) < 0)
			return ui_fail(cli, &err, "--%s",
				       id == O_DEADLINE ? "connect-deadline" : "idle-limit");
	} else {
		char **field = str_field(s, id);
		free(*field);
		*field = strdup(v);
	}
	return 0;
}

/* A value of site_json as text for "KEY: OLD → NEW". */
static void value_text(json_t *v, char *buf, size_t len)
{
	char d[32];
	size_t i, n = 0;
	json_t *e;
	if (!v || json_is_null(v) || (json_is_array(v) && !json_array_size(v))) {
		snprintf(buf, len, "(none)");
	} else if (json_is_string(v)) {
		snprintf(buf, len, "%s", json_string_value(v));
	} else if (json_is_boolean(v)) {
		snprintf(buf, len, "%s", json_is_true(v) ? "yes" : "no");
	} else if (json_is_integer(v)) {
		snprintf(buf, len, "%s",
			 gg_duration_format_exact(json_integer_value(v), d, sizeof d));
	} else if (json_is_array(v)) {
		buf[0] = '\0';
		json_array_foreach (v, i, e) {
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%s%s", i ? ", " : "",
					      json_string_value(e));
		}
	} else {
		snprintf(buf, len, "?");
	}
}

/* Say what changed between two site_json objects, one "KEY: OLD → NEW" line
 * each (KEY as the option's name); returns how many changed. */
static int print_changes(struct gg_cli *cli, json_t *before, json_t *after)
{
	const char *k;
	json_t *v;
	int n = 0;
	json_t *keys = json_object();
	json_object_foreach (before, k, v)
		json_object_set(keys, k, json_null());
	json_object_foreach (after, k, v)
		json_object_set(keys, k, json_null());
	json_object_foreach (keys, k, v) {
		json_t *a = json_object_get(before, k), *b = json_object_get(after, k);
		char old[512], new[512], opt[64];
		value_text(a, old, sizeof old);
		value_text(b, new, sizeof new);
		if (!strcmp(old, new))
			continue;
		snprintf(opt, sizeof opt, "%s",
			 !strcmp(k, "jumps")   ? "jump"
			 : !strcmp(k, "binds") ? "bind"
					       : k);
		for (char *p = opt; *p; p++)
			if (*p == '_')
				*p = '-';
		ui_info(cli, "  %s: %s → %s", opt, old, new);
		n++;
	}
	json_decref(keys);
	return n;
}

static int is_default(const struct gg_config *cfg, const char *name)
{
	return cfg->default_site && !strcmp(cfg->default_site, name);
}

/* Store s (replacing a site of the same name) and say what changed. */
static int save_site(struct gg_cli *cli, struct gg_config *cfg, const struct gg_site *s,
		     int make_default, const char *what)
{
	struct gg_err err = {0};
	const struct gg_site *old = gg_config_site(cfg, s->name);
	json_t *before = old ? site_json(old, is_default(cfg, s->name)) : NULL;
	int rc = EXIT_OK;
	if (gg_config_set_site(cfg, s, &err) < 0) {
		rc = ui_fail(cli, &err, "site %s %s", what, s->name);
		goto out;
	}
	if (make_default || cfg->nsites == 1) {
		free(cfg->default_site);
		cfg->default_site = strdup(s->name);
	}
	if (gg_config_save(cfg, &err) < 0) {
		rc = ui_fail(cli, &err, "site %s %s", what, s->name);
		goto out;
	}
	json_t *after = site_json(gg_config_site(cfg, s->name), is_default(cfg, s->name));
	if (!before) {
		ui_info(cli, "site '%s' saved in %s", s->name, cfg->path);
	} else {
		ui_info(cli, "site '%s' changed in %s:", s->name, cfg->path);
		if (print_changes(cli, before, after) == 0)
			ui_info(cli, "  (nothing changed)");
	}
	if (cli->json)
		ui_json_doc("site", after);
	else
		json_decref(after);
out:
	json_decref(before);
	return rc;
}

int cmd_site_add(struct gg_cli *cli, int argc, char **argv)
{
	struct gg_site s = {0};
	int make_default = 0, force = 0, c, rc = EXIT_OK;
	while ((c = cli_next_opt(cli, argc, argv, cmd_site_add_opts)) > 0) {
		if (c == O_DEFAULT)
			make_default = 1;
		else if (c == O_FORCE)
			force = 1;
		else if ((rc = apply_opt(cli, &s, c, cli->optarg)) != 0)
			goto out;
	}
	if (c < 0) {
		rc = c == -2 ? EXIT_OK : EXIT_USAGE;
		goto out;
	}
	if (argc - cli->optind != 1) {
		rc = ui_usage(cli, "site add: expected one site NAME");
		goto out;
	}
	s.name = strdup(argv[cli->optind]);
	if (!s.ce) {
		rc = ui_usage(cli, "site add %s: --ce URL is required", s.name);
		goto out;
	}
	struct gg_config *cfg = cli_config(cli);
	if (!cfg) {
		rc = cli->cfg_exit;
		goto out;
	}
	if (!force && gg_config_site(cfg, s.name)) {
		rc = ui_usage(cli,
			      "site '%s' exists (nothing changed): add --force to replace it, or "
			      "change one setting with 'gridgpu site set %s KEY VALUE'",
			      s.name, s.name);
		goto out;
	}
	rc = save_site(cli, cfg, &s, make_default, "add");
out:
	gg_site_clear(&s);
	return rc;
}

/* The value option of site add named key ("gpu-queue"), or NULL. */
static const struct gg_opt *settable(const char *key)
{
	for (const struct gg_opt *o = cmd_site_add_opts; o->name; o++)
		if (o->arg != OPT_NONE && !strcmp(o->name, key))
			return o;
	return NULL;
}

/* Clear the setting of option id in s (site set NAME KEY ""). */
static void clear_opt(struct gg_site *s, int id)
{
	char **field = str_field(s, id);
	if (field) {
		free(*field);
		*field = NULL;
	}
	if (id == O_DEADLINE)
		s->connect_deadline = 0;
	if (id == O_IDLE)
		s->idle_limit = 0;
	if (id == O_JUMP) {
		for (int i = 0; i < s->njumps; i++)
			free(s->jumps[i]);
		s->njumps = 0;
	}
	if (id == O_BIND) {
		for (int i = 0; i < s->nbinds; i++)
			free(s->binds[i]);
		s->nbinds = 0;
	}
	if (id == O_ALLOW) {
		for (int i = 0; i < s->nallow; i++)
			free(s->allow_from[i]);
		s->nallow = 0;
	}
}

/* Set KEY to VALUE in s: "jump", "bind" and "allow-from" take their values
 * separated by ',', "" clears. */
static int set_value(struct gg_cli *cli, struct gg_site *s, const struct gg_opt *o,
		     const char *value)
{
	clear_opt(s, o->id);
	if (!value[0])
		return o->id == O_CE ? ui_usage(cli, "site set: ce cannot be empty") : 0;
	if (o->id != O_JUMP && o->id != O_BIND)
		return apply_opt(cli, s, o->id, value);
	char *list = strdup(value), *save = NULL;
	int rc = list ? 0 : EXIT_FAIL;
	for (char *h = list ? strtok_r(list, ",", &save) : NULL; h && !rc;
	     h = strtok_r(NULL, ",", &save))
		rc = apply_opt(cli, s, o->id, h);
	free(list);
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

int cmd_site_set(struct gg_cli *cli, int argc, char **argv)
{
	int rc = plain_args(cli, argc, argv, 3, 3,
			    "site set: expected NAME KEY VALUE (VALUE \"\" clears KEY)");
	if (rc >= 0)
		return rc;
	const char *name = argv[cli->optind], *key = argv[cli->optind + 1];
	const struct gg_opt *o = settable(key[0] == '-' && key[1] == '-' ? key + 2 : key);
	if (!o) {
		const char *keys[32];
		size_t n = 0;
		for (const struct gg_opt *p = cmd_site_add_opts; p->name && n < 32; p++)
			if (p->arg != OPT_NONE)
				keys[n++] = p->name;
		const char *near = cli_nearest(key, keys, n);
		return ui_usage(
			cli,
			"site set: unknown KEY '%s'%s%s%s (KEY is an option of 'site add', e.g. gpu-queue)",
			key, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
	}
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
	rc = set_value(cli, &s, o, argv[cli->optind + 2]);
	if (rc == 0)
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
			gg_json_append(a,
				       site_json(&cfg->sites[i],
						 cfg->default_site && !strcmp(cfg->default_site,
									      cfg->sites[i].name)));
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
		int def = cfg->default_site && !strcmp(cfg->default_site, s->name);
		ui_out("%-1s %-16s %-40s %d\n", def ? "*" : "", s->name, s->ce ? s->ce : "-",
		       s->njumps);
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
	int nargs = argc - cli->optind;
	struct gg_config *cfg = cli_config(cli);
	if (!cfg)
		return cli->cfg_exit;
	const char *name = nargs ? argv[cli->optind] : cli->site ? cli->site : cfg->default_site;
	if (!name)
		return ui_usage(cli, "site show: no default site: name one");
	const struct gg_site *s = gg_config_site(cfg, name);
	if (!s) {
		struct gg_err err;
		gg_err_set(&err, GG_ENOTFOUND, "no such site in %s (see 'gridgpu site list')",
			   cfg->path);
		return ui_fail(cli, &err, "site '%s'", name);
	}
	int is_def = cfg->default_site && !strcmp(cfg->default_site, name);
	if (remove) {
		struct gg_err err = {0};
		gg_config_remove_site(cfg, name);
		if (is_def) {
			free(cfg->default_site);
			cfg->default_site = NULL;
		}
		if (gg_config_save(cfg, &err) < 0)
			return ui_fail(cli, &err, "site remove %s", name);
		ui_info(cli, "site '%s' removed", name);
		return EXIT_OK;
	}
	if (cli->json) {
		ui_json_doc("site", site_json(s, is_def));
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
