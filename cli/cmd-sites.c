/* gridgpu sites: what each of the user's sites offers, one row a site (is its CE
 * reachable, the GPU models, memory, capability, free and total slots, waiting
 * jobs, the GPU RTE, when last seen), then where each fact came from and how
 * old it is. The facts are the library's (gg_engine_sites: the CEs asked at
 * once, each for --timeout at most, their word kept GG_SITES_TTL seconds);
 * here they are printed. A site whose CE cannot be reached is a row with the
 * reason; the exit status is 0 all the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "ctx.h"

enum { O_REFRESH = 256, O_TIMEOUT };

const struct gg_opt cmd_sites_opts[] = {
	{"refresh", 0, OPT_NONE, NULL, "ask every CE now, whatever was kept (60 s)", O_REFRESH},
	{"timeout", 0, OPT_ARG, "DUR", "wait for each CE at most DUR (default 10s)", O_TIMEOUT},
	OPT_END,
};

static int parse_opts(struct gg_cli *cli, int argc, char **argv, unsigned *flags,
		      int64_t *timeout_ms)
{
	struct gg_err err = {0};
	int64_t secs;
	int c;
	while ((c = cli_next_opt(cli, argc, argv, cmd_sites_opts)) > 0) {
		if (c == O_REFRESH)
			*flags |= GG_SITES_FRESH;
		else if (c == O_TIMEOUT) {
			if (gg_duration_parse_unit(cli->optarg, &secs, &err) < 0)
				return ui_usage(cli, "--timeout: %s", err.msg);
			if (secs < 1 || secs > 600)
				return ui_usage(cli, "--timeout '%s': expected 1s to 10m",
						cli->optarg);
			*timeout_ms = secs * 1000;
		}
	}
	if (c < 0)
		return c == -2 ? -2 : EXIT_USAGE;
	return 0;
}

static const char *text(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "-";
}

/* A number of o's, or "-" when the source did not say. */
static const char *num(json_t *o, const char *key, const char *unit, char *b, size_t n)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_integer(v))
		return "-";
	snprintf(b, n, "%lld%s", (long long)json_integer_value(v), unit);
	return b;
}

static const char *ago(int64_t secs, char *b, size_t n)
{
	char d[32];
	if (secs < 1)
		return "just now";
	gg_duration_format(secs, d, sizeof d);
	snprintf(b, n, "%s ago", d);
	return b;
}

/* The GPU models, ", " between. */
static char *models(json_t *s)
{
	json_t *m = json_object_get(s, "gpu_models");
	char *out = strdup(json_array_size(m) ? "" : "-");
	size_t i;
	json_t *v;
	json_array_foreach (m, i, v) {
		char *n = gg_strdup_printf("%s%s%s", out ? out : "", i ? ", " : "",
					   json_string_value(v));
		free(out);
		out = n;
	}
	return out;
}

static void row(json_t *s, const char *fmt)
{
	char mem[32], fr[32], tot[32], wait[32], free_total[72], seen[48];
	json_t *last = json_object_get(s, "last_seen_age_seconds");
	json_t *rp = json_object_get(s, "rte_present");
	char rte[160];
	snprintf(rte, sizeof rte, "%s%s", text(s, "rte"),
		 json_is_true(rp) ? "" : (json_is_false(rp) ? " (absent)" : ""));
	snprintf(free_total, sizeof free_total, "%s/%s", num(s, "free_slots", "", fr, sizeof fr),
		 num(s, "total_slots", "", tot, sizeof tot));
	char *m = models(s);
	ui_out(fmt, text(s, "site"), json_is_true(json_object_get(s, "reachable")) ? "yes" : "no",
	       m ? m : "-", num(s, "gpu_memory_mb", " MiB", mem, sizeof mem), text(s, "capability"),
	       free_total, num(s, "waiting", "", wait, sizeof wait), rte,
	       json_is_integer(last) ? ago(json_integer_value(last), seen, sizeof seen) : "never");
	free(m);
}

/* Under the table, each site's sources, newest first, with their ages, and
 * why a CE could not be reached. */
static void sources(json_t *s)
{
	char line[1024] = "", a[48];
	size_t n = 0, i;
	json_t *src;
	json_array_foreach (json_object_get(s, "sources"), i, src) {
		const char *o = text(src, "origin");
		int64_t age = (int64_t)json_integer_value(json_object_get(src, "age_seconds"));
		int cached = json_is_true(json_object_get(src, "cached"));
		const char *what = !strcmp(o, "ce")        ? "CE information"
				   : !strcmp(o, "profile") ? "site profile"
							   : "GPUs of session";
		char extra[128] = "";
		if (!strcmp(o, "session"))
			snprintf(extra, sizeof extra, " %s", text(src, "session"));
		n += (size_t)snprintf(line + n, n < sizeof line ? sizeof line - n : 0,
				      "%s%s%s %s%s", i ? "; " : "", what, extra,
				      ago(age, a, sizeof a), cached ? " (kept)" : "");
	}
	ui_out("  %s: %s\n", text(s, "site"), line);
	if (!json_is_true(json_object_get(s, "reachable")))
		ui_out("  %s: not reachable: %s\n", text(s, "site"), text(s, "reason"));
}

static void print(json_t *doc)
{
	json_t *sites = json_object_get(doc, "sites");
	int w = 4;
	size_t i;
	json_t *s;
	json_array_foreach (sites, i, s) {
		int l = (int)strlen(text(s, "site"));
		w = l > w ? l : w;
	}
	char fmt[96];
	snprintf(fmt, sizeof fmt,
		 "%%-%ds  %%-9s  %%-24s  %%-10s  %%-4s  %%-10s  %%-7s  %%-12s  %%s\n", w);
	ui_out(fmt, "SITE", "REACHABLE", "GPU", "MEMORY", "CC", "FREE/TOTAL", "WAITING", "RTE",
	       "LAST SEEN");
	json_array_foreach (sites, i, s)
		row(s, fmt);
	json_array_foreach (sites, i, s)
		sources(s);
}

int cmd_sites(struct gg_cli *cli, int argc, char **argv)
{
	unsigned flags = 0;
	int64_t timeout_ms = GG_SITES_TIMEOUT_MS;
	int rc = parse_opts(cli, argc, argv, &flags, &timeout_ms);
	if (rc)
		return rc == -2 ? EXIT_OK : rc;
	cli_catch_interrupt();
	struct gg_engine *e = cli_engine(cli);
	if (!e)
		return cli->cfg_exit;
	struct gg_err err = {0};
	json_t *doc = NULL;
	const char *const *names = (const char *const *)argv + cli->optind;
	size_t n = (size_t)(argc - cli->optind);
	if (!n && cli->nsites)
		names = cli->sites, n = (size_t)cli->nsites;
	if (!n && !gg_engine_config(e)->nsites)
		return ui_fail(cli,
			       &(struct gg_err){.code = GG_EUSAGE,
						.msg = "no sites: add one with 'gridgpu site add'"},
			       "sites");
	if (gg_engine_sites(e, names, n, timeout_ms, flags, &doc, &err) < 0)
		return ui_fail(cli, &err, "sites");
	if (cli->json)
		return ui_json_doc("sites", doc);
	print(doc);
	json_decref(doc);
	return EXIT_OK;
}
