/* The public header: include/gridgpu/voms.h. */
#ifndef GG_LIB_VOMS_H
#define GG_LIB_VOMS_H

#include "core/core.h"
#include "cred/cred.h"
#include "gridgpu/voms.h"

#include <time.h>

#include <openssl/x509.h>

/* What a VOMS server sent (ans, len: the whole HTTP answer for REST, the XML
 * for the legacy protocol), taken as gg_voms_fetch takes it: the server's
 * refusal (GG_ECRED, its message), or its AC, checked to be signed by signer,
 * for vo, and valid at now (0 = the current time) give or take GG_AC_SKEW
 * seconds (GG_ECRED "not valid yet" with its start when it starts later: the
 * server's clock is ahead). 0 and *ac (DER, malloc'd); 1 = not a REST answer
 * (rest only); GG_EPROTO: garbage. who ("host:port") prefixes the messages.
 * got (may be NULL): the AC's validity, shortened when it ends more than
 * GG_AC_SKEW before now + lifetime (0: not checked), the server's warnings. */
int gg_voms_answer_take(const char *who, const char *ans, size_t len, int rest, X509 *signer,
			const char *vo, time_t now, unsigned char **ac, size_t *ac_len,
			int64_t lifetime, struct gg_voms_got *got, struct gg_err *err);

#endif
