/*
 * names.c - Kubernetes name validation: DNS-1123 subdomains, qualified
 * names, label values and extended resource names.
 *
 * The rules are those of k8s.io/apimachinery/pkg/util/validation
 * (IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue) and of
 * IsExtendedResourceName in Kubernetes' core v1 helpers.  Only ASCII letters
 * and digits count as alphanumeric, as in Kubernetes' regular expressions;
 * any other byte, NUL included, makes a name invalid.
 */
#include <string.h>

#include "internal.h"
#include "vgpu.h"

#define DNS1123_SUBDOMAIN_MAX 253
#define QUALIFIED_NAME_MAX 63

/* The namespace of Kubernetes' own resources, and the quota prefix. */
#define NATIVE_NAMESPACE "kubernetes.io/"
#define REQUESTS_PREFIX "requests."

#define CONST_LEN(s) (sizeof(s) - 1)

/*
 * True for the name part of a qualified name, which is also the grammar of
 * a non-empty label value: 1 to 63 characters of [-A-Za-z0-9_.] that start
 * and end with [A-Za-z0-9].
 */
static bool name_part_valid(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > QUALIFIED_NAME_MAX)
		return false;
	if (!vgpu__is_alnum(s[0]) || !vgpu__is_alnum(s[len - 1]))
		return false;
	for (i = 1; i + 1 < len; i++)
		if (!vgpu__is_alnum(s[i]) && s[i] != '-' && s[i] != '_' &&
		    s[i] != '.')
			return false;
	return true;
}

/*
 * True when s[0..len) contains needle[0..nlen), nlen > 0.  The needles here
 * are short constants, so the naive search is linear in len.
 */
static bool contains(const char *s, size_t len, const char *needle,
		     size_t nlen)
{
	size_t i;

	for (i = 0; i + nlen <= len; i++)
		if (s[i] == needle[0] && memcmp(s + i, needle, nlen) == 0)
			return true;
	return false;
}

/*
 * Labels separated by single dots; each label is [a-z0-9] or
 * [a-z0-9][-a-z0-9]*[a-z0-9].  As in Kubernetes, a label is not limited to
 * 63 characters here; only the whole name is, to 253.
 */
bool vgpu_dns_subdomain_validn(const char *s, size_t len)
{
	size_t i = 0, start;

	VGPU__ASSERT(s != NULL || len == 0);
	if (len == 0 || len > DNS1123_SUBDOMAIN_MAX)
		return false;
	for (;;) {
		start = i;
		while (i < len && s[i] != '.') {
			if (!vgpu__is_lower_alnum(s[i]) && s[i] != '-')
				return false;
			i++;
		}
		if (i == start || s[start] == '-' || s[i - 1] == '-')
			return false;
		if (i == len)
			return true;
		i++; /* the dot; a trailing one leaves an empty label */
	}
}

/*
 * [prefix "/"] name: the prefix, when there is a slash, a non-empty DNS-1123
 * subdomain; the name as name_part_valid() says, which also refuses a
 * second slash.
 */
bool vgpu_qualified_name_validn(const char *s, size_t len)
{
	const char *slash;
	size_t plen;

	VGPU__ASSERT(s != NULL || len == 0);
	slash = len != 0 ? memchr(s, '/', len) : NULL;
	if (slash == NULL)
		return name_part_valid(s, len);
	plen = (size_t)(slash - s);
	return vgpu_dns_subdomain_validn(s, plen) &&
	       name_part_valid(slash + 1, len - plen - 1);
}

/* Empty, or the grammar of a name part (whose limit, 63, is also the
 * label value's). */
bool vgpu_label_value_validn(const char *s, size_t len)
{
	VGPU__ASSERT(s != NULL || len == 0);
	return len == 0 || name_part_valid(s, len);
}

/*
 * As Kubernetes' IsExtendedResourceName: the name has a slash (a name
 * without one is implicitly in kubernetes.io), does not contain
 * "kubernetes.io/", does not start with "requests.", and "requests." + name
 * is a qualified name.  That last test is done on the very text Kubernetes
 * builds; a name too long to fit the buffer is too long to be qualified.
 */
bool vgpu_resource_name_validn(const char *s, size_t len)
{
	char quota[CONST_LEN(REQUESTS_PREFIX) + DNS1123_SUBDOMAIN_MAX + 1 +
		   QUALIFIED_NAME_MAX];

	VGPU__ASSERT(s != NULL || len == 0);
	if (len == 0 || memchr(s, '/', len) == NULL)
		return false;
	if (contains(s, len, NATIVE_NAMESPACE, CONST_LEN(NATIVE_NAMESPACE)))
		return false;
	if (len >= CONST_LEN(REQUESTS_PREFIX) &&
	    memcmp(s, REQUESTS_PREFIX, CONST_LEN(REQUESTS_PREFIX)) == 0)
		return false;
	if (len > sizeof(quota) - CONST_LEN(REQUESTS_PREFIX))
		return false;
	memcpy(quota, REQUESTS_PREFIX, CONST_LEN(REQUESTS_PREFIX));
	memcpy(quota + CONST_LEN(REQUESTS_PREFIX), s, len);
	return vgpu_qualified_name_validn(quota,
					  CONST_LEN(REQUESTS_PREFIX) + len);
}
