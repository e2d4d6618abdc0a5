/* MIG profile names as NVIDIA spells them (nvidia-smi mig -lgip, the GPU
 * operator's and Kubernetes' "nvidia.com/mig-1g.10gb"): checked before a job
 * asks a site for one, with the right spelling suggested for a near miss. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gpu/gpu.h"

struct mig {
	unsigned ci, gi, mem; /* [CIc.]GIg.MEMgb; ci 0 = no compute-instance part */
	const char *suffix;   /* "", "+me", ... (canonical spelling) */
};

/* The media-extension and graphics variants nvidia-smi lists after the size. */
static const char *const mig_suffixes[] = {"", "+me", "+me.all", "-me", "+gfx"};

static int lc(int c, int loose)
{
	return loose ? tolower((unsigned char)c) : c;
}

/* A decimal below 10000 at *p (no leading zero unless loose); advances *p. */
static int mig_num(const char **p, int loose, unsigned *out)
{
	const char *s = *p;
	unsigned v = 0;
	if (!isdigit((unsigned char)*s) || (!loose && s[0] == '0'))
		return -1;
	for (; isdigit((unsigned char)*s); s++)
		if ((v = v * 10 + (unsigned)(*s - '0')) > 9999)
			return -1;
	*p = s;
	*out = v;
	return 0;
}

/* The '.' between the parts; loose also takes '_', '-', ' ' or nothing. */
static int mig_sep(const char **p, int loose)
{
	if (**p == '.' || (loose && **p && strchr("_- ", **p))) {
		(*p)++;
		return 0;
	}
	return loose && isdigit((unsigned char)**p) ? 0 : -1;
}

static int mig_suffix(const char *p, int loose, struct mig *m)
{
	for (size_t i = 0; i < sizeof mig_suffixes / sizeof mig_suffixes[0]; i++)
		if (loose ? !strcasecmp(p, mig_suffixes[i]) : !strcmp(p, mig_suffixes[i])) {
			m->suffix = mig_suffixes[i];
			return 0;
		}
	return -1;
}

/* Read s as a profile; loose reads what a person may have meant (upper case,
 * another or no separator, "g" for "gb"). */
static int mig_scan(const char *s, int loose, struct mig *m)
{
	const char *p = s;
	unsigned a;
	memset(m, 0, sizeof *m);
	if (mig_num(&p, loose, &a) < 0)
		return -1;
	if (lc(*p, loose) == 'c') {
		p++;
		m->ci = a;
		if (mig_sep(&p, loose) < 0 || mig_num(&p, loose, &a) < 0)
			return -1;
	}
	if (lc(*p, loose) != 'g')
		return -1;
	p++;
	m->gi = a;
	if (mig_sep(&p, loose) < 0 || mig_num(&p, loose, &m->mem) < 0)
		return -1;
	if (lc(p[0], loose) == 'g' && lc(p[1], loose) == 'b')
		p += 2;
	else if (loose && lc(*p, loose) == 'g')
		p++;
	else
		return -1;
	if (loose)
		while (*p == ' ')
			p++;
	return mig_suffix(p, loose, m);
}

/* The profiles NVIDIA's GPUs offer (nvidia-smi mig -lgip), smallest first per
 * GPU: A30 24GB, A100 40GB and 80GB, H100 80GB and 94GB, GH200 96GB, H200
 * 141GB, B200 180GB. gg_mig_profile_check takes any name of the grammar (a
 * newer GPU's too); completion offers these, and test_gpu checks each against
 * the grammar. */
static const char *const mig_known[] = {
	"1g.6gb",  "1g.6gb+me",  "2g.12gb", "2g.12gb+me", "4g.24gb", "1g.5gb",     "1g.5gb+me",
	"2g.10gb", "3g.20gb",    "4g.20gb", "7g.40gb",    "1g.10gb", "1g.10gb+me", "1g.20gb",
	"2g.20gb", "3g.40gb",    "4g.40gb", "7g.80gb",    "1g.12gb", "1g.12gb+me", "1g.24gb",
	"2g.24gb", "3g.47gb",    "4g.47gb", "7g.94gb",    "3g.48gb", "4g.48gb",    "7g.96gb",
	"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb",    "3g.71gb", "4g.71gb",    "7g.141gb",
	"1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb",    "3g.90gb", "4g.90gb",    "7g.180gb",
};

const char *const *gg_mig_profiles(size_t *n)
{
	*n = sizeof mig_known / sizeof mig_known[0];
	return mig_known;
}

static const char mig_form[] = "NVIDIA's form is SLICESg.MEMORYgb, e.g. 1g.10gb, 2g.20gb, "
			       "3g.40gb, 7g.80gb, 1g.10gb+me";

int gg_mig_profile_check(const char *s, struct gg_err *err)
{
	struct mig m;
	char want[64];
	if (!s || !*s)
		return gg_err_set(err, GG_EUSAGE, "empty MIG profile (%s)", mig_form);
	int strict = mig_scan(s, 0, &m) == 0;
	if (!strict && mig_scan(s, 1, &m) < 0)
		return gg_err_set(err, GG_EUSAGE, "'%s' is not a MIG profile (%s)", s, mig_form);
	if (m.gi < 1 || m.gi > 7 || m.mem < 1)
		return gg_err_set(err, GG_EUSAGE,
				  "'%s': a MIG profile has 1 to 7 slices and some memory (%s)", s,
				  mig_form);
	if (m.ci > m.gi || (m.ci == 0 && strchr(s, 'c')))
		return gg_err_set(err, GG_EUSAGE,
				  "'%s': a compute instance has 1 to %u of its GPU instance's "
				  "%u slices",
				  s, m.gi, m.gi);
	if (strict)
		return 0;
	if (m.ci)
		snprintf(want, sizeof want, "%uc.%ug.%ugb%s", m.ci, m.gi, m.mem, m.suffix);
	else
		snprintf(want, sizeof want, "%ug.%ugb%s", m.gi, m.mem, m.suffix);
	return gg_err_set(err, GG_EUSAGE, "'%s' is not a MIG profile: did you mean '%s'? (%s)", s,
			  want, mig_form);
}
