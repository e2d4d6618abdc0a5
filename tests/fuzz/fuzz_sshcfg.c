/* Values written into the generated ssh config (gg_ssh_cfg_value) and jump
 * hosts (gg_ssh_jump_parse). The first byte picks the kind. An accepted value
 * must read back, the way ssh reads a config argument, as exactly that value:
 * no control character, one argument (quoted when it is a path), every '%'
 * doubled where ssh expands %-tokens. */
#include <string.h>

#include "fuzz.h"
#include "ssh/ssh.h"

/* ssh's reading of one config argument: an unquoted word or "...", then the
 * %-expansion of "%%" (any other '%' is a token: refused here). NULL if the
 * text is not exactly one argument. malloc'd. */
static char *read_back(const char *q, int quoted, int tokens)
{
	size_t n = strlen(q);
	if (quoted) {
		if (n < 2 || q[0] != '"' || q[n - 1] != '"')
			return NULL;
		q++;
		n -= 2;
	}
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)q[i];
		int bad = c < 0x20 || c == 0x7f || c == '"' || c == '\\' ||
			  (!quoted && (c == ' ' || c == '\'' || c == '#' || c == '='));
		if (!bad && c == '%' && tokens) {
			bad = i + 1 >= n || q[i + 1] != '%';
			i++;
		}
		if (bad) {
			free(out);
			return NULL;
		}
		*o++ = (char)c;
	}
	*o = '\0';
	return out;
}

static void check_value(const char *v, enum gg_sshv kind)
{
	struct gg_err err = {0};
	char *q = gg_ssh_cfg_value("fuzz", v, kind, &err);
	if (!q) {
		FUZZ_CHECK(err.code == GG_EUSAGE && err.msg[0] && !strchr(err.msg, '\n'),
			   "refused without a one-line usage error: %d '%s'", err.code, err.msg);
		return;
	}
	int quoted = kind == GG_SSHV_PATH || kind == GG_SSHV_INCLUDE;
	int tokens = kind == GG_SSHV_PATH || kind == GG_SSHV_HOST;
	char *back = read_back(q, quoted, tokens);
	FUZZ_CHECK(back && strcmp(back, v) == 0, "kind %d: '%.200s' written as '%.200s'", (int)kind,
		   v, q);
	FUZZ_CHECK(kind != GG_SSHV_PATH || !strstr(v, "${"), "'${' accepted in a path");
	free(back);
	free(q);
}

FUZZ_TARGET(sshcfg)
{
	if (size < 1)
		return 0;
	char *v = fuzz_cstr(data + 1, size - 1);
	int kind = data[0] % 6;
	if (kind < 5) {
		check_value(v, (enum gg_sshv)kind);
	} else {
		struct gg_ssh_jump j;
		struct gg_err err = {0};
		if (gg_ssh_jump_parse(v, &j, &err) == 0) {
			FUZZ_CHECK(
				gg_ssh_cfg_check("h", j.host, GG_SSHV_HOST, NULL) == 0 &&
					(!j.user[0] ||
					 gg_ssh_cfg_check("u", j.user, GG_SSHV_USER, NULL) == 0) &&
					j.port >= 0 && j.port <= 65535,
				"jump '%.200s' parsed to bad parts", v);
			check_value(j.host, GG_SSHV_HOST);
		} else {
			FUZZ_CHECK(err.code == GG_EUSAGE && !strchr(err.msg, '\n'),
				   "jump refused without a usage error");
		}
	}
	free(v);
	return 0;
}
