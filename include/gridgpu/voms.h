/* gridgpu/voms.h (lib/voms): VOMS attribute certificates asked of a VO's VOMS
 * server, as voms-proxy-init does: the servers from the vomses files, TLS with
 * the user's certificate, the server checked against X509_CERT_DIR and the VO's
 * .lsc file, the REST interface first (GET /generate-ac), then the legacy XML
 * protocol. Never prints, prompts or exits. */
#ifndef GRIDGPU_VOMS_H
#define GRIDGPU_VOMS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "gridgpu/core.h"
#include "gridgpu/cred.h"

/* One vomses line: "alias" "host" "port" "server DN" "vo". */
struct gg_voms_server {
	char *alias, *host, *dn, *vo;
	int port;
};

/* The longest vomses line read: a longer one (a line names one server, in a
 * few hundred bytes) is refused, never read in pieces. */
#define GG_VOMSES_LINE_MAX 16384
/* The longest FQAN taken. */
#define GG_VOMS_FQAN_MAX 1024

/* The servers of vo (matched by alias or VO name), in the order voms-proxy-init
 * reads them: $VOMS_USERCONF alone when set, else ~/.voms/vomses,
 * ~/.glite/vomses, /etc/vomses; each a file or a directory of files. GG_EUSAGE
 * when none names vo, or a file has a malformed line, a line longer than
 * GG_VOMSES_LINE_MAX or a NUL byte (its name and line number). Free with
 * gg_voms_servers_free. */
GG_API int gg_voms_servers_find(const char *vo, struct gg_voms_server **out, size_t *n,
				struct gg_err *err);
GG_API void gg_voms_servers_free(struct gg_voms_server *s, size_t n);
/* Parse one vomses line (0; 1 = blank or comment; GG_EUSAGE when malformed). */
GG_API int gg_voms_server_parse(const char *line, struct gg_voms_server *out, struct gg_err *err);

/* A VOMS server's answer, either shape (REST <voms>, legacy <vomsans>). */
struct gg_voms_answer {
	unsigned char *ac; /* the AC (DER, decoded from base64), or NULL */
	size_t ac_len;
	int code; /* the error's code or number; 0 = none */
	char *message;
	char *warning; /* the warnings beside the AC (REST <warning>, legacy items
			* numbered below 1000: "shortened to N seconds"), "; "
			* between them, as sent; or NULL */
};
/* Strict parser of the small XML answer: elements and text only (no DTD,
 * comments, CDATA or processing instructions but the XML declaration), the
 * five predefined entities, at most 64 KiB. GG_EPROTO when it is not one. */
GG_API int gg_voms_answer_parse(const char *xml, size_t len, struct gg_voms_answer *out,
				struct gg_err *err);
GG_API void gg_voms_answer_clear(struct gg_voms_answer *a);

/* A VO's name: 1 to 255 ASCII letters, digits, '.', '_' and '-'. 0 or GG_EUSAGE. */
GG_API int gg_voms_vo_check(const char *vo, struct gg_err *err);
/* An FQAN as a request names it: /vo[/group...][/Role=r][/Capability=c], each
 * name as a VO's, at most GG_VOMS_FQAN_MAX bytes; of vo unless vo is NULL. 0 or
 * GG_EUSAGE saying what is wrong (the FQAN as given: escape it to print it).
 * err may be NULL. */
GG_API int gg_voms_fqan_check(const char *vo, const char *fqan, struct gg_err *err);
/* The FQAN as a legacy command: "/vo/g" -> "G/vo/g", "/vo/g/Role=r" -> "B/vo/g:r".
 * malloc'd; NULL when it is not an FQAN of vo (gg_voms_fqan_check). */
GG_API char *gg_voms_fqan_command(const char *vo, const char *fqan);

struct gg_voms_request {
	const char *vo;
	const char *const *fqans; /* NULL/0 = the VO's default (its root group) */
	size_t n_fqans;
	const char *order;    /* --order, or NULL */
	int64_t lifetime;     /* seconds asked for the AC */
	const char *ca_dir;   /* NULL = X509_CERT_DIR, else the default */
	const char *voms_dir; /* NULL = X509_VOMS_DIR, else /etc/grid-security/vomsdir */
	long timeout_ms;      /* per server; 0 = 20 s */
	const struct gg_log *log;
};
/* What came with an AC besides it. */
struct gg_voms_got {
	char who[300];                /* the server that answered, "host:port" */
	char vo[256];                 /* the VO (the AC's: vomses' VO name, not the alias) */
	time_t not_before, not_after; /* the AC's validity */
	int shortened;                /* it ends more than GG_AC_SKEW before the lifetime asked */
	char *warning;                /* the server's warnings, as sent (escape them), or NULL */
};
GG_API void gg_voms_got_clear(struct gg_voms_got *g);

/* Ask the VO's servers (r->vo: a vomses alias or VO name), one after the other
 * until one answers, for an AC for user (unlocked). The request is checked
 * before anything is sent (GG_EUSAGE: r->vo not a VO name, an FQAN or the
 * order not an FQAN (gg_voms_fqan_check), an FQAN not of the server's VO).
 * *ac (DER, malloc'd) is checked: signed by the server talked to, for the VO;
 * the server's .lsc file is vomsdir/<VO name>/<host>.lsc. got (may be NULL;
 * gg_voms_got_clear): the server, the AC's validity, whether it was shortened,
 * the server's warnings. GG_EUSAGE: no server for the VO; GG_ECRED: the server
 * said no (its message), its certificate does not match the .lsc; GG_ENET:
 * none could be reached; GG_EPROTO: garbage. */
GG_API int gg_voms_fetch(const struct gg_cred *user, const struct gg_voms_request *r,
			 unsigned char **ac, size_t *ac_len, struct gg_voms_got *got,
			 struct gg_err *err);

#endif
