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

/* ---- the proxy workflow: gridgpu proxy init and info, one call each ---------- */

/* Making a proxy (gg_proxy_make) is: the new key made in the background
 * meanwhile, the proxy file checked, the user's credential found and read, its
 * pass phrase asked of the caller (once) and the key unlocked, the ACs of each
 * VO asked of its VOMS server, the proxy signed, verified when asked and
 * written atomically (nothing is written on any failure). Inspecting one
 * (gg_proxy_inspect) reads it, its ACs, verifies it when asked and answers
 * voms-proxy-info's questions. Core dumps are turned off first (the key, the
 * pass phrase, a token). Neither prints: warnings and notes go to the note
 * callback, VOMS traffic to the log. */

/* At most this many VOs in one proxy. */
#define GG_PROXY_VOMS_MAX 16
/* The largest pass phrase buffer the callback is given (bytes). */
#define GG_PASSPHRASE_MAX 4096

/* Opaque: what to make or inspect and whom to tell. Strings given to the
 * setters are borrowed: they must outlive the calls that use q. */
struct gg_proxy_req;
/* Defaults: the usual files, 12 h, 2048 bits, impersonation, no path length,
 * no VOMS, no verification, nothing shown beside the proxy. NULL: no memory. */
GG_API struct gg_proxy_req *gg_proxy_req_new(void);
GG_API void gg_proxy_req_free(struct gg_proxy_req *q);
/* The user's certificate and key (gg_cred_locate's arguments, NULL = found as
 * it finds them) and the proxy file (gg_proxy_path's: NULL = the usual). */
GG_API void gg_proxy_req_set_cred(struct gg_proxy_req *q, const char *cert, const char *key);
GG_API void gg_proxy_req_set_file(struct gg_proxy_req *q, const char *path);
/* The proxy made: lifetime (seconds, 0 = GG_PROXY_DEFAULT_LIFETIME), RSA
 * bits (0 = 2048) and key making threads (0 = as gg_keygen_start chooses),
 * policy, path length (-1 = none). */
GG_API void gg_proxy_req_set_lifetime(struct gg_proxy_req *q, int64_t secs);
GG_API void gg_proxy_req_set_key(struct gg_proxy_req *q, int bits, int threads);
GG_API void gg_proxy_req_set_policy(struct gg_proxy_req *q, enum gg_proxy_policy policy);
GG_API void gg_proxy_req_set_path_length(struct gg_proxy_req *q, int path_length);
/* Verify the proxy against the CA directory (gg_cred_ca_dir's: NULL = the usual). */
GG_API void gg_proxy_req_set_verify(struct gg_proxy_req *q, const char *ca_dir);
/* One VO whose AC the proxy carries: "VO[:FQAN]", VO a name or a vomses
 * alias; the VO checked, the FQAN too (GG_EUSAGE saying what is wrong; more
 * than GG_PROXY_VOMS_MAX). Each VO is asked once with all the FQANs given
 * for it, however it is named (an alias and its VO's name are one VO). */
GG_API int gg_proxy_req_add_voms(struct gg_proxy_req *q, const char *vo_fqan, struct gg_err *err);
/* The FQAN the VOMS servers put first (checked: GG_EUSAGE), and the ACs'
 * lifetime (0 = the proxy's; never longer than it). */
GG_API int gg_proxy_req_set_order(struct gg_proxy_req *q, const char *fqan, struct gg_err *err);
GG_API void gg_proxy_req_set_voms_lifetime(struct gg_proxy_req *q, int64_t secs);

/* What the report carries beside the proxy (or'ed). */
#define GG_PROXY_SHOW_TOKEN                                                        \
	1u                    /* the bearer token found (WLCG discovery): one that \
				 is not valid is a warning */
#define GG_PROXY_SHOW_MODE 2u /* (inspect) a warning when others may read the file */
GG_API void gg_proxy_req_set_show(struct gg_proxy_req *q, unsigned what);
/* Inspect for an answer (voms-proxy-info --exists, --valid, --acexists): is
 * the proxy valid now (not expired, not yet valid, verified when asked) for at
 * least need seconds (0: any), its ACs valid as long, one of VO vo among them
 * (NULL: any)? A chain that does not verify is then a "no", not an error. */
GG_API void gg_proxy_req_set_answer(struct gg_proxy_req *q, int64_t need, const char *vo);

/* The pass phrase of the key file key_path, written into buf (size bytes):
 * its length, or a negative GG_E* code with err set (no terminal, end of
 * input, interrupted). Called at most once per gg_proxy_make, only when the
 * key is encrypted; buf is wiped after use. */
typedef int (*gg_passphrase_fn)(void *ud, const char *key_path, char *buf, size_t size,
				struct gg_err *err);
GG_API void gg_proxy_req_on_passphrase(struct gg_proxy_req *q, gg_passphrase_fn fn, void *ud);
/* Warnings (an AC shortened, the proxy clipped to its signer's end, core
 * dumps left on, a bad token, an open proxy file) and verbose notes (timing). */
GG_API void gg_proxy_req_on_note(struct gg_proxy_req *q, gg_note_fn fn, void *ud);
/* Each VOMS server tried (borrowed). */
GG_API void gg_proxy_req_set_log(struct gg_proxy_req *q, const struct gg_log *log);

/* Opaque: a proxy made or read, what it says, and the answer asked. */
struct gg_proxy_report;
/* Make the proxy q asks for (see above) and write it to its file. GG_ECRED for
 * the credential (none, expired, wrong pass phrase, the file refused), the
 * VOMS errors of gg_voms_fetch; nothing is written then. */
GG_API int gg_proxy_make(const struct gg_proxy_req *q, struct gg_proxy_report **out,
			 struct gg_err *err);
/* Read the proxy file q names (GG_ECRED "no proxy at ..." when there is
 * none), its ACs, verify it when asked (failing: GG_ECRED, unless an answer is
 * asked), and answer when asked (gg_proxy_report_answer). */
GG_API int gg_proxy_inspect(const struct gg_proxy_req *q, struct gg_proxy_report **out,
			    struct gg_err *err);
/* Borrowed from r. info->path is the proxy file. */
GG_API const struct gg_proxy_info *gg_proxy_report_info(const struct gg_proxy_report *r);
GG_API const struct gg_ac *gg_proxy_report_acs(const struct gg_proxy_report *r, size_t *n);
/* 1 verified, 0 not (an answer was asked), -1 not asked; against which directory. */
GG_API int gg_proxy_report_verified(const struct gg_proxy_report *r);
GG_API const char *gg_proxy_report_ca_dir(const struct gg_proxy_report *r);
/* The token found (GG_PROXY_SHOW_TOKEN), or NULL. */
GG_API const struct gg_token *gg_proxy_report_token(const struct gg_proxy_report *r);
/* The time the report describes the proxy at. */
GG_API time_t gg_proxy_report_time(const struct gg_proxy_report *r);
/* The answer: 0 yes, GG_ECRED no with one line saying why ("proxy '...' has
 * expired"). 0 when none was asked. */
GG_API int gg_proxy_report_answer(const struct gg_proxy_report *r, struct gg_err *err);
GG_API void gg_proxy_report_free(struct gg_proxy_report *r);

#endif
