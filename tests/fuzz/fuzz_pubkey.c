/* OpenSSH public key lines (the launcher's host key, the session key): the check
 * and the SHA256 fingerprint. */
#include <string.h>

#include "fuzz.h"
#include "ssh/ssh.h"

FUZZ_TARGET(pubkey)
{
	char *line = fuzz_cstr(data, size);
	struct gg_err err = {0};
	int ok = gg_ssh_pubkey_check(line, &err) == 0;
	char fp[80];
	memset(fp, 0x55, sizeof fp);
	struct gg_err e2 = {0};
	int rc = gg_ssh_fingerprint(line, fp, sizeof fp, &e2);
	FUZZ_CHECK(ok == (rc == 0), "check says %d, fingerprint says %d", ok, rc);
	if (rc == 0) {
		FUZZ_CHECK(!strncmp(fp, "SHA256:", 7) && strlen(fp) == 7 + 43,
			   "fingerprint '%.80s'", fp);
	} else {
		FUZZ_CHECK(err.msg[0] && e2.msg[0], "failure without a message");
	}
	free(line);
	return 0;
}
