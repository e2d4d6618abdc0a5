/* The VOMS server's XML answer, read by a small strict parser rather than
 * libxml2: the answer is a few flat elements (<voms><ac>…</ac></voms>, or
 * <vomsans><error><item><number/><message/></item></error><ac/></vomsans>), and a
 * parser that knows no DTD, entity expansion or external references has
 * nothing of those to get wrong with an answer from the network. */
#include "voms/voms.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#define XML_MAX   (64 * 1024)
#define DEPTH_MAX 8

struct px {
	const char *p, *end;
	struct gg_voms_answer *a;
	char *ac_b64;
	int have_ac;
	long num; /* the legacy item's number, until its message */
};

/* The legacy protocol's item numbers below this are warnings beside the AC
 * (voms' WARN_*: 2 = the AC shortened), from it errors (ERR_*: 1001 not a
 * member...). */
#define VOMS_ERROR_OFFSET 1000

/* Another warning, "; " after the ones before. */
static void add_warning(struct gg_voms_answer *a, char *val)
{
	if (!a->warning) {
		a->warning = val;
		return;
	}
	char *w = gg_strdup_printf("%s; %s", a->warning, val);
	if (w) {
		free(a->warning);
		a->warning = w;
	}
	free(val);
}

static void skip_ws(struct px *x)
{
	while (x->p < x->end && isspace((unsigned char)*x->p))
		x->p++;
}

static int name_char(int c)
{
	return isalnum(c) || c == '_' || c == '-' || c == '.' || c == ':';
}

/* Text up to the next '<', entities decoded, appended to *out (malloc'd). */
static int text(struct px *x, char **out)
{
	const char *s = x->p;
	while (x->p < x->end && *x->p != '<')
		x->p++;
	size_t n = (size_t)(x->p - s);
	char *t = malloc(n + 1), *o = t;
	if (!t)
		return -1;
	static const struct {
		const char *e;
		char c;
	} ents[] = {
		{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
	for (const char *q = s; q < x->p;) {
		if (*q == '\0') {
			free(t);
			return -1;
		}
		if (*q != '&') {
			*o++ = *q++;
			continue;
		}
		size_t i;
		for (i = 0; i < sizeof ents / sizeof ents[0]; i++) {
			size_t el = strlen(ents[i].e);
			if ((size_t)(x->p - q) >= el && memcmp(q, ents[i].e, el) == 0) {
				*o++ = ents[i].c;
				q += el;
				break;
			}
		}
		if (i == sizeof ents / sizeof ents[0]) {
			free(t);
			return -1;
		}
	}
	*o = '\0';
	free(*out);
	*out = t;
	return 0;
}

/* What a leaf element means: its name and its text. */
static int leaf(struct px *x, const char *name, char *val)
{
	if (strcmp(name, "ac") == 0) {
		if (x->have_ac) {
			free(val);
			return -1;
		}
		x->have_ac = 1;
		free(x->ac_b64);
		x->ac_b64 = val;
		return 0;
	}
	if (strcmp(name, "code") == 0 || strcmp(name, "number") == 0) {
		char *end;
		long v = strtol(val, &end, 10);
		x->num = end == val || *end || v <= 0 || v > 1000000 ? -1 : v;
		/* REST codes are names ("NoSuchUser"): keep them as the message prefix;
		 * a number below VOMS_ERROR_OFFSET is a warning, its message follows */
		if (x->num < 0)
			x->a->code = x->a->code ? x->a->code : 1;
		else if (x->num >= VOMS_ERROR_OFFSET && (!x->a->code || x->a->code == 1))
			x->a->code = (int)v;
	} else if (strcmp(name, "warning") == 0 ||
		   (strcmp(name, "message") == 0 && x->num > 0 && x->num < VOMS_ERROR_OFFSET)) {
		x->num = 0;
		add_warning(x->a, val);
		return 0;
	} else if (strcmp(name, "message") == 0 && !x->a->message) {
		x->num = 0;
		x->a->message = val;
		return 0;
	}
	free(val);
	return 0;
}

/* One element at x->p ('<' seen), its children, its end tag. */
static int element(struct px *x, int depth)
{
	char name[32];
	size_t n = 0;
	if (depth > DEPTH_MAX || x->p >= x->end || *x->p != '<')
		return -1;
	x->p++;
	while (x->p < x->end && name_char((unsigned char)*x->p) && n < sizeof name - 1)
		name[n++] = *x->p++;
	name[n] = '\0';
	skip_ws(x);
	if (n == 0 || x->p >= x->end)
		return -1;
	if (*x->p == '/') { /* <empty/> */
		if (x->end - x->p < 2 || x->p[1] != '>')
			return -1;
		x->p += 2;
		return leaf(x, name, strdup("")) < 0 ? -1 : 0;
	}
	if (*x->p++ != '>')
		return -1; /* attributes: none in a VOMS answer */
	char *val = NULL;
	int kids = 0;
	for (;;) {
		if (text(x, &val) < 0 || x->p >= x->end) {
			free(val);
			return -1;
		}
		if (x->end - x->p >= 2 && x->p[1] == '/')
			break;
		kids++;
		if (element(x, depth + 1) < 0) {
			free(val);
			return -1;
		}
	}
	x->p += 2;
	if ((size_t)(x->end - x->p) < n + 1 || memcmp(x->p, name, n) != 0 || x->p[n] != '>') {
		free(val);
		return -1;
	}
	x->p += n + 1;
	if (kids) {
		free(val);
		return 0;
	}
	return leaf(x, name, val);
}

/* The XML declaration, when there is one: <?xml ...?> */
static int decl(struct px *x)
{
	skip_ws(x);
	if (x->end - x->p < 5 || memcmp(x->p, "<?xml", 5) != 0)
		return 0;
	const char *q = x->p + 5;
	while (q + 1 < x->end && !(q[0] == '?' && q[1] == '>'))
		if (*q++ == '<')
			return -1;
	if (q + 1 >= x->end)
		return -1;
	x->p = q + 2;
	return 0;
}

/* base64 (lines allowed) to DER. */
static int unbase64(const char *b64, unsigned char **out, size_t *len)
{
	size_t n = strlen(b64), k = 0;
	char *clean = malloc(n + 1);
	if (!clean)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)b64[i]))
			clean[k++] = b64[i];
	unsigned char *buf = k % 4 == 0 && k ? malloc(k / 4 * 3 + 1) : NULL;
	int r = buf ? EVP_DecodeBlock(buf, (const unsigned char *)clean, (int)k) : -1;
	if (r >= 0) {
		if (k >= 1 && clean[k - 1] == '=')
			r--;
		if (k >= 2 && clean[k - 2] == '=')
			r--;
	}
	free(clean);
	if (r <= 0) {
		free(buf);
		return -1;
	}
	*out = buf;
	*len = (size_t)r;
	return 0;
}

void gg_voms_answer_clear(struct gg_voms_answer *a)
{
	if (!a)
		return;
	free(a->ac);
	free(a->message);
	free(a->warning);
	memset(a, 0, sizeof *a);
}

int gg_voms_answer_parse(const char *xml, size_t len, struct gg_voms_answer *out,
			 struct gg_err *err)
{
	memset(out, 0, sizeof *out);
	if (len > XML_MAX)
		return gg_err_set(err, GG_EPROTO, "the VOMS server's answer is too large");
	struct px x = {xml, xml + len, out, NULL, 0, 0};
	int rc = decl(&x);
	skip_ws(&x);
	if (rc == 0)
		rc = element(&x, 0);
	skip_ws(&x);
	if (rc == 0 && x.p != x.end)
		rc = -1;
	/* the legacy protocol sends "QQ==" (one byte 'A') as the AC beside an error */
	if (rc == 0 && x.ac_b64 && !out->code && unbase64(x.ac_b64, &out->ac, &out->ac_len) < 0)
		rc = -1;
	if (rc == 0 && !out->ac && !out->code)
		rc = -1;
	free(x.ac_b64);
	if (rc < 0) {
		gg_voms_answer_clear(out);
		return gg_err_set(err, GG_EPROTO, "the VOMS server's answer is not one (bad XML)");
	}
	return 0;
}
