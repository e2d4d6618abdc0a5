/* list-and-freeze: a site's own tool built on the installed libgridgpu alone.
 * Lists the sessions and jobs of a record store, then freezes a directory into
 * a SIF image and verifies it.
 *
 *   cc -o list-and-freeze list-and-freeze.c $(pkg-config --cflags --libs gridgpu)
 *   ./list-and-freeze STORE-DIR SOURCE-DIR OUTPUT.sif
 *
 * STORE-DIR "-" is the user's store ($XDG_STATE_HOME/gridgpu/records). */
#include <stdio.h>
#include <string.h>

#include <gridgpu/image.h>
#include <gridgpu/session.h>

static int fail(const char *what, const struct gg_err *err)
{
	fprintf(stderr, "list-and-freeze: %s: %s\n", what, err->msg);
	return 1;
}

int main(int argc, char **argv)
{
	struct gg_err err = {0};
	if (argc != 4) {
		fprintf(stderr, "usage: list-and-freeze STORE-DIR SOURCE-DIR OUTPUT.sif\n");
		return 2;
	}

	struct gg_store *st;
	if (gg_store_open(strcmp(argv[1], "-") ? argv[1] : NULL, &st, &err) < 0)
		return fail("store", &err);
	struct gg_record_row *rows;
	size_t n, bad;
	if (gg_store_rows(st, &rows, &n, &bad, &err) < 0) {
		gg_store_free(st);
		return fail("store", &err);
	}
	for (size_t i = 0; i < n; i++)
		printf("%-16s %-7s %-9s %s\n", rows[i].name,
		       rows[i].kind == GG_REC_JOB ? "job" : "session",
		       gg_sess_state_name(rows[i].state), rows[i].site);
	printf("%zu records (%zu unreadable) in %s\n", n, bad, gg_store_dir(st));
	gg_record_rows_free(rows, n);
	gg_store_free(st);

	struct gg_freeze_opts fo = {.source = argv[2], .format = GG_IMAGE_DIR, .output = argv[3]};
	struct gg_freeze_result res;
	if (gg_image_freeze(&fo, NULL, &res, &err) < 0)
		return fail("freeze", &err);
	struct gg_sif_verify_report rep;
	if (gg_sif_verify(argv[3], &rep, &err) < 0)
		return fail("verify", &err);
	printf("froze %llu files, %llu directories into %s (%llu bytes, %s): %s\n",
	       (unsigned long long)res.files, (unsigned long long)res.dirs, argv[3],
	       (unsigned long long)res.image_size, res.arch, rep.ok ? "verified" : "NOT verified");
	return rep.ok ? 0 : 1;
}
