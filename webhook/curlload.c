/*
 * curlload.c - libcurl, loaded with dlopen(3) when a command needs it
 * (see curlload.h).  Each function below has libcurl's name and
 * prototype and calls libcurl's own through a pointer that curl_load()
 * found; before curl_load() succeeds each fails as libcurl does when it
 * cannot work (NULL, CURLE_FAILED_INIT).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>

#include <curl/curl.h>

#include "curlload.h"

/* The type-checking macros of <curl/typecheck-gcc.h> would take these
 * definitions for calls. */
#undef curl_easy_setopt
#undef curl_easy_getinfo

/* One X-macro: each function's name, return type and parameters. */
#define CURL_FUNCS(X)                                                        \
	X(curl_global_init, CURLcode, (long flags))                          \
	X(curl_global_cleanup, void, (void))                                 \
	X(curl_easy_init, CURL *, (void))                                    \
	X(curl_easy_cleanup, void, (CURL *h))                                \
	X(curl_easy_reset, void, (CURL *h))                                  \
	X(curl_easy_perform, CURLcode, (CURL *h))                            \
	X(curl_easy_setopt, CURLcode, (CURL *h, CURLoption opt, ...))        \
	X(curl_easy_getinfo, CURLcode, (CURL *h, CURLINFO info, ...))        \
	X(curl_easy_strerror, const char *, (CURLcode code))                 \
	X(curl_free, void, (void *p))                                        \
	X(curl_slist_append, struct curl_slist *,                            \
	  (struct curl_slist *list, const char *s))                          \
	X(curl_slist_free_all, void, (struct curl_slist *list))              \
	X(curl_url, CURLU *, (void))                                         \
	X(curl_url_cleanup, void, (CURLU *u))                                \
	X(curl_url_get, CURLUcode,                                           \
	  (CURLU *u, CURLUPart part, char **out, unsigned int flags))        \
	X(curl_url_set, CURLUcode,                                           \
	  (CURLU *u, CURLUPart part, const char *s, unsigned int flags))

static struct {
	int state; /* 0 not tried, 1 loaded, -1 failed */
	char why[256];
#define X(name, ret, params) ret(*name) params;
	CURL_FUNCS(X)
#undef X
} api;

int curl_load(char *err, size_t errlen)
{
	const char *const sonames[] = CURLLOAD_SONAMES;
	void *lib = NULL;
	const char *soname = NULL, *why;
	char first[160] = "";
	size_t i;

	if (api.state == 0) {
		for (i = 0; i < sizeof(sonames) / sizeof(sonames[0]) && !lib; i++) {
			soname = sonames[i];
			lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
			/* dlerror()'s text lasts until the next call: copied */
			if (!lib && !first[0] && (why = dlerror()))
				snprintf(first, sizeof(first), "%s", why);
		}
		if (!lib) {
			snprintf(api.why, sizeof(api.why),
				 "cannot load libcurl (%s): install libcurl3-gnutls",
				 first[0] ? first : "not found");
			api.state = -1;
		}
#define X(name, ret, params)                                                 \
	if (api.state == 0 && !(*(void **)&api.name = dlsym(lib, #name))) {  \
		snprintf(api.why, sizeof(api.why),                           \
			 "\"%s\" has no function \"%s\"", soname, #name);    \
		api.state = -1;                                              \
	}
		CURL_FUNCS(X)
#undef X
		if (api.state == 0)
			api.state = 1;
	}
	if (api.state < 0) {
		snprintf(err, errlen, "%s", api.why);
		return -1;
	}
	return 0;
}

CURLcode curl_global_init(long flags)
{
	return api.state > 0 ? api.curl_global_init(flags) : CURLE_FAILED_INIT;
}

void curl_global_cleanup(void)
{
	if (api.state > 0)
		api.curl_global_cleanup();
}

CURL *curl_easy_init(void)
{
	return api.state > 0 ? api.curl_easy_init() : NULL;
}

void curl_easy_cleanup(CURL *h)
{
	if (api.state > 0)
		api.curl_easy_cleanup(h);
}

void curl_easy_reset(CURL *h)
{
	if (api.state > 0)
		api.curl_easy_reset(h);
}

CURLcode curl_easy_perform(CURL *h)
{
	return api.state > 0 ? api.curl_easy_perform(h) : CURLE_FAILED_INIT;
}

/*
 * The one argument after the option is read by the option's type, as
 * libcurl reads it: a long, an object (or string, list, callback data), a
 * function, a curl_off_t, or a blob.
 */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	va_list ap;
	CURLcode rc;

	if (api.state <= 0)
		return CURLE_FAILED_INIT;
	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT)
		rc = api.curl_easy_setopt(h, opt, va_arg(ap, long));
	else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
		rc = api.curl_easy_setopt(h, opt, va_arg(ap, void *));
	else if (opt < CURLOPTTYPE_OFF_T)
		rc = api.curl_easy_setopt(h, opt, va_arg(ap, void (*)(void)));
	else if (opt < CURLOPTTYPE_BLOB)
		rc = api.curl_easy_setopt(h, opt, va_arg(ap, curl_off_t));
	else
		rc = api.curl_easy_setopt(h, opt, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* Every CURLINFO takes a pointer to where the value goes. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	va_list ap;
	CURLcode rc;

	if (api.state <= 0)
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	rc = api.curl_easy_getinfo(h, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

const char *curl_easy_strerror(CURLcode code)
{
	return api.state > 0 ? api.curl_easy_strerror(code) : "libcurl not loaded";
}

void curl_free(void *p)
{
	if (api.state > 0)
		api.curl_free(p);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
	return api.state > 0 ? api.curl_slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
	if (api.state > 0)
		api.curl_slist_free_all(list);
}

CURLU *curl_url(void)
{
	return api.state > 0 ? api.curl_url() : NULL;
}

void curl_url_cleanup(CURLU *u)
{
	if (api.state > 0)
		api.curl_url_cleanup(u);
}

/* libcurl 7.88 (Debian 12) takes a CURLU that is not const; later ones a
 * const one: a build against those fails here, not quietly. */
CURLUcode curl_url_get(CURLU *u, CURLUPart part, char **out,
		       unsigned int flags)
{
	return api.state > 0 ? api.curl_url_get(u, part, out, flags)
			     : CURLUE_OUT_OF_MEMORY;
}

CURLUcode curl_url_set(CURLU *u, CURLUPart part, const char *s,
		       unsigned int flags)
{
	return api.state > 0 ? api.curl_url_set(u, part, s, flags)
			     : CURLUE_OUT_OF_MEMORY;
}
