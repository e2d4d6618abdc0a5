/* The versions of the libraries libgridgpu runs with, for --version and bug
 * reports: as the libraries report them at run time where they can. */
#include <archive.h>
#include <curl/curl.h>
#include <jansson.h>
#include <libdeflate.h>
#include <libssh2.h>
#include <openssl/crypto.h>

#include <string.h>

#include "store/store.h"

/* "libarchive 3.6.2" -> "3.6.2" */
static const char *archive_version(void)
{
	const char *v = archive_version_string();
	return strncmp(v, "libarchive ", 11) == 0 ? v + 11 : v;
}

size_t gg_library_versions(struct gg_libversion *out, size_t max)
{
	const struct gg_libversion all[] = {
		{"OpenSSL", OpenSSL_version(OPENSSL_VERSION_STRING)},
		{"libcurl", curl_version_info(CURLVERSION_NOW)->version},
		{"jansson", jansson_version_str()},
		{"libarchive", archive_version()},
		{"libssh2", libssh2_version(0)},
		{"libdeflate", LIBDEFLATE_VERSION_STRING " (built with)"},
		{"libsquashfs", "linked (it reports no version)"},
		{"inih", "linked (it reports no version)"},
	};
	size_t n = sizeof all / sizeof all[0];
	for (size_t i = 0; i < n && i < max; i++)
		out[i] = all[i];
	return n < max ? n : max;
}
