/* What a slurm+ssh login node answers about jobs squeue no longer shows
 * (outside text): sacct's "ID|STATE|EXITCODE" lines and the job directories'
 * "dir|ID|EXIT[|STAGE|FAILURE]" lines, read by gg_slurm_parse_sacct; and a slurm+ssh:// URL
 * as a profile gives it (gg_slurm_url_parse). A result is filled only for an
 * id asked about, once, with a known state and a printable reason and raw
 * state; a URL taken has a plain host and user and a directory without a
 * control byte or ".." step. */
#include <string.h>

#include "ce/ce.h"
#include "fuzz.h"

static void sacct_printable(const char *s)
{
	for (size_t i = 0; s && s[i]; i++)
		FUZZ_CHECK((unsigned char)s[i] >= 0x20 && s[i] != 0x7f,
			   "control byte 0x%02x at %zu", (unsigned char)s[i], i);
}

static void sacct_url(const uint8_t *data, size_t size)
{
	char url[700];
	struct gg_slurm_url u;
	struct gg_err err = {0};
	size_t n = size < sizeof url - 13 ? size : sizeof url - 13;
	memcpy(url, "slurm+ssh://", 12);
	memcpy(url + 12, data, n);
	url[12 + n] = '\0';
	if (gg_slurm_url_parse(url, &u, &err) < 0)
		return;
	FUZZ_CHECK(u.host[0] &&
			   strspn(u.host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					  "0123456789._-") == strlen(u.host),
		   "host '%s'", u.host);
	FUZZ_CHECK(!gg_str_has_control(u.dir) && !strstr(u.dir, "/../"), "dir '%s'", u.dir);
	FUZZ_CHECK(u.port >= 0 && u.port <= 65535, "port %d", u.port);
}

FUZZ_TARGET(sacct)
{
	static const char *const ids[] = {"7", "12", "12_3", "dir", "999999999999"};
	const size_t n = sizeof ids / sizeof ids[0];
	struct gg_ce_result res[5];
	memset(res, 0, sizeof res);
	res[1].code = 200; /* answered already: left alone */
	gg_slurm_parse_sacct((const char *)data, size, ids, n, res);
	FUZZ_CHECK(res[1].code == 200 && !res[1].reason && !res[1].raw_state, "an answer replaced");
	for (size_t i = 0; i < n; i++) {
		if (i != 1 && res[i].code) {
			FUZZ_CHECK(res[i].code == 200, "code %d", res[i].code);
			FUZZ_CHECK(res[i].state != GG_CE_UNKNOWN, "an unknown state taken");
		}
		sacct_printable(res[i].reason);
		sacct_printable(res[i].raw_state);
		free(res[i].reason);
		free(res[i].raw_state);
	}
	sacct_url(data, size);
	return 0;
}
