/* CUDA_VISIBLE_DEVICES: which of the node's devices this process may use. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpu/gpu.h"

/* Mark a GPU: itself when whole, its MIG devices when in MIG mode. */
static void mark_dev(struct gg_gpu_dev *d)
{
	if (d->mig == GG_GPU_ON) {
		for (size_t k = 0; k < d->nmigs; k++)
			d->migs[k].visible = 1;
	} else {
		d->visible = 1;
	}
}

/* The one GPU whose UUID starts with prefix ("GPU-ab12..."); NULL when none
 * or more than one. Hex digits compare without case. */
static struct gg_gpu_dev *dev_by_uuid(struct gg_gpu_info *info, const char *prefix, size_t n)
{
	struct gg_gpu_dev *found = NULL;
	if (n <= 4)
		return NULL;
	for (size_t i = 0; i < info->ndevs; i++) {
		struct gg_gpu_dev *d = &info->devs[i];
		if (d->uuid[0] && strlen(d->uuid) >= n && strncasecmp(d->uuid, prefix, n) == 0) {
			if (found)
				return NULL; /* ambiguous */
			found = d;
		}
	}
	return found;
}

static struct gg_gpu_mig *mig_by_uuid(struct gg_gpu_info *info, const char *prefix, size_t n)
{
	struct gg_gpu_mig *found = NULL;
	if (n <= 4)
		return NULL;
	for (size_t i = 0; i < info->ndevs; i++)
		for (size_t k = 0; k < info->devs[i].nmigs; k++) {
			struct gg_gpu_mig *m = &info->devs[i].migs[k];
			if (m->uuid[0] && strlen(m->uuid) >= n &&
			    strncasecmp(m->uuid, prefix, n) == 0) {
				if (found)
					return NULL;
				found = m;
			}
		}
	return found;
}

/* "MIG-GPU-<uuid>/<gi>/<ci>", the form of drivers before R470. */
static struct gg_gpu_mig *mig_by_parent(struct gg_gpu_info *info, const char *e, size_t n)
{
	const char *slash = memchr(e, '/', n);
	if (!slash)
		return NULL;
	size_t ulen = (size_t)(slash - e) - 4; /* without "MIG-" */
	char rest[32];
	size_t rlen = n - (size_t)(slash - e);
	if (rlen >= sizeof rest)
		return NULL;
	memcpy(rest, slash, rlen);
	rest[rlen] = '\0';
	unsigned gi, ci;
	char extra;
	if (sscanf(rest, "/%u/%u%c", &gi, &ci, &extra) != 2)
		return NULL;
	for (size_t i = 0; i < info->ndevs; i++) {
		struct gg_gpu_dev *d = &info->devs[i];
		if (strlen(d->uuid) != ulen || strncasecmp(d->uuid, e + 4, ulen) != 0)
			continue;
		for (size_t k = 0; k < d->nmigs; k++)
			if (d->migs[k].gi_id == (int)gi && d->migs[k].ci_id == (int)ci)
				return &d->migs[k];
	}
	return NULL;
}

/* Apply one entry; 0 when it names no device. */
static int apply_entry(struct gg_gpu_info *info, const char *e, size_t n)
{
	if (n == 0)
		return 0;
	size_t digits = 0;
	while (digits < n && isdigit((unsigned char)e[digits]))
		digits++;
	if (digits == n) {
		if (n > 6)
			return 0;
		char num[8];
		memcpy(num, e, n);
		num[n] = '\0';
		unsigned long idx = strtoul(num, NULL, 10);
		if (idx >= info->ndevs || !info->devs[idx].uuid[0])
			return 0;
		mark_dev(&info->devs[idx]);
		return 1;
	}
	if (n > 4 && strncasecmp(e, "GPU-", 4) == 0) {
		struct gg_gpu_dev *d = dev_by_uuid(info, e, n);
		if (!d)
			return 0;
		mark_dev(d);
		return 1;
	}
	if (n > 4 && strncasecmp(e, "MIG-", 4) == 0) {
		struct gg_gpu_mig *m = mig_by_uuid(info, e, n);
		if (!m && n > 8 && strncasecmp(e, "MIG-GPU-", 8) == 0)
			m = mig_by_parent(info, e, n);
		if (!m)
			return 0;
		m->visible = 1;
		return 1;
	}
	return 0;
}

int gg_gpu_set_visible(struct gg_gpu_info *info, const char *cvd, struct gg_err *err)
{
	free(info->cvd);
	free(info->cvd_note);
	info->cvd = info->cvd_note = NULL;
	info->nvisible = 0;
	for (size_t i = 0; i < info->ndevs; i++) {
		struct gg_gpu_dev *d = &info->devs[i];
		d->visible = 0;
		for (size_t k = 0; k < d->nmigs; k++)
			d->migs[k].visible = 0;
	}
	if (!cvd) {
		for (size_t i = 0; i < info->ndevs; i++)
			if (info->devs[i].uuid[0])
				mark_dev(&info->devs[i]);
	} else {
		if (!(info->cvd = strdup(cvd)))
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		const char *p = cvd;
		for (;;) {
			while (*p == ' ' || *p == '\t')
				p++;
			size_t n = strcspn(p, ",");
			size_t t = n;
			while (t && (p[t - 1] == ' ' || p[t - 1] == '\t'))
				t--;
			if (!apply_entry(info, p, t)) {
				if (!*cvd)
					info->cvd_note = strdup("CUDA_VISIBLE_DEVICES is empty: no "
								"device may be used");
				else
					info->cvd_note = gg_strdup_printf(
						"CUDA_VISIBLE_DEVICES entry '%.*s' names no device: it "
						"and the entries after it are ignored, as CUDA does",
						(int)(t > 100 ? 100 : t), p);
				if (!info->cvd_note)
					return gg_err_set(err, GG_ENOMEM, "out of memory");
				break;
			}
			if (!p[n])
				break;
			p += n + 1;
		}
	}
	for (size_t i = 0; i < info->ndevs; i++) {
		struct gg_gpu_dev *d = &info->devs[i];
		info->nvisible += d->visible ? 1 : 0;
		for (size_t k = 0; k < d->nmigs; k++)
			info->nvisible += d->migs[k].visible ? 1 : 0;
	}
	return 0;
}
