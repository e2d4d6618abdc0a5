/* The INI configuration ($XDG_CONFIG_HOME/gridgpu/config, edited by hand and by
 * `gridgpu site add`): gg_config_load from a file. A configuration that loads must
 * load again, the same, after gg_config_format (what gg_config_save writes), and
 * its sites feed the SSH config writer (jump host parsing). A site's
 * allow_from, written into the session sshd's configuration on the node,
 * holds only addresses. */
#include <string.h>

#include "core/core.h"
#include "fuzz.h"
#include "store/store.h"
#include "node/sshview.h"
#include "ssh/ssh.h"

static int config_str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void config_same(const struct gg_config *a, const struct gg_config *b, const char *text)
{
	FUZZ_CHECK(config_str_eq(a->default_site, b->default_site),
		   "default site changed on a round trip\n%s", text);
	FUZZ_CHECK(a->nsites == b->nsites, "%zu sites became %zu on a round trip\n%s", a->nsites,
		   b->nsites, text);
	for (size_t i = 0; i < a->nsites; i++) {
		const struct gg_site *x = &a->sites[i], *y = &b->sites[i];
		FUZZ_CHECK(config_str_eq(x->name, y->name), "[site %s] renamed on a round trip\n%s",
			   x->name, text);
		/* every key of the list (GG_SITE_KEYS), as site show would print it */
		for (size_t k = 0; k < gg_site_key_count(); k++) {
			const struct gg_site_key *key = gg_site_key_at(k);
			int oom_x, oom_y;
			char *vx = gg_site_value_text(x, key, &oom_x);
			char *vy = gg_site_value_text(y, key, &oom_y);
			FUZZ_CHECK(!oom_x && !oom_y, "out of memory");
			FUZZ_CHECK(config_str_eq(vx, vy),
				   "[site %s] '%s' changed on a round trip: '%s' became '%s'\n%s",
				   x->name, key->key, vx ? vx : "(none)", vy ? vy : "(none)", text);
			free(vx);
			free(vy);
		}
	}
}

FUZZ_TARGET(config)
{
	char path[4096];
	if (fuzz_write_file("config", data, size, path) < 0)
		return 0;
	struct gg_config *cfg = NULL;
	struct gg_err err = {0};
	int rc = gg_config_load(path, &cfg, &err);
	if (rc < 0) {
		FUZZ_CHECK(cfg == NULL && err.msg[0], "failure without a message (rc %d)", rc);
		unlink(path);
		return 0;
	}
	FUZZ_CHECK(cfg && !strcmp(cfg->path, path), "no configuration, or another path");
	for (size_t i = 0; i < cfg->nsites; i++) {
		FUZZ_CHECK(gg_site_name_valid(cfg->sites[i].name), "loaded a bad site name");
		FUZZ_CHECK(gg_config_site(cfg, cfg->sites[i].name) == &cfg->sites[i],
			   "site '%s' is there twice", cfg->sites[i].name);
		FUZZ_CHECK(cfg->sites[i].njumps >= 0 && cfg->sites[i].njumps <= GG_MAX_JUMPS,
			   "%d jumps", cfg->sites[i].njumps);
		/* allow_from goes into the session sshd's configuration: nothing
		 * but an address's characters, and what sshd takes */
		for (int k = 0; k < cfg->sites[i].nallow; k++) {
			const char *a = cfg->sites[i].allow_from[k];
			FUZZ_CHECK(a[0] && !a[strspn(a, "0123456789abcdefABCDEF:./")],
				   "allow_from '%s' has other characters", a);
			FUZZ_CHECK(gg_addr_range_check(a, &err) == 0, "allow_from '%s' loaded: %s",
				   a, err.msg);
		}
	}

	/* saved (formatted) and loaded again */
	char *text = gg_config_format(cfg);
	FUZZ_CHECK(text, "gg_config_format failed");
	FILE *f = fopen(path, "we");
	FUZZ_CHECK(f, "reopening %s", path);
	fputs(text, f);
	FUZZ_CHECK(fclose(f) == 0, "rewriting %s", path);
	struct gg_config *cfg2 = NULL;
	struct gg_err err2 = {0};
	rc = gg_config_load(path, &cfg2, &err2);
	unlink(path);
	FUZZ_CHECK(rc == 0, "a configuration that loaded does not load once saved: %s\n%s",
		   err2.msg, text);
	config_same(cfg, cfg2, text);
	gg_config_free(cfg2);
	free(text);

	/* the sites' jump hosts in the generated ssh config */
	struct gg_record *recs = calloc(cfg->nsites ? cfg->nsites : 1, sizeof *recs);
	FUZZ_CHECK(recs, "out of memory");
	for (size_t i = 0; i < cfg->nsites; i++) {
		recs[i].kind = GG_REC_SESSION;
		recs[i].state = GG_S_READY;
		recs[i].name = "s1";
		recs[i].site = cfg->sites[i].name;
		recs[i].node = "node1.example.org";
		recs[i].port = 22001;
		recs[i].host_key =
			"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJcJ5QRxpucacLuUiCNcTHY0PL5THI9wD7nZOVoJq+3C";
	}
	struct gg_ssh_paths p = {0};
	p.dir = "/nonexistent/ssh";
	p.config = "/nonexistent/ssh/config";
	p.known_hosts = "/nonexistent/ssh/known_hosts";
	p.control = "/nonexistent/ssh/cm";
	char *conf = gg_session_format_ssh_config(&p, cfg, recs, cfg->nsites, 0);
	FUZZ_CHECK(conf, "gg_session_format_ssh_config failed");
	free(conf);
	free(recs);
	gg_config_free(cfg);
	return 0;
}
