/*
 * util/cleanup.c: folders a run is building, removed when the run is
 * interrupted, and the ones an earlier run could not remove.
 *
 * A report is built in "<target>.tmp-<pid>-XXXXXX" beside its target and
 * renamed into place at the end. SIGINT, SIGTERM and SIGHUP are taken by
 * a thread of their own (qr_cleanup_start blocks them in every thread and
 * sigwait()s for them), which removes the registered folders with
 * ordinary code, not inside a signal handler, and then lets the signal
 * end the process as it would have. A SIGKILL leaves its folder behind;
 * the next run beside the same target removes every such folder whose
 * owner process is gone (qr_tmpdir_make).
 */
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char **paths;    /* registered folders (heap strings) */
static size_t n_paths;  /* entries in paths */

static void
block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
}

/*
 * Remove a folder other threads may still be writing into (charts are
 * drawn on the other cores): renamed first, so that no file opened by its
 * old path lands in it from then on, then removed until it is gone (a
 * file opened just before the rename may still appear once).
 */
static void
remove_now(const char *path)
{
	char *trash = xasprintf("%s-gone", path);
	const char *p = rename(path, trash) == 0 ? trash : path;
	struct timespec ts = {0, 5000000}; /* 5 ms */
	struct stat sb;
	int k;

	for (k = 0; k < 100 && lstat(p, &sb) == 0; k++) {
		if (qr_remove_tree(p) == 0 && lstat(p, &sb) != 0)
			break;
		nanosleep(&ts, NULL);
	}
	free(trash);
}

void
qr_cleanup_now(void)
{
	size_t i;

	/* a try: the thread that ran out of memory may hold the lock */
	if (pthread_mutex_trylock(&lock) != 0)
		return;
	for (i = 0; i < n_paths; i++)
		remove_now(paths[i]);
	n_paths = 0;
	/* kept locked: nobody registers any more */
}

static void *
signal_thread(void *arg)
{
	sigset_t set;
	int sig;

	(void)arg;
	block_signals(&set);
	if (sigwait(&set, &sig) != 0)
		return NULL;
	qr_cleanup_now();
	signal(sig, SIG_DFL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig); /* not reached */
}

void
qr_cleanup_start(void)
{
	pthread_t t;
	sigset_t set;

	block_signals(&set);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return;
	if (pthread_create(&t, NULL, signal_thread, NULL) != 0) {
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		return;
	}
	pthread_detach(t);
}

void
qr_cleanup_add(const char *path)
{
	pthread_mutex_lock(&lock);
	paths = xreallocarray(paths, n_paths + 1, sizeof *paths);
	paths[n_paths++] = xstrdup(path);
	pthread_mutex_unlock(&lock);
}

void
qr_cleanup_del(const char *path)
{
	size_t i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < n_paths; i++)
		if (strcmp(paths[i], path) == 0) {
			free(paths[i]);
			paths[i] = paths[--n_paths];
			break;
		}
	if (n_paths == 0) {
		free(paths);
		paths = NULL;
	}
	pthread_mutex_unlock(&lock);
}

/* Remove the "<base>.tmp-<pid>-*" folders in dir whose process is gone. */
static void
sweep(const char *dir, const char *base)
{
	size_t n = strlen(base);
	struct dirent *de;
	DIR *dp = opendir(dir);

	while (dp != NULL && (de = readdir(dp)) != NULL) {
		const char *p = de->d_name;
		char *end, *path;
		struct stat sb;
		long pid;

		if (strncmp(p, base, n) != 0 || strncmp(p + n, ".tmp-", 5) != 0)
			continue;
		errno = 0;
		pid = strtol(p + n + 5, &end, 10);
		if (errno != 0 || end == p + n + 5 || *end != '-' || pid <= 0 ||
		    pid == (long)getpid() ||
		    (kill((pid_t)pid, 0) != 0 ? errno != ESRCH : 1))
			continue; /* alive, or not ours to judge */
		path = qr_path_join(dir, p);
		if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
			qr_remove_tree(path);
		free(path);
	}
	if (dp != NULL)
		closedir(dp);
}

enum qr_status
qr_tmpdir_make(const char *target, char **out, struct qr_diag *d)
{
	char *dir = qr_path_dirname(target), *tmp;

	*out = NULL;
	sweep(dir, qr_path_basename(target));
	free(dir);
	tmp = xasprintf("%s.tmp-%ld-XXXXXX", target, (long)getpid());
	pthread_mutex_lock(&lock); /* no interruption between the two */
	if (mkdtemp(tmp) == NULL) {
		pthread_mutex_unlock(&lock);
		free(tmp);
		return qr_errorf(d, QR_EIO, "cannot create a folder beside "
				 "'%s': %s", target, strerror(errno));
	}
	paths = xreallocarray(paths, n_paths + 1, sizeof *paths);
	paths[n_paths++] = xstrdup(tmp);
	pthread_mutex_unlock(&lock);
	*out = tmp;
	return QR_OK;
}
