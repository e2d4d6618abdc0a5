/* A site's allow_from: the addresses (ADDR or ADDR/BITS, IPv4 or IPv6) a
 * session's sshd admits connections from. Each entry is written into that
 * sshd's configuration, so nothing but an address in its plain form passes:
 * no names, no wildcards, no '!', no blanks, no host bits past the mask (sshd
 * refuses to start on those). */
#include "core/core.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#define ALLOW_FORM "ADDR or ADDR/BITS, e.g. 192.0.2.10, 192.0.2.0/24 or 2001:db8::/32"

/* BITS: decimal, no sign, no leading zero, at most max; -1 when not. */
static int mask_bits(const char *s, int max)
{
	size_t n = strspn(s, "0123456789");
	if (n == 0 || n > 3 || s[n] || (s[0] == '0' && n > 1))
		return -1;
	int v = atoi(s);
	return v <= max ? v : -1;
}

/* The mask of byte i of an address with a /bits prefix. */
static unsigned char mask_byte(size_t i, int bits)
{
	int keep = bits - (int)(i * 8);
	return keep >= 8 ? 0xff : keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
}

/* Are the bits of a (len bytes) past the first bits all zero? */
static int host_bits_clear(const unsigned char *a, size_t len, int bits)
{
	for (size_t i = 0; i < len; i++)
		if (a[i] & (unsigned char)~mask_byte(i, bits))
			return 0;
	return 1;
}

static void clear_host_bits(unsigned char *a, size_t len, int bits)
{
	for (size_t i = 0; i < len; i++)
		a[i] &= mask_byte(i, bits);
}

int gg_addr_range_check(const char *s, struct gg_err *err)
{
	char addr[INET6_ADDRSTRLEN];
	unsigned char bin[16];
	const char *slash = strchr(s, '/');
	size_t alen = slash ? (size_t)(slash - s) : strlen(s);
	if (alen == 0 || alen >= sizeof addr)
		return gg_err_set(err, GG_EUSAGE, "'%s': not an address (" ALLOW_FORM ")", s);
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	int v6 = strchr(addr, ':') != NULL;
	if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, bin) != 1)
		return gg_err_set(err, GG_EUSAGE,
				  "'%s': not an IPv4 or IPv6 address (" ALLOW_FORM ")", s);
	if (v6 && IN6_IS_ADDR_V4MAPPED((struct in6_addr *)bin))
		return gg_err_set(err, GG_EUSAGE,
				  "'%s': an IPv4 address written as IPv6: write it as IPv4 (sshd "
				  "sees IPv4 clients as IPv4)",
				  s);
	int max = v6 ? 128 : 32, bits = slash ? mask_bits(slash + 1, max) : max;
	if (bits < 0)
		return gg_err_set(err, GG_EUSAGE,
				  "'%s': BITS after '/' must be 0 to %d (" ALLOW_FORM ")", s, max);
	if (!host_bits_clear(bin, v6 ? 16 : 4, bits)) {
		clear_host_bits(bin, v6 ? 16 : 4, bits);
		inet_ntop(v6 ? AF_INET6 : AF_INET, bin, addr, sizeof addr);
		return gg_err_set(
			err, GG_EUSAGE,
			"'%s': bits set past the /%d mask, which sshd refuses: did you mean "
			"%s/%d?",
			s, bits, addr, bits);
	}
	return 0;
}

int gg_site_allow_add(struct gg_site *site, const char *list, struct gg_err *err)
{
	size_t len = strlen(list);
	if (len == 0 || list[0] == ',' || list[len - 1] == ',' || strstr(list, ",,"))
		return gg_err_set(
			err, GG_EUSAGE,
			"'%s': an empty entry (addresses separated by one ',', no blanks)", list);
	char *copy = strdup(list), *save = NULL, *add[GG_MAX_ALLOW];
	int rc = copy ? 0 : gg_err_set(err, GG_ENOMEM, "out of memory"), n = 0;
	/* every entry checked before any is added: all or nothing */
	for (char *e = rc ? NULL : strtok_r(copy, ",", &save); e && !rc;
	     e = strtok_r(NULL, ",", &save)) {
		if ((rc = gg_addr_range_check(e, err)) < 0)
			break;
		if (site->nallow + n == GG_MAX_ALLOW)
			rc = gg_err_set(err, GG_EUSAGE, "more than %d allow_from addresses",
					GG_MAX_ALLOW);
		else if (!(add[n++] = strdup(e)))
			rc = gg_err_set(err, GG_ENOMEM, "out of memory");
	}
	free(copy);
	for (int i = 0; i < n; i++) {
		if (rc == 0)
			site->allow_from[site->nallow++] = add[i];
		else
			free(add[i]);
	}
	return rc;
}
