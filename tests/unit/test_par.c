/* Unit tests of lib/core/par.c: work on several items at once, given back in
 * the order it ends. */
#include "unit.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "core/par.h"

/* Item i may end only once the caller has been given item i + 1 back: the
 * only order they can end in is last to first, and a gg_par_next that waited
 * for them in another order would see them time out instead. */
#define N 4
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int given[N + 1];

struct item {
	int i, timed_out;
	pthread_t th;
};

static void chained(void *ud)
{
	struct item *it = ud;
	it->th = pthread_self();
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 10;
	pthread_mutex_lock(&mu);
	while (it->i + 1 < N && !given[it->i + 1] && !it->timed_out)
		it->timed_out = pthread_cond_timedwait(&cv, &mu, &end) != 0;
	pthread_mutex_unlock(&mu);
}

static void test_par_order(void **state)
{
	(void)state;
	struct item items[N];
	memset(items, 0, sizeof items);
	memset(given, 0, sizeof given);
	for (int i = 0; i < N; i++)
		items[i].i = i;
	struct gg_par *p = gg_par_start(items, N, sizeof *items, chained);
	assert_non_null(p);
	for (int want = N - 1; want >= 0; want--) {
		struct item *it = gg_par_next(p);
		assert_non_null(it);
		assert_int_equal(it->i, want);
		assert_false(it->timed_out);
		assert_false(pthread_equal(it->th, pthread_self())); /* a thread of its own */
		pthread_mutex_lock(&mu);
		given[it->i] = 1;
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	assert_null(gg_par_next(p)); /* all given back */
	gg_par_free(p);
}

static void mark(void *ud)
{
	struct item *it = ud;
	it->th = pthread_self();
	it->i++;
}

/* One item runs in the caller's thread, before gg_par_start returns; none:
 * nothing to give back. gg_par_free waits for what was not taken back. */
static void test_par_one_none_free(void **state)
{
	(void)state;
	struct item one = {0};
	struct gg_par *p = gg_par_start(&one, 1, sizeof one, mark);
	assert_non_null(p);
	assert_int_equal(one.i, 1);
	assert_true(pthread_equal(one.th, pthread_self()));
	assert_ptr_equal(gg_par_next(p), &one);
	assert_null(gg_par_next(p));
	gg_par_free(p);
	p = gg_par_start(NULL, 0, sizeof one, mark);
	assert_non_null(p);
	assert_null(gg_par_next(p));
	gg_par_free(p);
	struct item three[3] = {{0}};
	p = gg_par_start(three, 3, sizeof *three, mark);
	gg_par_free(p); /* none taken back: each run still ends, once */
	for (int i = 0; i < 3; i++)
		assert_int_equal(three[i].i, 1);
	gg_par_free(NULL);
}

static void test_mono_ms(void **state)
{
	(void)state;
	int64_t a = gg_mono_ms();
	double b = gg_mono_msf();
	int64_t c = gg_mono_ms();
	assert_true(a <= c);
	assert_true((double)a <= b + 1 && b <= (double)c + 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_par_order),
		cmocka_unit_test(test_par_one_none_free),
		cmocka_unit_test(test_mono_ms),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
