/*
 * test_curlload.c - libcurl loaded with dlopen(3): the next soname tried
 * when one is missing, calls that reach libcurl with each kind of option
 * argument, and the message when no soname loads.  curlload.c is built
 * into this program with a list of sonames the tests set.
 */
#include "test.h"

static const char *soname_a;
static const char *soname_b;
#define CURLLOAD_SONAMES { soname_a, soname_b }
#include "../../webhook/curlload.c"

#define MISSING "libvgpu-webhook-no-such-curl.so.9"

static size_t discard(char *p, size_t size, size_t n, void *data)
{
	(void)p;
	(void)data;
	return size * n;
}

static void reset(const char *a, const char *b)
{
	memset(&api, 0, sizeof(api));
	soname_a = a;
	soname_b = b;
}

static void test_curlload__next_soname_and_calls(void **state)
{
	char err[256] = "";
	CURL *h;
	CURLU *u;
	char *host = NULL;
	long code = -1;
	struct curl_slist *list;

	(void)state;
	reset(MISSING, "libcurl-gnutls.so.4");
	assert_int_equal(curl_load(err, sizeof(err)), 0);
	assert_int_equal(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	h = curl_easy_init();
	assert_non_null(h);
	/* a long, a string, a function, a curl_off_t: each read as its type
	 * (a wrong one is refused or crashes) */
	assert_int_equal(curl_easy_setopt(h, CURLOPT_TIMEOUT, 5L), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_URL, "https://127.0.0.1:1/"),
			 CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard),
			 CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
					  (curl_off_t)1 << 40), CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https"),
			 CURLE_OK);
	assert_int_equal(curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "nope"),
			 CURLE_UNSUPPORTED_PROTOCOL);
	assert_int_equal(curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code),
			 CURLE_OK);
	assert_int_equal(code, 0);
	assert_string_equal(curl_easy_strerror(CURLE_OK), "No error");
	list = curl_slist_append(NULL, "Accept: application/json");
	assert_non_null(list);
	curl_slist_free_all(list);
	u = curl_url();
	assert_non_null(u);
	assert_int_equal(curl_url_set(u, CURLUPART_URL, "https://a.example:8443/x", 0),
			 CURLUE_OK);
	assert_int_equal(curl_url_get(u, CURLUPART_HOST, &host, 0), CURLUE_OK);
	assert_string_equal(host, "a.example");
	curl_free(host);
	curl_url_cleanup(u);
	curl_easy_reset(h);
	curl_easy_cleanup(h);
	curl_global_cleanup();
}

static void test_curlload__none_loads(void **state)
{
	char err[256] = "";
	char again[256] = "";

	(void)state;
	reset(MISSING, MISSING);
	assert_int_equal(curl_load(err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot load libcurl ("));
	assert_non_null(strstr(err, MISSING));
	assert_non_null(strstr(err, "): install libcurl3-gnutls"));
	/* tried once: the same answer after */
	assert_int_equal(curl_load(again, sizeof(again)), -1);
	assert_string_equal(again, err);
	/* every function fails as libcurl does when it cannot work */
	assert_int_equal(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_FAILED_INIT);
	assert_null(curl_easy_init());
	assert_int_equal(curl_easy_setopt(NULL, CURLOPT_TIMEOUT, 5L),
			 CURLE_FAILED_INIT);
	assert_int_equal(curl_easy_perform(NULL), CURLE_FAILED_INIT);
	assert_null(curl_slist_append(NULL, "x"));
	assert_null(curl_url());
	curl_global_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_curlload__next_soname_and_calls),
		cmocka_unit_test(test_curlload__none_loads),
	};

	return cmocka_run_group_tests_name("curlload", tests, NULL, NULL);
}
