/* gridgpu/site.h (lib/engine/site.c): a site profile's keys checked and set
 * as gridgpu site add and site set do, and shown as site show --json and the
 * "KEY: OLD → NEW" lines of a change. The keys themselves, and struct
 * gg_site, are GG_SITE_KEYS in gridgpu/core.h. */
#ifndef GRIDGPU_SITE_H
#define GRIDGPU_SITE_H

#include <jansson.h>

#include "gridgpu/core.h"

/* site add's --OPTION VALUE: value checked as the key takes it (a CE URL, a
 * jump host, a path ssh can be given, a choice, a duration with its unit...)
 * and set in s: a list gets one more value (allow_from: one or more,
 * separated by ','), another key is replaced. name: a key or an option
 * (gg_site_key_find). 0, or GG_EUSAGE with a one-line message naming the
 * option; s is unchanged then. */
GG_API int gg_site_add_value(struct gg_site *s, const char *name, const char *value,
			     struct gg_err *err);
/* site set's KEY VALUE: the whole setting replaced, a list's values separated
 * by ','; "" unsets it (GG_EUSAGE for a key a site must have, the CE). s is
 * unchanged on failure. */
GG_API int gg_site_set_key(struct gg_site *s, const char *name, const char *value,
			   struct gg_err *err);
/* Has s what a site must have (its CE)? 0, or GG_EUSAGE: "--ce URL is required". */
GG_API int gg_site_check(const struct gg_site *s, struct gg_err *err);
/* s as site show --json gives it (gridgpu.site/1 without "schema" and
 * "default"): "name", each key's --json member that is set, the lists always
 * (arrays, maybe empty), durations in seconds. NULL when out of memory. */
GG_API json_t *gg_site_to_json(const struct gg_site *s);
/* Each key whose value differs between a and b, in GG_SITE_KEYS's order, with
 * its values as gg_site_value_text gives them (NULL: unset). Returns how many
 * differ, or GG_ENOMEM. */
typedef void (*gg_site_change_fn)(void *ud, const struct gg_site_key *k, const char *before,
				  const char *after);
GG_API int gg_site_changes(const struct gg_site *a, const struct gg_site *b, gg_site_change_fn fn,
			   void *ud);

#endif
