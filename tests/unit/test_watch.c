/*
 * test_watch.c - the one watcher of the files `serve` follows: a change
 * loaded once stable, the same bytes ignored, refused bytes reported once,
 * a retry time, unreadable files, and the values kept alive while held,
 * also by threads that hold and give back while the poller swaps.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#include "watch.h"

/* A value made by load(): the bytes it was made from. */
struct value {
	struct watch_value head;
	char text[64];
	atomic_int dead;         /* destroyed (keep_dead) */
	struct value *next_dead;
};

static int destroyed;   /* values freed */
static int loads;       /* calls of load() */
static int64_t retry;   /* what load() gives as retry_at when it refuses */

/* With keep_dead, a destroyed value is only marked, and kept in the
 * graveyard, so that a holder that reads it after its end sees the mark. */
static bool keep_dead;
static struct value *graveyard;

static void value_free(struct watch_value *v)
{
	struct value *x = (struct value *)v;

	destroyed++;
	if (!keep_dead) {
		free(v);
		return;
	}
	atomic_store(&x->dead, 1);
	x->next_dead = graveyard;
	graveyard = x;
}

/* Refuses files that start with "bad"; concatenates the others. */
static struct watch_value *load(void *arg, const struct watch_bytes *files,
				const char *sha256, char *err, size_t errlen,
				int64_t *retry_at)
{
	size_t n = *(size_t *)arg, i;
	struct value *v;

	(void)sha256;
	loads++;
	for (i = 0; i < n; i++) {
		if (!strncmp(files[i].data, "bad", 3)) {
			snprintf(err, errlen, "file %zu is bad", i);
			*retry_at = retry;
			return NULL;
		}
	}
	v = calloc(1, sizeof(*v));
	assert_non_null(v);
	v->head.destroy = value_free;
	for (i = 0; i < n; i++)
		strncat(v->text, files[i].data,
			sizeof(v->text) - strlen(v->text) - 1);
	return &v->head;
}

static char paths[2][64];

/* Replaces the file i with text, as a new inode (rename). */
static void put(int i, const char *text)
{
	char tmp[80];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", paths[i]);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(rename(tmp, paths[i]), 0);
}

static const char *text_of(struct watch_value *v)
{
	return ((struct value *)v)->text;
}

/* A fresh watch over n files holding the texts given. */
static void start(struct watch *w, size_t *n, const char *a, const char *b)
{
	const char *p[2] = { paths[0], paths[1] };
	char err[256];

	snprintf(paths[0], sizeof(paths[0]), "/tmp/vgpu-test-watch-%d-a",
		 (int)getpid());
	snprintf(paths[1], sizeof(paths[1]), "/tmp/vgpu-test-watch-%d-b",
		 (int)getpid());
	put(0, a);
	if (b)
		put(1, b);
	*n = b ? 2 : 1;
	destroyed = loads = 0;
	retry = 0;
	watch_init(w, p, *n, 1 << 20, load, n);
	assert_int_equal(watch_start(w, 3, err, sizeof(err)), 0);
}

static void finish(struct watch *w)
{
	watch_release(w);
	unlink(paths[0]);
	unlink(paths[1]);
}

/* A change is loaded at the second look that sees it unchanged. */
static void test_watch__change_loaded_once_stable(void **state)
{
	struct watch w;
	size_t n;
	char err[256];

	(void)state;
	start(&w, &n, "one", NULL);
	assert_string_equal(text_of(watch_current(&w)), "one");
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)), WATCH_SAME);
	put(0, "two");
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)),
			 WATCH_LOADED);
	assert_string_equal(text_of(watch_current(&w)), "two");
	/* now (SIGHUP) reads at once */
	put(0, "three");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)), WATCH_LOADED);
	assert_string_equal(text_of(watch_current(&w)), "three");
	assert_int_equal(destroyed, 2);
	finish(&w);
	assert_int_equal(destroyed, 3);
}

/* The same bytes again (a touch, a copy) load nothing. */
static void test_watch__same_bytes(void **state)
{
	struct watch w;
	size_t n;
	char err[256];

	(void)state;
	start(&w, &n, "cert", "key");
	put(1, "key");
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(loads, 1);
	/* bytes moved from one file to the other are new bytes */
	put(0, "cer");
	put(1, "tkey");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)), WATCH_LOADED);
	assert_string_equal(text_of(watch_current(&w)), "certkey");
	finish(&w);
}

/*
 * Refused bytes: reported once, the old value stays; the same bytes again
 * count nothing, even read at once; the bytes in force again forget them.
 */
static void test_watch__refused_once(void **state)
{
	struct watch w;
	size_t n;
	char err[256];

	(void)state;
	start(&w, &n, "good", NULL);
	put(0, "bad one");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)),
			 WATCH_REFUSED);
	assert_string_equal(err, "file 0 is bad");
	assert_string_equal(text_of(watch_current(&w)), "good");
	put(0, "bad one");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(loads, 2);
	put(0, "good");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)), WATCH_SAME);
	put(0, "bad one");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)),
			 WATCH_REFUSED);
	put(0, "bad two");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)),
			 WATCH_REFUSED);
	finish(&w);
}

/* Refused bytes with a retry time are tried again from then on. */
static void test_watch__retry_at(void **state)
{
	struct watch w;
	size_t n;
	char err[256];

	(void)state;
	start(&w, &n, "good", NULL);
	retry = (int64_t)time(NULL) + 3600;
	put(0, "bad later");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)),
			 WATCH_REFUSED);
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(loads, 2);
	w.retry_at = (int64_t)time(NULL); /* the time has come */
	retry = 0;
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)),
			 WATCH_REFUSED);
	assert_int_equal(loads, 3);
	/* no retry time: never again */
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(loads, 3);
	finish(&w);
}

/* A file that cannot be read: refused once per errno, not loaded. */
static void test_watch__unreadable(void **state)
{
	struct watch w;
	size_t n;
	char err[256];

	(void)state;
	start(&w, &n, "cert", "key");
	assert_int_equal(unlink(paths[1]), 0);
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)),
			 WATCH_REFUSED);
	assert_non_null(strstr(err, paths[1]));
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(loads, 1);
	put(1, "key2");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)), WATCH_LOADED);
	assert_string_equal(text_of(watch_current(&w)), "certkey2");
	finish(&w);
}

/*
 * A held value stays alive, and so does every value after it; the poller
 * frees them, oldest first, once they are given back.
 */
static void test_watch__held_values_live(void **state)
{
	struct watch_value *a, *b;
	struct watch w;
	size_t n;
	char err[256];

	(void)state;
	start(&w, &n, "a", NULL);
	a = watch_hold(&w);
	put(0, "b");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)), WATCH_LOADED);
	b = watch_hold(&w);
	watch_unhold(b); /* b is held by nobody, but a is older */
	put(0, "c");
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)), WATCH_LOADED);
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(destroyed, 0);
	assert_string_equal(text_of(a), "a");
	assert_string_equal(text_of(b), "b");
	watch_unhold(a);
	assert_int_equal(destroyed, 0); /* the poller frees, not the holder */
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(destroyed, 2);
	assert_string_equal(text_of(watch_current(&w)), "c");
	finish(&w);
	assert_int_equal(destroyed, 3);
}

/* Without files: a value that never changes. */
static void test_watch__no_files(void **state)
{
	struct value *v = calloc(1, sizeof(*v));
	struct watch w;
	char err[64];

	(void)state;
	assert_non_null(v);
	v->head.destroy = value_free;
	destroyed = 0;
	watch_init(&w, NULL, 0, 0, load, NULL);
	watch_start_with(&w, &v->head, NULL);
	assert_ptr_equal(watch_hold(&w), &v->head);
	watch_unhold(&v->head);
	assert_int_equal(watch_poll(&w, true, err, sizeof(err)), WATCH_SAME);
	watch_release(&w);
	assert_int_equal(destroyed, 1);
}

static atomic_bool holders_stop;
static atomic_long held_dead; /* a held value seen destroyed */
static atomic_long holds;

/* A holder thread: holds the value in force, reads it, gives it back. */
static void *holder(void *arg)
{
	struct watch *w = arg;

	while (!atomic_load(&holders_stop)) {
		struct watch_value *v = watch_hold(w);
		struct value *x = (struct value *)v;
		int i;

		for (i = 0; i < 50; i++)
			if (atomic_load(&x->dead) || x->text[0] != 'v')
				atomic_fetch_add(&held_dead, 1);
		watch_unhold(v);
		atomic_fetch_add(&holds, 1);
	}
	return NULL;
}

/*
 * Four threads hold and give back the value in force while the poller
 * swaps in 100 new ones and frees the old: no holder ever sees a value
 * destroyed while it holds it, and every value is destroyed in the end.
 */
static void test_watch__hold_during_swaps(void **state)
{
	enum { THREADS = 4, SWAPS = 100 };
	pthread_t t[THREADS];
	struct watch w;
	size_t n;
	char err[256], text[32];
	int i;

	(void)state;
	start(&w, &n, "v0", NULL);
	keep_dead = true;
	graveyard = NULL;
	atomic_store(&holders_stop, false);
	atomic_store(&held_dead, 0);
	atomic_store(&holds, 0);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, holder, &w), 0);
	for (i = 1; i <= SWAPS; i++) {
		snprintf(text, sizeof(text), "v%d", i);
		put(0, text);
		assert_int_equal(watch_poll(&w, true, err, sizeof(err)),
				 WATCH_LOADED);
	}
	atomic_store(&holders_stop, true);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(atomic_load(&held_dead), 0);
	assert_true(atomic_load(&holds) > SWAPS);
	assert_int_equal(watch_poll(&w, false, err, sizeof(err)), WATCH_SAME);
	assert_int_equal(destroyed, SWAPS);
	finish(&w);
	assert_int_equal(destroyed, SWAPS + 1);
	keep_dead = false;
	while (graveyard) {
		struct value *x = graveyard;

		graveyard = x->next_dead;
		free(x);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watch__change_loaded_once_stable),
		cmocka_unit_test(test_watch__same_bytes),
		cmocka_unit_test(test_watch__refused_once),
		cmocka_unit_test(test_watch__retry_at),
		cmocka_unit_test(test_watch__unreadable),
		cmocka_unit_test(test_watch__held_values_live),
		cmocka_unit_test(test_watch__no_files),
		cmocka_unit_test(test_watch__hold_during_swaps),
	};

	return cmocka_run_group_tests_name("watch", tests, NULL, NULL);
}
