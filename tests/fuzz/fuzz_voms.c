/* The VOMS server's XML answer (gg_voms_answer_parse) and the attribute
 * certificates it carries (gg_ac_seq_parse, gg_ac_parse): an input that starts
 * with '<' is an answer; '"' or '#' vomses lines (gg_voms_server_parse); '/' an
 * FQAN (gg_voms_fqan_check, gg_voms_fqan_command); any other the DER of the
 * proxy extension and of one AC. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "voms/voms.h"

/* Each line as the vomses reader gives it to the parser. */
static void vomses_lines(const char *text)
{
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		char *line = strndup(p, n + (p[n] == '\n'));
		struct gg_voms_server s;
		struct gg_err err = {0};
		int rc = line ? gg_voms_server_parse(line, &s, &err) : 1;
		FUZZ_CHECK(rc == 0 || rc == 1 || (rc == GG_EUSAGE && err.msg[0]),
			   "a vomses line refused without a message");
		if (rc == 0) {
			FUZZ_CHECK(*s.alias && *s.host && s.dn && s.vo && s.port >= 1 &&
					   s.port <= 65535,
				   "a vomses server without alias, host, DN, VO or port");
			free(s.alias), free(s.host), free(s.dn), free(s.vo);
		}
		free(line);
		p += n + (p[n] == '\n');
	}
}

/* An FQAN taken is /vo... of the grammar's characters, and makes a legacy
 * command of its VO; one refused makes none. */
static void fqan(const char *f)
{
	struct gg_err err = {0};
	int rc = gg_voms_fqan_check(NULL, f, &err);
	FUZZ_CHECK(rc == 0 || (rc == GG_EUSAGE && err.msg[0]), "an FQAN refused without a message");
	char vo[300] = "";
	size_t vl = strcspn(f + 1, "/");
	if (vl < sizeof vo)
		memcpy(vo, f + 1, vl);
	char *cmd = gg_voms_fqan_command(vo, f);
	FUZZ_CHECK((rc == 0) == (cmd != NULL), "the command disagrees with the check");
	if (rc == 0)
		FUZZ_CHECK(strspn(f, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				     "0123456789._-/=") == strlen(f) &&
				   strspn(cmd + 1,
					  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					  "0123456789._-/:") == strlen(cmd + 1),
			   "an FQAN taken with a character outside the grammar");
	free(cmd);
}

FUZZ_TARGET(voms)
{
	struct gg_err err = {0};
	if (size && (data[0] == '"' || data[0] == '#' || data[0] == '/')) {
		char *text = strndup((const char *)data, size);
		if (text && data[0] == '/')
			fqan(text);
		else if (text)
			vomses_lines(text);
		free(text);
		return 0;
	}
	if (size && data[0] == '<') {
		struct gg_voms_answer a;
		int rc = gg_voms_answer_parse((const char *)data, size, &a, &err);
		FUZZ_CHECK(rc == 0 || (rc == GG_EPROTO && err.msg[0]), "failure without a message");
		if (rc == 0)
			FUZZ_CHECK(a.code || (a.ac && a.ac_len),
				   "an answer with neither AC nor error");
		gg_voms_answer_clear(&a);
		return 0;
	}
	struct gg_ac *acs = NULL, one;
	size_t n = 0;
	if (gg_ac_seq_parse(data, size, 1700000000, &acs, &n, &err) == 0)
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(acs[i].vo && acs[i].issuer && acs[i].n_fqans,
				   "an AC without VO");
	gg_ac_list_free(acs, n);
	if (gg_ac_parse(data, size, 1700000000, &one, &err) == 0)
		FUZZ_CHECK(one.vo && one.n_fqans > 0, "an AC without FQANs");
	gg_ac_clear(&one);
	return 0;
}
