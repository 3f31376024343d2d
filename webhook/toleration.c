/*
 * toleration.c - validating and comparing tolerations (toleration.h).
 */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "jsonout.h"
#include "text.h"
#include "toleration.h"
#include "vgpu.h"

/* The members of a toleration, in the order toleration_copy() keeps. */
enum member {
	MEMBER_KEY,
	MEMBER_OPERATOR,
	MEMBER_VALUE,
	MEMBER_EFFECT,
	MEMBER_SECONDS,
	NMEMBERS
};

static const char *const members[NMEMBERS] = {
	"key", "operator", "value", "effect", "tolerationSeconds"
};

static const char *const operators[] = { "", "Equal", "Exists" };
static const char *const effects[] = { "", "NoSchedule", "PreferNoSchedule",
				       "NoExecute" };

/* v, a string, is one of choices[0..n); else -1 with the list in err. */
static int check_choice(const char *path, const json_t *v,
			const char *const *choices, size_t n, char *err,
			size_t errlen)
{
	struct buf list = BUF_INIT;
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(json_string_value(v), choices[i]))
			return 0;
	for (i = 0; i < n; i++)
		buf_addf(&list, "%s\"%s\"", i ? ", " : "", choices[i]);
	text_errorf(err, errlen, "%s: \"%.64s\" is not one of %s", path,
		    json_string_value(v), buf_str(&list));
	buf_release(&list);
	return -1;
}

int toleration_check(const json_t *v, const char *path, char *err,
		     size_t errlen)
{
	const char *text[NMEMBERS - 1] = { "", "", "", "" };
	const json_t *seconds = NULL, *item;
	const char *k;
	char sub[256];
	size_t i;

	if (!json_is_object(v))
		return text_errorf(err, errlen,
				   "%s: expected an object, got %s", path,
				   jsonout_type_name(v));
	json_object_foreach((json_t *)v, k, item) {
		for (i = 0; i < NMEMBERS && strcmp(k, members[i]); i++)
			;
		if (i == NMEMBERS)
			return text_errorf(err, errlen,
					   "unknown key \"%s%s%.64s\"", path,
					   path[0] ? "." : "", k);
		if (json_is_null(item))
			continue; /* null is absent, as Kubernetes reads it */
		snprintf(sub, sizeof(sub), "%s.%.64s", path, k);
		if (i == MEMBER_SECONDS) {
			if (!json_is_integer(item))
				return text_errorf(err, errlen,
						   "%s: expected an integer, got %s",
						   sub,
						   jsonout_type_name(item));
			seconds = item;
			continue;
		}
		if (!json_is_string(item))
			return text_errorf(err, errlen,
					   "%s: expected a string, got %s", sub,
					   jsonout_type_name(item));
		if (i == MEMBER_OPERATOR &&
		    check_choice(sub, item, operators, 3, err, errlen))
			return -1;
		if (i == MEMBER_EFFECT &&
		    check_choice(sub, item, effects, 4, err, errlen))
			return -1;
		text[i] = json_string_value(item);
	}
	if (text[MEMBER_KEY][0] &&
	    !vgpu_qualified_name_validn(text[MEMBER_KEY],
					strlen(text[MEMBER_KEY])))
		return text_errorf(err, errlen,
				   "%s.key: \"%.64s\" is not a qualified name",
				   path, text[MEMBER_KEY]);
	if (!text[MEMBER_KEY][0] && strcmp(text[MEMBER_OPERATOR], "Exists"))
		return text_errorf(err, errlen,
				   "%s.operator: must be \"Exists\" when key is empty",
				   path);
	if (!strcmp(text[MEMBER_OPERATOR], "Exists") && text[MEMBER_VALUE][0])
		return text_errorf(err, errlen,
				   "%s.value: must be empty when operator is \"Exists\"",
				   path);
	if (strcmp(text[MEMBER_OPERATOR], "Exists") &&
	    !vgpu_label_value_validn(text[MEMBER_VALUE],
				     strlen(text[MEMBER_VALUE])))
		return text_errorf(err, errlen,
				   "%s.value: \"%.64s\" is not a valid label value",
				   path, text[MEMBER_VALUE]);
	if (seconds && strcmp(text[MEMBER_EFFECT], "NoExecute"))
		return text_errorf(err, errlen,
				   "%s.effect: must be \"NoExecute\" when tolerationSeconds is set",
				   path);
	return 0;
}

json_t *toleration_copy(const json_t *v)
{
	json_t *copy = json_object();
	size_t i;

	for (i = 0; copy && i < NMEMBERS; i++) {
		json_t *item = json_object_get(v, members[i]);

		if (item && !json_is_null(item) &&
		    json_object_set(copy, members[i], item)) {
			json_decref(copy);
			copy = NULL;
		}
	}
	return copy;
}

static bool same_member(const json_t *a, const json_t *b, const char *key)
{
	const char *x = json_string_value(json_object_get(a, key));
	const char *y = json_string_value(json_object_get(b, key));

	return !strcmp(x ? x : "", y ? y : "");
}

bool toleration_equal(const json_t *a, const json_t *b)
{
	return same_member(a, b, "key") && same_member(a, b, "operator") &&
	       same_member(a, b, "value") && same_member(a, b, "effect");
}

bool toleration_listed(const json_t *list, const json_t *t)
{
	size_t i;
	json_t *o;

	json_array_foreach(list, i, o)
		if (toleration_equal(o, t))
			return true;
	return false;
}
