// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* debuginfod.c - debug files from debuginfod servers, cached; see debuginfod.h. */
#include "sym/debuginfod.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/curllib.h"
#include "base/htab.h"
#include "base/util.h"
#include "proc/elffile.h"
#include "proc/elfnote.h"
#include "proc/safewrite.h"
#include "sym/debuginfo.h"

/* Header bytes of one answer, at most (a server sending headers forever). */
#define HEADERS_MAX (64u << 10)
/* Temporary files this old are a crashed run's: removed when the cache is trimmed. */
#define TMP_STALE_S (24 * 3600)
/* Cache entries looked at when trimming, at most. */
#define TRIM_MAX_FILES 100000

enum id_state { ID_QUEUED = 1, ID_DONE, ID_FAILED };

struct id_entry {
	enum id_state state;
	uint64_t failed_ns; /* ID_FAILED: when */
};

struct server {
	char url[DEBUGINFOD_MAX_URL];
	bool warned;
};

struct want {
	uint8_t id[BUILD_ID_MAX];
	size_t len;
};

struct debuginfod {
	struct server servers[DEBUGINFOD_MAX_SERVERS];
	size_t nr_servers;
	int dirfd;
	uint64_t max_cache, max_file;
	long connect_s, silence_s, total_s;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;	  /* the queue has work, or stopping */
	pthread_cond_t idle_cond; /* the queue emptied */
	bool stopping;		  /* read by the transfer's progress callback too */
	struct want queue[DEBUGINFOD_QUEUE_MAX];
	size_t q_head, q_len;
	bool busy;	  /* the thread is fetching one */
	struct htab *ids; /* build id -> struct id_entry (owned) */
	struct debuginfod_stats st;
	char warnings[DEBUGINFOD_MAX_SERVERS][DEBUGINFOD_MAX_URL + 512];
	size_t nr_warnings, warnings_taken;
};

/* --- names, URLs, the cache ------------------------------------------------------- */

static void hex_of(const uint8_t *id, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * len] = '\0';
}

static bool id_ok(size_t len)
{
	return len >= 2 && len <= BUILD_ID_MAX;
}

int debuginfod__url(const char *base, const uint8_t *id, size_t len, char *out, size_t size)
{
	char hex[2 * BUILD_ID_MAX + 1];
	size_t bl = strlen(base);
	int n;

	if (!id_ok(len))
		return -EINVAL;
	hex_of(id, len, hex);
	if (bl && base[bl - 1] == '/')
		bl--;
	n = snprintf(out, size, "%.*s/buildid/%s/debuginfo", (int)bl, base, hex);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int debuginfod__cache_name(const uint8_t *id, size_t len, char *out, size_t size)
{
	if (!id_ok(len) || size < 2 * len + sizeof(".debug"))
		return -EINVAL;
	hex_of(id, len, out);
	strcat(out, ".debug");
	return 0;
}

size_t debuginfod__parse_urls(const char *urls, char out[][DEBUGINFOD_MAX_URL], size_t max)
{
	size_t n = 0;

	while (urls && *urls && n < max) {
		size_t l;

		urls += strspn(urls, " \t\n");
		l = strcspn(urls, " \t\n");
		if (!l)
			break;
		if (l < DEBUGINFOD_MAX_URL &&
		    (!strncmp(urls, "http://", 7) || !strncmp(urls, "https://", 8))) {
			memcpy(out[n], urls, l);
			out[n][l] = '\0';
			n++;
		}
		urls += l;
	}
	return n;
}

/* A cache entry's name: HEX.debug, HEX of 4..128 lower-case hex digits. */
static bool cache_entry(const char *name)
{
	size_t h = strspn(name, "0123456789abcdef");

	return h >= 4 && h <= 2 * BUILD_ID_MAX && !(h & 1) && !strcmp(name + h, ".debug");
}

static bool cache_tmp(const char *name)
{
	size_t h = strspn(name, "0123456789abcdef");

	return h >= 4 && !strncmp(name + h, ".debug.tmp.", 11);
}

struct centry {
	char name[2 * BUILD_ID_MAX + 8];
	uint64_t size;
	struct timespec mtime;
};

static int centry_cmp(const void *a, const void *b)
{
	const struct centry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

int64_t debuginfod__cache_trim(int dirfd, uint64_t max, uint64_t incoming)
{
	struct centry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	time_t now = time(NULL);

	if (!d) {
		int err = -errno;

		if (fd >= 0)
			close(fd);
		return err;
	}
	while ((de = readdir(d)) && n < TRIM_MAX_FILES) {
		struct stat st;
		bool tmp = cache_tmp(de->d_name);

		if ((!tmp && !cache_entry(de->d_name)) || strlen(de->d_name) >= sizeof(v->name) ||
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (tmp) {
			/* Another run's file in progress is younger. */
			if (now - st.st_mtime > TMP_STALE_S)
				unlinkat(dirfd, de->d_name, 0);
			continue;
		}
		if (array_grow((void **)&v, &cap, n + 1, sizeof(*v)))
			break;
		strcpy(v[n].name, de->d_name);
		v[n].size = (uint64_t)st.st_size;
		v[n].mtime = st.st_mtim;
		total += v[n].size;
		n++;
	}
	closedir(d);
	if (total + incoming > max && n) {
		qsort(v, n, sizeof(*v), centry_cmp);
		for (size_t i = 0; i < n && total + incoming > max; i++)
			if (!unlinkat(dirfd, v[i].name, 0))
				total -= MIN(total, v[i].size);
	}
	free(v);
	return (int64_t)total;
}

/* Owned by us (or root), and nobody else may write it. */
static bool ours(const struct stat *st)
{
	return (st->st_uid == geteuid() || st->st_uid == 0) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

int debuginfod__cache_dir(const char *path, struct errmsg *em)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *leaf;
	struct stat st;
	int pfd, fd;

	if (path[0] != '/' || !slash || !slash[1] || (size_t)(slash - path) >= sizeof(parent) ||
	    !strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
		return errmsg_set(em, -EINVAL,
				  "debuginfod cache %s: not an absolute directory path", path);
	leaf = slash + 1;
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = '\0';
	if (!parent[0])
		strcpy(parent, "/");
	/* The parent as the korc cache makes it (0700), if missing; then checked. */
	if (mkdir(parent, 0700) && errno != EEXIST)
		return errmsg_set(em, -errno, "debuginfod cache: cannot make %s: %s", parent,
				  strerror(errno));
	pfd = safewrite__dir(parent, false, em);
	if (pfd < 0) {
		char why[sizeof(em->msg)];

		snprintf(why, sizeof(why), "%s", em ? em->msg : "refused");
		return errmsg_set(em, pfd, "debuginfod cache %s: %s", parent, why);
	}
	if (mkdirat(pfd, leaf, 0700) && errno != EEXIST) {
		int err = -errno;

		close(pfd);
		return errmsg_set(em, err, "debuginfod cache: cannot make %s: %s", path,
				  strerror(-err));
	}
	fd = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(pfd);
	if (fd < 0)
		return errmsg_set(em, -errno, "debuginfod cache %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !ours(&st)) {
		close(fd);
		return errmsg_set(
			em, -EACCES,
			"debuginfod cache %s: owned by uid %u, mode %03o: refused (it must "
			"be ours and writable by no one else)",
			path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	}
	/* Nobody else reads what we fetched either (a debug file may be private). */
	if ((st.st_mode & 077) && fchmod(fd, 0700)) {
		close(fd);
		return errmsg_set(em, -errno, "debuginfod cache %s: %s", path, strerror(errno));
	}
	return fd;
}

/* Opens a cache file, checked: the fd or -errno. */
static int cache_open(int dirfd, const char *name, uint64_t max_file)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, &st)) {
		close(fd);
		return -EIO;
	}
	if (!S_ISREG(st.st_mode) || !ours(&st) || st.st_nlink != 1 || (st.st_mode & 077) ||
	    (uint64_t)st.st_size > max_file) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* --- the thread ------------------------------------------------------------------- */

struct xfer {
	struct debuginfod *d;
	int fd;
	uint64_t body, headers;
	bool too_large;
	int werr;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct xfer *x = ctx;
	size_t len = size * nmemb, off = 0;

	if (x->body + len > x->d->max_file) {
		x->too_large = true;
		return 0; /* libcurl ends the transfer (CURLE_WRITE_ERROR) */
	}
	while (off < len) {
		ssize_t n = write(x->fd, p + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			x->werr = n < 0 ? -errno : -EIO;
			return 0;
		}
		off += (size_t)n;
	}
	x->body += len;
	return len;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct xfer *x = ctx;

	x->headers += size * nmemb;
	if (x->headers > HEADERS_MAX) {
		x->too_large = true;
		return 0;
	}
	return size * nmemb;
}

static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct xfer *x = ctx;

	/* Read without the lock: a stale false costs one more callback. */
	return __atomic_load_n(&x->d->stopping, __ATOMIC_RELAXED);
}

/* The first failure of each server, as a sentence, for the caller to say. */
static void server_failed(struct debuginfod *d, struct server *sv, const char *why)
{
	pthread_mutex_lock(&d->lock);
	d->st.failed++;
	if (!sv->warned && d->nr_warnings < DEBUGINFOD_MAX_SERVERS) {
		sv->warned = true;
		snprintf(d->warnings[d->nr_warnings++], sizeof(d->warnings[0]),
			 "debuginfod %s: %s (further failures of this server are only counted)",
			 sv->url, why);
	}
	pthread_mutex_unlock(&d->lock);
}

enum outcome { GOT, NOT_THERE, FAILED, REJECTED };

/*
 * Whether the fetched file is an ELF file of that build id. Only its build
 * id is read: a dwz file (a relocatable file of DWARF alone, which elfsym
 * does not take) is fetched by its build id too; whoever reads the file
 * checks it again.
 */
static bool right_file(int dirfd, const char *name, const uint8_t *id, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	Elf *elf = fd >= 0 ? elffile__begin(fd) : NULL;
	uint8_t b[BUILD_ID_MAX];
	size_t l = elf && elf_kind(elf) == ELF_K_ELF ? elffile__build_id(elf, b) : 0;
	bool ok = l && l == len && !memcmp(b, id, len);

	elffile__end(elf, NULL);
	if (fd >= 0)
		close(fd);
	return ok;
}

static enum outcome fetch_from(struct debuginfod *d, CURL *curl, struct server *sv,
			       const struct want *w, const char *name)
{
	char url[DEBUGINFOD_MAX_URL + 2 * BUILD_ID_MAX + 32], tmp[NAME_MAX + 1];
	char errbuf[CURL_ERROR_SIZE] = "";
	struct xfer x = { .d = d };
	long status = 0;
	enum outcome out = FAILED;
	CURLcode cc;

	if (debuginfod__url(sv->url, w->id, w->len, url, sizeof(url)))
		return FAILED;
	x.fd = safewrite__tmpfile(d->dirfd, name, tmp, sizeof(tmp));
	if (x.fd < 0) {
		server_failed(d, sv, "cannot make a file in the cache");
		return FAILED;
	}
	fchmod(x.fd, 0600);
	libcurl.easy_reset(curl);
	libcurl.easy_setopt(curl, CURLOPT_URL, url);
	libcurl.easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	libcurl.easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	libcurl.easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	libcurl.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
	libcurl.easy_setopt(curl, CURLOPT_MAXREDIRS, 4L);
	libcurl.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, d->connect_s);
	libcurl.easy_setopt(curl, CURLOPT_TIMEOUT, d->total_s);
	libcurl.easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	libcurl.easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, d->silence_s);
	libcurl.easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)d->max_file);
	libcurl.easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
	libcurl.easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
	libcurl.easy_setopt(curl, CURLOPT_USERAGENT, "bpfprof/" BPFPROF_VERSION);
	libcurl.easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	libcurl.easy_setopt(curl, CURLOPT_WRITEDATA, &x);
	libcurl.easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
	libcurl.easy_setopt(curl, CURLOPT_HEADERDATA, &x);
	libcurl.easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	libcurl.easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	libcurl.easy_setopt(curl, CURLOPT_XFERINFODATA, &x);
	libcurl.easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	cc = libcurl.easy_perform(curl);
	if (cc == CURLE_OK)
		libcurl.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	if (__atomic_load_n(&d->stopping, __ATOMIC_RELAXED)) {
		out = FAILED; /* stopped: not the server's fault, not said */
	} else if (cc == CURLE_OK && status == 200) {
		if (!right_file(d->dirfd, tmp, w->id, w->len)) {
			char why[96];

			snprintf(
				why, sizeof(why),
				"served a file that is not the debug file of the build id asked for");
			server_failed(d, sv, why);
			pthread_mutex_lock(&d->lock);
			d->st.failed--; /* counted as rejected instead */
			d->st.rejected++;
			pthread_mutex_unlock(&d->lock);
			out = REJECTED;
		} else if (debuginfod__cache_trim(d->dirfd, d->max_cache, x.body) < 0 ||
			   safewrite__rename(d->dirfd, tmp, name, false)) {
			server_failed(d, sv, "cannot keep the file in the cache");
		} else {
			out = GOT;
		}
	} else if (cc == CURLE_OK && status == 404) {
		out = NOT_THERE;
	} else {
		char why[CURL_ERROR_SIZE + 96];

		if (x.too_large || cc == CURLE_FILESIZE_EXCEEDED)
			snprintf(why, sizeof(why), "answer over the size cap (%" PRIu64 " bytes)",
				 x.headers > HEADERS_MAX ? (uint64_t)HEADERS_MAX : d->max_file);
		else if (cc == CURLE_OK)
			snprintf(why, sizeof(why), "HTTP status %ld", status);
		else if (cc == CURLE_OPERATION_TIMEDOUT)
			snprintf(why, sizeof(why), "timed out (%s)",
				 errbuf[0] ? errbuf : libcurl.easy_strerror(cc));
		else
			snprintf(why, sizeof(why), "%s",
				 errbuf[0] ? errbuf : libcurl.easy_strerror(cc));
		server_failed(d, sv, why);
	}
	close(x.fd);
	if (out != GOT)
		unlinkat(d->dirfd, tmp, 0);
	return out;
}

static void fetch(struct debuginfod *d, CURL *curl, const struct want *w)
{
	char name[2 * BUILD_ID_MAX + 8];
	enum outcome out = NOT_THERE;
	struct htab_entry *e;

	if (debuginfod__cache_name(w->id, w->len, name, sizeof(name)))
		return;
	for (size_t i = 0;
	     i < d->nr_servers && (out == NOT_THERE || out == FAILED || out == REJECTED); i++) {
		if (__atomic_load_n(&d->stopping, __ATOMIC_RELAXED))
			break;
		out = curl ? fetch_from(d, curl, &d->servers[i], w, name) : FAILED;
	}
	pthread_mutex_lock(&d->lock);
	e = htab__find(d->ids, w->id, w->len);
	if (e && e->value) {
		struct id_entry *ie = e->value;

		ie->state = out == GOT ? ID_DONE : ID_FAILED;
		ie->failed_ns = now_ns();
	}
	if (out == GOT)
		d->st.fetched++;
	else if (out == NOT_THERE)
		d->st.not_found++;
	pthread_mutex_unlock(&d->lock);
}

static void *worker(void *arg)
{
	struct debuginfod *d = arg;
	CURL *curl = libcurl.easy_init();

	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct want w;

		while (!d->q_len && !d->stopping)
			pthread_cond_wait(&d->cond, &d->lock);
		if (d->stopping)
			break;
		w = d->queue[d->q_head];
		d->q_head = (d->q_head + 1) % DEBUGINFOD_QUEUE_MAX;
		d->q_len--;
		d->busy = true;
		pthread_mutex_unlock(&d->lock);
		fetch(d, curl, &w);
		pthread_mutex_lock(&d->lock);
		d->busy = false;
		if (!d->q_len)
			pthread_cond_broadcast(&d->idle_cond);
	}
	d->busy = false;
	pthread_cond_broadcast(&d->idle_cond);
	pthread_mutex_unlock(&d->lock);
	if (curl)
		libcurl.easy_cleanup(curl);
	return NULL;
}

/* --- the API ---------------------------------------------------------------------- */

static long env_seconds(const char *name, long def)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (!v || !*v)
		return def;
	n = strtol(v, &end, 10);
	return *end || n <= 0 ? def : n;
}

struct debuginfod *debuginfod__new(const struct debuginfod_opts *o, struct errmsg *em)
{
	char urls[DEBUGINFOD_MAX_SERVERS][DEBUGINFOD_MAX_URL];
	char dir[PATH_MAX];
	struct debuginfod *d;
	const char *cache = getenv("BPFPROF_CACHE_DIR");
	size_t n = debuginfod__parse_urls(o->urls, urls, DEBUGINFOD_MAX_SERVERS);
	long maxsize = env_seconds("DEBUGINFOD_MAXSIZE", 0);
	int err;

	if (!n) {
		errno = -errmsg_set(em, -EINVAL, "debuginfod: no http:// or https:// URL in '%s'",
				    o->urls);
		return NULL;
	}
	if (o->cache_dir)
		snprintf(dir, sizeof(dir), "%s", o->cache_dir);
	else
		snprintf(dir, sizeof(dir), "%s/debuginfod",
			 cache && *cache ? cache : "/var/cache/bpfprof");
	err = curllib__load();
	if (err) {
		if (err == -ELIBACC)
			errmsg_set(em, err, "debuginfod: cannot load libcurl (%s)", curllib__why());
		else
			errmsg_set(em, err, "debuginfod: cannot initialise libcurl");
		errno = -err;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		errno = -errmsg_set(em, -ENOMEM, "out of memory");
		return NULL;
	}
	d->dirfd = -1;
	for (size_t i = 0; i < n; i++)
		memcpy(d->servers[i].url, urls[i], sizeof(urls[i]));
	d->nr_servers = n;
	d->max_cache = o->max_cache ? o->max_cache : DEBUGINFOD_CACHE_MAX;
	d->max_file = o->max_file ? o->max_file : DEBUGINFO_MAX_FILE;
	if (maxsize > 0 && (uint64_t)maxsize < d->max_file)
		d->max_file = (uint64_t)maxsize;
	d->connect_s =
		o->connect_timeout_s ? (long)o->connect_timeout_s : DEBUGINFOD_CONNECT_TIMEOUT;
	d->silence_s = o->silence_timeout_s
			       ? (long)o->silence_timeout_s
			       : env_seconds("DEBUGINFOD_TIMEOUT", DEBUGINFOD_SILENCE_TIMEOUT);
	d->total_s = o->total_timeout_s
			     ? (long)o->total_timeout_s
			     : env_seconds("DEBUGINFOD_MAXTIME", DEBUGINFOD_TOTAL_TIMEOUT);
	/* A connection is a kind of silence too. */
	d->connect_s = MIN(d->connect_s, d->total_s);
	d->silence_s = MIN(d->silence_s, d->total_s);
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	pthread_cond_init(&d->idle_cond, NULL);
	d->ids = htab__new();
	d->dirfd = debuginfod__cache_dir(dir, em);
	if (!d->ids || d->dirfd < 0) {
		err = d->dirfd < 0 ? d->dirfd : -errmsg_set(em, -ENOMEM, "out of memory");
		debuginfod__free(d);
		errno = -err;
		return NULL;
	}
	return d;
}

void debuginfod__free(struct debuginfod *d)
{
	struct htab_entry *e;
	size_t pos = 0;

	if (!d)
		return;
	if (d->started) {
		pthread_mutex_lock(&d->lock);
		__atomic_store_n(&d->stopping, true, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&d->cond);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->thread, NULL);
	}
	while (d->ids && (e = htab__next(d->ids, &pos)))
		free(e->value);
	htab__free(d->ids);
	if (d->dirfd >= 0)
		close(d->dirfd);
	pthread_cond_destroy(&d->cond);
	pthread_cond_destroy(&d->idle_cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

/* A build id whose file was in the cache before it was asked for: counted once. */
static void note_cached(struct debuginfod *d, const uint8_t *id, size_t len)
{
	struct htab_entry *e;
	struct id_entry *ie;
	bool created;

	if (htab__find(d->ids, id, len) || htab__count(d->ids) >= DEBUGINFOD_IDS_MAX)
		return;
	e = htab__upsert(d->ids, id, len, &created);
	ie = e ? calloc(1, sizeof(*ie)) : NULL;
	if (!ie) {
		if (e)
			htab__remove(d->ids, id, len);
		return;
	}
	ie->state = ID_DONE;
	e->value = ie;
	d->st.cache_hits++;
}

int debuginfod__want(struct debuginfod *d, const uint8_t *id, size_t len)
{
	char name[2 * BUILD_ID_MAX + 8];
	struct htab_entry *e;
	struct stat st;
	struct id_entry *ie;
	bool created;
	int err = 0;

	if (debuginfod__cache_name(id, len, name, sizeof(name)))
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	e = htab__find(d->ids, id, len);
	ie = e ? e->value : NULL;
	/* Cached by an earlier run: nothing to fetch (its checks are made when it is opened). */
	if (!ie && !fstatat(d->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode)) {
		note_cached(d, id, len);
		err = -EALREADY;
		goto out;
	}
	if (ie && (ie->state != ID_FAILED || now_ns() - ie->failed_ns < DEBUGINFOD_RETRY_NS)) {
		err = -EALREADY;
		goto out;
	}
	if (d->q_len >= DEBUGINFOD_QUEUE_MAX ||
	    (!ie && htab__count(d->ids) >= DEBUGINFOD_IDS_MAX)) {
		d->st.dropped++;
		err = -ENOSPC;
		goto out;
	}
	if (!ie) {
		e = htab__upsert(d->ids, id, len, &created);
		ie = e ? calloc(1, sizeof(*ie)) : NULL;
		if (!ie) {
			if (e)
				htab__remove(d->ids, id, len);
			err = -ENOMEM;
			goto out;
		}
		e->value = ie;
	}
	if (!d->started) {
		if (pthread_create(&d->thread, NULL, worker, d)) {
			ie->state = ID_FAILED; /* asked again after DEBUGINFOD_RETRY_NS */
			ie->failed_ns = now_ns();
			err = -EAGAIN;
			goto out;
		}
		d->started = true;
	}
	ie->state = ID_QUEUED;
	memcpy(d->queue[(d->q_head + d->q_len) % DEBUGINFOD_QUEUE_MAX].id, id, len);
	d->queue[(d->q_head + d->q_len) % DEBUGINFOD_QUEUE_MAX].len = len;
	d->q_len++;
	pthread_cond_signal(&d->cond);
out:
	pthread_mutex_unlock(&d->lock);
	return err;
}

int debuginfod__open(struct debuginfod *d, const uint8_t *id, size_t len)
{
	char name[2 * BUILD_ID_MAX + 8];
	int fd;

	if (debuginfod__cache_name(id, len, name, sizeof(name)))
		return -EINVAL;
	fd = cache_open(d->dirfd, name, d->max_file);
	if (fd >= 0) {
		/* Recently used: the last to go when the cache is trimmed. */
		futimens(fd, NULL);
		pthread_mutex_lock(&d->lock);
		note_cached(d, id, len);
		pthread_mutex_unlock(&d->lock);
	}
	return fd;
}

uint64_t debuginfod__done(struct debuginfod *d)
{
	uint64_t n;

	pthread_mutex_lock(&d->lock);
	n = d->st.fetched;
	pthread_mutex_unlock(&d->lock);
	return n;
}

size_t debuginfod__wait(struct debuginfod *d, unsigned timeout_ms)
{
	struct timespec until;
	size_t left;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&d->lock);
	while ((d->q_len || d->busy) && d->started)
		if (pthread_cond_timedwait(&d->idle_cond, &d->lock, &until) == ETIMEDOUT)
			break;
	left = d->started ? d->q_len + d->busy : 0;
	pthread_mutex_unlock(&d->lock);
	return left;
}

bool debuginfod__warning(struct debuginfod *d, char *buf, size_t size)
{
	bool got = false;

	pthread_mutex_lock(&d->lock);
	if (d->warnings_taken < d->nr_warnings) {
		snprintf(buf, size, "%s", d->warnings[d->warnings_taken++]);
		got = true;
	}
	pthread_mutex_unlock(&d->lock);
	return got;
}

void debuginfod__stats(struct debuginfod *d, struct debuginfod_stats *st)
{
	pthread_mutex_lock(&d->lock);
	*st = d->st;
	st->pending = d->q_len + d->busy;
	pthread_mutex_unlock(&d->lock);
}
