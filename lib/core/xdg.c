/* XDG base directories. */
#include "core/core.h"

#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

const char *gg_home_dir(void)
{
	const char *h = getenv("HOME");
	if (h && *h)
		return h;
	struct passwd *pw = getpwuid(getuid());
	return pw ? pw->pw_dir : NULL;
}

int gg_xdg_dir(enum gg_xdg kind, char **out, struct gg_err *err)
{
	static const struct {
		const char *var, *fallback;
	} tab[] = {
		[GG_XDG_CONFIG] = {"XDG_CONFIG_HOME", ".config"},
		[GG_XDG_STATE] = {"XDG_STATE_HOME", ".local/state"},
		[GG_XDG_CACHE] = {"XDG_CACHE_HOME", ".cache"},
		[GG_XDG_RUNTIME] = {"XDG_RUNTIME_DIR", NULL},
	};
	const char *v = getenv(tab[kind].var);
	char *p;
	if (v && v[0] == '/') { /* relative values are ignored, per the spec */
		p = gg_strdup_printf("%s/gridgpu", v);
	} else if (kind == GG_XDG_RUNTIME) {
		return gg_xdg_dir(GG_XDG_STATE, out, err);
	} else {
		const char *h = gg_home_dir();
		if (!h)
			return gg_err_set(err, GG_EFAIL,
					  "cannot find your home directory: set HOME or %s",
					  tab[kind].var);
		p = gg_strdup_printf("%s/%s/gridgpu", h, tab[kind].fallback);
	}
	if (!p)
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	*out = p;
	return 0;
}
