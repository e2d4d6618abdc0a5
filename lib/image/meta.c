/* Image metadata: the architecture from the sandbox's /bin/sh ELF header, the definition
 * object, inspect-metadata.json (what `apptainer inspect` reads from a SIF) and
 * gridgpu-provenance.json. */
#include "image/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

/* ---- names ------------------------------------------------------------------------ */

const char *gg_image_comp_name(enum gg_image_comp comp)
{
	switch (comp) {
	case GG_IMAGE_COMP_GZIP: return "gzip";
	case GG_IMAGE_COMP_XZ: return "xz";
	case GG_IMAGE_COMP_LZ4: return "lz4";
	case GG_IMAGE_COMP_ZSTD: return "zstd";
	default: return "unknown";
	}
}

enum gg_image_comp gg_image_comp_parse(const char *name)
{
	static const enum gg_image_comp all[] = {GG_IMAGE_COMP_GZIP, GG_IMAGE_COMP_XZ,
						 GG_IMAGE_COMP_LZ4, GG_IMAGE_COMP_ZSTD};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (!strcmp(name, gg_image_comp_name(all[i])))
			return all[i];
	return (enum gg_image_comp)0;
}

const char *gg_image_format_name(enum gg_image_format f)
{
	switch (f) {
	case GG_IMAGE_DIR: return "dir";
	case GG_IMAGE_TAR: return "tar";
	case GG_IMAGE_OCI: return "oci";
	default: return "auto";
	}
}

/* ---- architecture ------------------------------------------------------------------ */

static const char *const arch_names[] = {"unknown",  "386",     "amd64",   "arm",    "arm64",
					 "ppc64",    "ppc64le", "mips",    "mipsle", "mips64",
					 "mips64le", "s390x",   "riscv64", "loong64"};
static const char *const arch_codes[] = {"00", "01", "02", "03", "04", "05", "06",
					 "07", "08", "09", "10", "11", "12", "13"};

const char *gg_image_arch_name(const char *code)
{
	for (size_t i = 0; i < sizeof arch_codes / sizeof arch_codes[0]; i++)
		if (code && !strncmp(code, arch_codes[i], 2))
			return arch_names[i];
	return "unknown";
}

const char *gg_image_host_arch(void)
{
#if defined(__x86_64__)
	return "02";
#elif defined(__i386__)
	return "01";
#elif defined(__aarch64__)
	return "04";
#elif defined(__arm__)
	return "03";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return "06";
#elif defined(__powerpc64__)
	return "05";
#elif defined(__s390x__)
	return "11";
#elif defined(__riscv) && __riscv_xlen == 64
	return "12";
#elif defined(__loongarch64)
	return "13";
#else
	return "00";
#endif
}

const char *gg_image_elf_arch(const unsigned char *h, size_t len)
{
	if (len < 20 || memcmp(h,
			       "\x7f"
			       "ELF",
			       4) != 0)
		return NULL;
	int cls = h[4], data = h[5];
	if ((cls != 1 && cls != 2) || (data != 1 && data != 2))
		return NULL;
	unsigned mach = data == 1 ? (unsigned)h[18] | (unsigned)h[19] << 8
				  : (unsigned)h[19] | (unsigned)h[18] << 8;
	int b64 = cls == 2, le = data == 1;
	switch (mach) {
	case 3: return !b64 && le ? "01" : NULL;                      /* EM_386 */
	case 62: return b64 && le ? "02" : NULL;                      /* EM_X86_64 */
	case 40: return !b64 && le ? "03" : NULL;                     /* EM_ARM */
	case 183: return b64 && le ? "04" : NULL;                     /* EM_AARCH64 */
	case 21: return b64 ? (le ? "06" : "05") : NULL;              /* EM_PPC64 */
	case 8: return b64 ? (le ? "10" : "09") : (le ? "08" : "07"); /* EM_MIPS */
	case 22: return b64 && !le ? "11" : NULL;                     /* EM_S390 */
	case 243: return b64 && le ? "12" : NULL;                     /* EM_RISCV */
	case 258: return b64 && le ? "13" : NULL;                     /* EM_LOONGARCH */
	default: return NULL;
	}
}

static int exec_elf(struct gg_node *n, void *ud)
{
	const struct gg_inode *ino = n->inode;
	if (ino->skipped)
		return GG_WALK_SKIP;
	if (S_ISREG(ino->mode) && ino->elf[0] && (ino->mode & 0111)) {
		*(const char **)ud = ino->elf;
		return 2; /* found: stop */
	}
	return 0;
}

static const char *first_exec_elf(const struct gg_node *top)
{
	const char *found = NULL;
	/* the walk takes no const tree; exec_elf only reads */
	gg_image_tree_walk((struct gg_node *)top, exec_elf, NULL, &found);
	return found;
}

static const char *code_of(const char *elf)
{
	for (size_t i = 0; i < sizeof arch_codes / sizeof arch_codes[0]; i++)
		if (!strncmp(elf, arch_codes[i], 2))
			return arch_codes[i];
	return NULL;
}

const char *gg_image_tree_arch(const struct gg_tree *t)
{
	const struct gg_node *sh = gg_image_tree_resolve(t, "bin/sh");
	if (sh && S_ISREG(sh->inode->mode) && sh->inode->elf[0] && code_of(sh->inode->elf))
		return code_of(sh->inode->elf);
	const char *a = first_exec_elf(t->root);
	if (a && code_of(a))
		return code_of(a);
	return gg_image_host_arch();
}

/* ---- metadata the sandbox carries -------------------------------------------------- */

static int glob_env(const char *name)
{
	size_t n = strlen(name);
	if (n < 4 || strcmp(name + n - 3, ".sh"))
		return 0;
	if (!strncmp(name, "10-docker", 9))
		return 1;
	return name[0] == '9' && n >= 16 && !strcmp(name + n - 15, "-environment.sh");
}

int gg_image_meta_wanted(const char *path)
{
	static const char *const files[] = {
		".singularity.d/labels.json",    ".singularity.d/runscript",
		".singularity.d/startscript",    ".singularity.d/test",
		".singularity.d/runscript.help",
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		if (!strcmp(path, files[i]))
			return 1;
	const char *env = ".singularity.d/env/";
	size_t el = strlen(env);
	return !strncmp(path, env, el) && !strchr(path + el, '/') && glob_env(path + el);
}

static const struct gg_inode *captured(const struct gg_tree *t, const char *path)
{
	const struct gg_node *n = gg_image_tree_resolve(t, path);
	if (!n || n->inode->skipped || !S_ISREG(n->inode->mode) || !n->inode->capture)
		return NULL;
	return n->inode;
}

/* A JSON string of a captured file without its trailing newlines, as apptainer shows it
 * (escaped when it is not UTF-8); NULL when absent. */
static json_t *captured_str(const struct gg_tree *t, const char *path)
{
	const struct gg_inode *ino = captured(t, path);
	if (!ino)
		return NULL;
	size_t len = ino->capture_len;
	while (len && ino->capture[len - 1] == '\n')
		len--;
	return gg_json_textn(ino->capture, len);
}

/* k: v, left out when v is NULL (a file the image does not have). */
static void set_new(json_t *o, const char *k, json_t *v)
{
	if (v)
		gg_json_set(o, k, v);
}

static void fmt_time(int64_t t, char *rfc, size_t rlen, char *schema, size_t slen)
{
	static const char *const wd[] = {"Sunday",   "Monday", "Tuesday", "Wednesday",
					 "Thursday", "Friday", "Saturday"};
	static const char *const mon[] = {"January",   "February", "March",    "April",
					  "May",       "June",     "July",     "August",
					  "September", "October",  "November", "December"};
	time_t tt = (time_t)t;
	struct tm tm;
	if (!gmtime_r(&tt, &tm))
		memset(&tm, 0, sizeof tm);
	snprintf(rfc, rlen, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (schema)
		snprintf(schema, slen, "%s_%d_%s_%d_%d:%d:%d_UTC", wd[tm.tm_wday % 7], tm.tm_mday,
			 mon[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static const char *bootstrap_of(const struct gg_meta_in *in)
{
	if (in->format == GG_IMAGE_OCI && in->oci && in->oci->bootstrap)
		return in->oci->bootstrap;
	return "localimage";
}

static char *dump(json_t *v)
{
	char *s = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(v);
	return s;
}

/* What several parts of the metadata show. */
struct meta_ctx {
	char rfc[64], schema[96];
	const char *archname, *boot;
};

/* Copy the string values of a JSON object text into labels. */
static void merge_string_labels(json_t *labels, json_t *from)
{
	const char *k;
	json_t *v;
	json_object_foreach (from, k, v)
		if (json_is_string(v))
			json_object_set(labels, k, v);
	json_decref(from);
}

static int add_user_labels(const struct gg_meta_in *in, json_t *labels, struct gg_err *err)
{
	for (size_t i = 0; i < in->nlabels; i++) {
		const char *eq = strchr(in->labels[i], '=');
		if (!eq || eq == in->labels[i])
			return gg_err_set(err, GG_EUSAGE, "label '%s': expected KEY=VALUE",
					  in->labels[i]);
		char *k = strndup(in->labels[i], (size_t)(eq - in->labels[i]));
		if (!k)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
		/* a label is refused, not escaped: it must read back as given */
		int ok = gg_json_text_exact(k) && gg_json_text_exact(eq + 1);
		int rc = ok ? gg_json_set(labels, k, gg_json_text(eq + 1)) : 0;
		free(k);
		if (!ok)
			return gg_err_set(err, GG_EUSAGE, "label '%s': not valid UTF-8",
					  in->labels[i]);
		if (rc < 0)
			return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	return 0;
}

/* Labels: the sandbox's own, the OCI config's, the build's, then --label. */
static int build_labels(const struct gg_meta_in *in, const struct meta_ctx *m, json_t *labels,
			struct gg_err *err)
{
	const struct gg_inode *lj = captured(in->tree, ".singularity.d/labels.json");
	if (lj)
		merge_string_labels(labels, json_loadb(lj->capture, lj->capture_len, 0, NULL));
	if (in->oci && in->oci->labels_json)
		merge_string_labels(labels, json_loads(in->oci->labels_json, 0, NULL));
	gg_json_set_text(labels, "org.label-schema.schema-version", "1.0");
	gg_json_set_text(labels, "org.label-schema.build-date", m->schema);
	gg_json_set_text(labels, "org.opencontainers.image.created", m->rfc);
	gg_json_set_text(labels, "org.label-schema.usage.singularity.deffile.bootstrap", m->boot);
	gg_json_set_text(labels, "org.label-schema.usage.singularity.deffile.from", in->source);
	gg_json_set_text(labels, "org.opencontainers.image.architecture", m->archname);
	gg_json_set_text(labels, "org.label-schema.build-arch", m->archname);
	gg_json_set_text(labels, "org.label-schema.usage.gridgpu.version", in->tool_version);
	if (in->source_digest)
		gg_json_set_text(labels, "org.opencontainers.image.base.digest", in->source_digest);
	if (in->oci && in->oci->ref)
		gg_json_set_text(labels, "org.opencontainers.image.base.name", in->oci->ref);
	return add_user_labels(in, labels, err);
}

/* Environment scripts, keyed by their path in the image. */
static void build_env(const struct gg_tree *t, json_t *env)
{
	const struct gg_node *envdir = gg_image_tree_resolve(t, ".singularity.d/env");
	if (!envdir || !S_ISDIR(envdir->inode->mode))
		return;
	for (size_t i = 0; i < envdir->nkids; i++) {
		if (!glob_env(envdir->kids[i]->name))
			continue;
		char *rel = gg_strdup_printf(".singularity.d/env/%s", envdir->kids[i]->name);
		char *abs = gg_strdup_printf("/.singularity.d/env/%s", envdir->kids[i]->name);
		json_t *v = rel ? captured_str(t, rel) : NULL;
		if (v && abs)
			gg_json_set(env, abs, v);
		else
			json_decref(v);
		free(rel);
		free(abs);
	}
}

/* inspect-metadata.json: {"data": {"attributes": ...}, "type": "container"}; NULL when
 * out of memory. */
static json_t *build_inspect(const struct gg_meta_in *in, const char *def, json_t *labels,
			     json_t *env)
{
	json_t *attrs = json_object(), *data = json_object(), *top = json_object();
	if (!attrs || !data || !top) {
		json_decref(attrs);
		json_decref(data);
		json_decref(top);
		return NULL;
	}
	json_object_set(attrs, "labels", labels);
	if (json_object_size(env))
		json_object_set(attrs, "environment", env);
	set_new(attrs, "runscript", captured_str(in->tree, ".singularity.d/runscript"));
	set_new(attrs, "startscript", captured_str(in->tree, ".singularity.d/startscript"));
	set_new(attrs, "test", captured_str(in->tree, ".singularity.d/test"));
	set_new(attrs, "helpfile", captured_str(in->tree, ".singularity.d/runscript.help"));
	size_t dl = strlen(def);
	while (dl && def[dl - 1] == '\n')
		dl--;
	set_new(attrs, "deffile", gg_json_textn(def, dl)); /* as apptainer shows it */
	gg_json_set(data, "attributes", attrs);
	gg_json_set(top, "data", data);
	gg_json_set_text(top, "type", "container");
	return top;
}

static json_t *provenance_source(const struct gg_meta_in *in)
{
	json_t *src = json_object();
	if (!src)
		return NULL;
	gg_json_set_text(src, "kind", gg_image_format_name(in->format));
	gg_json_set_text(src, "path", in->source_abs);
	gg_json_set_text(src, "given", in->source);
	if (in->source_digest)
		gg_json_set_text(src, "digest", in->source_digest);
	if (in->oci && in->oci->ref)
		gg_json_set_text(src, "ref", in->oci->ref);
	return src;
}

static json_t *provenance_squashfs(const struct gg_meta_in *in)
{
	json_t *comp = json_object();
	if (!comp)
		return NULL;
	set_new(comp, "algorithm", gg_json_text(gg_image_comp_name((enum gg_image_comp)in->comp)));
	if (in->comp == GG_IMAGE_COMP_GZIP)
		gg_json_set_text(comp, "encoder", "libdeflate");
	gg_json_set(comp, "level", json_integer(in->level));
	gg_json_set(comp, "block_size", json_integer(in->block_size));
	return comp;
}

/* gridgpu-provenance.json into prov. */
static int build_provenance(const struct gg_meta_in *in, const struct meta_ctx *m, json_t *prov,
			    struct gg_err *err)
{
	json_t *src = provenance_source(in), *comp = provenance_squashfs(in);
	if (!src || !comp) {
		json_decref(src);
		json_decref(comp);
		return gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	gg_json_set_text(prov, "schema", "gridgpu-provenance/1");
	gg_json_set_text(prov, "gridgpu_version", in->tool_version);
	gg_json_set_text(prov, "build_time", m->rfc);
	gg_json_set(prov, "reproducible", json_boolean(in->reproducible));
	gg_json_set_text(prov, "arch", m->archname);
	gg_json_set(prov, "source", src);
	gg_json_set(prov, "squashfs", comp);
	if (in->oci && in->oci->config_json)
		set_new(prov, "oci_config", json_loads(in->oci->config_json, 0, NULL));
	if (in->usage_json)
		set_new(prov, "usage", json_loads(in->usage_json, 0, NULL));
	if (!in->gpus_json || !*in->gpus_json) {
		gg_json_set(prov, "gpus", json_null());
		return 0;
	}
	json_error_t je;
	json_t *g = json_loads(in->gpus_json, JSON_DECODE_ANY, &je);
	if (!g)
		return gg_err_set(err, GG_EUSAGE, "GPU description: not valid JSON: %s", je.text);
	gg_json_set(prov, "gpus", g);
	return 0;
}

int gg_image_meta_build(const struct gg_meta_in *in, char **deffile, char **inspect,
			char **provenance, struct gg_err *err)
{
	*deffile = *inspect = *provenance = NULL;
	struct meta_ctx m = {.archname = gg_image_arch_name(in->arch), .boot = bootstrap_of(in)};
	fmt_time(in->build_time, m.rfc, sizeof m.rfc, m.schema, sizeof m.schema);
	char *def = gg_strdup_printf("bootstrap: %s\nfrom: %s\n\n", m.boot, in->source);
	json_t *labels = json_object(), *env = json_object(), *prov = json_object(), *top = NULL;
	int rc = 0;
	if (!def || !labels || !env || !prov)
		rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	if (rc == 0 && (rc = build_labels(in, &m, labels, err)) == 0) {
		build_env(in->tree, env);
		if (!(top = build_inspect(in, def, labels, env)))
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	if (rc == 0 && (rc = build_provenance(in, &m, prov, err)) == 0) {
		*inspect = dump(top);
		*provenance = dump(prov);
		top = prov = NULL;
		if (!*inspect || !*provenance) {
			free(*inspect);
			free(*provenance);
			*inspect = *provenance = NULL;
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
		}
	}
	json_decref(labels);
	json_decref(env);
	json_decref(top);
	json_decref(prov);
	if (rc < 0) {
		free(def);
		return rc;
	}
	*deffile = def;
	return 0;
}

int gg_image_sif_arch(const char *path, char arch[16])
{
	struct gg_sif *sif = NULL;
	struct gg_err err = {0};
	arch[0] = '\0';
	if (!path || gg_sif_open(path, &sif, &err) < 0)
		return 0;
	const char *name = gg_image_arch_name(sif->hdr.arch);
	if (strcmp(name, "unknown"))
		snprintf(arch, 16, "%s", name);
	gg_sif_close(sif);
	return arch[0] != '\0';
}
