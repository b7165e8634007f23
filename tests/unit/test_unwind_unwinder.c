// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * test_unwind_unwinder.c - the unwinder against a fake /proc tree and an
 * in-memory "kernel" (struct unwind_kops writing into an array). Every
 * lookup is done the way bpf/unwind.bpf.h does it - mapping search, page
 * index, row search over the slot pool - and compared with the table built
 * directly from the file, so the layout the walker reads is tested without
 * BPF: shared tables, build-id sharing, split tables, refresh, exits, pid
 * reuse, eviction, entries installed ahead.
 */
#include "testutil.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "unwind/table.h"
#include "unwind/unwinder.h"

#define MAX_CHUNKS 4
#define TICK_NS	   10000000ull /* CLK_TCK 100 */
/* The id a BPF notice carries (no address-space signature: not checked). */
#define PROC_ID(p, s, e) ((struct proc_id){ .pid = (p), .start_time = (s), .exec_id = (e) })

struct kproc {
	uint32_t tgid;
	struct bp_uproc p;
	bool live;
};

struct fake_kernel {
	uint64_t *slots;
	/* The walker's row cache contract: a slot written before is rewritten
	 * only after pool_changed() announced a newer generation. */
	uint64_t *slot_gen; /* gen_told when the slot was last written, 0: never */
	uint64_t gen_told;  /* last pool_changed() value, starts at 1 */
	int rewrites;	    /* slots written a second time */
	bool chunk[MAX_CHUNKS];
	struct kproc procs[16];
	int sets, dels, chunk_adds;
};

static void k_pool_changed(void *ctx, uint64_t generation)
{
	struct fake_kernel *k = ctx;

	k->gen_told = generation + 1;
}

static int k_chunk_add(void *ctx, uint32_t c)
{
	struct fake_kernel *k = ctx;

	assert_true(c < MAX_CHUNKS && !k->chunk[c]);
	k->chunk[c] = true;
	k->chunk_adds++;
	return 0;
}

static int k_chunk_drop(void *ctx, uint32_t c)
{
	struct fake_kernel *k = ctx;

	assert_true(k->chunk[c]);
	k->chunk[c] = false;
	return 0;
}

static int k_write(void *ctx, uint32_t slot, const void *vals, uint32_t n)
{
	struct fake_kernel *k = ctx;

	assert_true(k->chunk[slot >> UNWIND_CHUNK_SHIFT]);
	assert_true((slot & (UNWIND_CHUNK_SLOTS - 1)) + n <= UNWIND_CHUNK_SLOTS);
	memcpy(&k->slots[slot], vals, (size_t)n * 8);
	for (uint32_t i = slot; i < slot + n; i++) {
		if (k->slot_gen[i]) {
			if (k->slot_gen[i] >= k->gen_told)
				fail_msg("slot %u rewritten without a new pool generation", i);
			k->rewrites++;
		}
		k->slot_gen[i] = k->gen_told;
	}
	return 0;
}

static struct kproc *kproc_find(struct fake_kernel *k, uint32_t tgid)
{
	for (size_t i = 0; i < ARRAY_SIZE(k->procs); i++)
		if (k->procs[i].live && k->procs[i].tgid == tgid)
			return &k->procs[i];
	return NULL;
}

static int k_proc_set(void *ctx, uint32_t tgid, const struct bp_uproc *p)
{
	struct fake_kernel *k = ctx;
	struct kproc *kp = kproc_find(k, tgid);

	for (size_t i = 0; !kp && i < ARRAY_SIZE(k->procs); i++)
		if (!k->procs[i].live)
			kp = &k->procs[i];
	assert_non_null(kp);
	kp->tgid = tgid;
	kp->p = *p;
	kp->live = true;
	k->sets++;
	return 0;
}

static int k_proc_del(void *ctx, uint32_t tgid)
{
	struct fake_kernel *k = ctx;
	struct kproc *kp = kproc_find(k, tgid);

	if (kp)
		kp->live = false;
	k->dels++;
	return 0;
}

/* --- the walker's lookups, over the fake slots ------------------------------- */

static const struct bp_umap *k_mapping(struct fake_kernel *k, uint32_t tgid, uint64_t pc,
				       struct bp_umap *out)
{
	struct kproc *kp = kproc_find(k, tgid);
	uint32_t lo = 0, n;

	if (!kp || !kp->p.nr_maps)
		return NULL;
	n = kp->p.nr_maps;
	while (n > 1) {
		uint32_t half = n / 2;

		if (k->slots[kp->p.maps + (lo + half) * UNWIND_MAP_SLOTS] <= pc)
			lo += half;
		n -= half;
	}
	memcpy(out, &k->slots[kp->p.maps + lo * UNWIND_MAP_SLOTS], sizeof(*out));
	return pc >= out->start && pc < out->end ? out : NULL;
}

static bool k_row(struct fake_kernel *k, const struct bp_umap *m, uint64_t pc, struct bp_urow *row)
{
	uint64_t off = pc - m->bias;
	struct bp_upage pg;
	uint32_t lo, n;

	if (m->pages == UNWIND_NO_TABLE || (off >> UNWIND_PAGE_SHIFT) >= m->nr_pages)
		return false;
	memcpy(&pg, &k->slots[m->pages + (off >> UNWIND_PAGE_SHIFT)], sizeof(pg));
	if (!pg.count)
		return false;
	/* All rows of a page in one chunk. */
	assert_int_equal(pg.first >> UNWIND_CHUNK_SHIFT,
			 (pg.first + pg.count - 1) >> UNWIND_CHUNK_SHIFT);
	lo = pg.first;
	n = pg.count;
	while (n > 1) {
		uint32_t half = n / 2;

		memcpy(row, &k->slots[lo + half], sizeof(*row));
		if (row->pc <= off)
			lo += half;
		n -= half;
	}
	memcpy(row, &k->slots[lo], sizeof(*row));
	return row->pc <= off;
}

/* --- a fake /proc ------------------------------------------------------------- */

struct env {
	char root[64];
	struct fake_kernel k;
	struct unwind_kops kops;
};

static void write_at(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void maps_line(char *buf, size_t size, uint64_t start, uint64_t end, uint64_t off,
		      const char *path)
{
	struct stat st;
	size_t l = strlen(buf);

	assert_int_equal(stat(path, &st), 0);
	snprintf(buf + l, size - l, "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %02x:%02x %lu %s\n",
		 start, end, off, major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino,
		 path);
}

/* A process: stat (start time), exe, root -> /, maps from the given text. */
static void fake_proc(struct env *e, uint32_t pid, uint64_t ticks, const char *maps)
{
	char path[256], stat[512];

	snprintf(path, sizeof(path), "%s/%u", e->root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/stat", e->root, pid);
	snprintf(stat, sizeof(stat),
		 "%u (fake app) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %" PRIu64
		 " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		 pid, ticks);
	write_at(path, stat);
	snprintf(path, sizeof(path), "%s/%u/maps", e->root, pid);
	write_at(path, maps);
	snprintf(path, sizeof(path), "%s/%u/exe", e->root, pid);
	unlink(path);
	assert_int_equal(symlink(fixture_path("pie"), path), 0);
	snprintf(path, sizeof(path), "%s/%u/root", e->root, pid);
	unlink(path);
	assert_int_equal(symlink("/", path), 0);
}

static void gone(struct env *e, uint32_t pid)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%u/stat", e->root, pid);
	unlink(path);
}

#define PIE_START 0x555555555000ull
#define LIB_START 0x7f0000001000ull
#define ANON	  "7e0000000000-7e0000001000 rwxp 00000000 00:00 0 \n"

static void std_maps(char *buf, size_t size, const char *lib_path)
{
	char lib[512];

	snprintf(lib, sizeof(lib), "%s", lib_path); /* fixture_path() reuses its buffer */
	buf[0] = '\0';
	maps_line(buf, size, PIE_START, PIE_START + 0x1000, 0x1000, fixture_path("pie"));
	maps_line(buf, size, LIB_START, LIB_START + 0x1000, 0x1000, lib);
	strncat(buf, ANON, size - strlen(buf) - 1);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	strcpy(e->root, "/tmp/bpfprof-uw-XXXXXX");
	assert_non_null(mkdtemp(e->root));
	e->k.slots = calloc((size_t)MAX_CHUNKS * UNWIND_CHUNK_SLOTS, 8);
	assert_non_null(e->k.slots);
	e->k.slot_gen = calloc((size_t)MAX_CHUNKS * UNWIND_CHUNK_SLOTS, 8);
	assert_non_null(e->k.slot_gen);
	e->k.gen_told = 1;
	e->kops = (struct unwind_kops){ .ctx = &e->k,
					.chunk_add = k_chunk_add,
					.chunk_drop = k_chunk_drop,
					.slots_write = k_write,
					.proc_set = k_proc_set,
					.proc_del = k_proc_del,
					.pool_changed = k_pool_changed };
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", e->root);
	assert_int_equal(system(cmd), 0);
	free(e->k.slots);
	free(e->k.slot_gen);
	free(e);
	return 0;
}

static struct unwinder *new_unwinder(struct env *e, uint32_t max_procs, uint32_t seg_rows)
{
	struct unwinder_opts o = { .proc_root = e->root,
				   .max_procs = max_procs,
				   .max_chunks = MAX_CHUNKS,
				   .seg_rows = seg_rows };
	struct unwinder *u = unwinder__new(&o, &e->kops);

	assert_non_null(u);
	return u;
}

/* Every address of [start, end) (vaddr = address - start + vstart in path)
 * finds through the fake kernel the row the file's own table has. */
static void check_mapping(struct env *e, uint32_t pid, const char *path_arg, uint64_t start,
			  uint64_t end, uint64_t vstart, uint64_t step)
{
	char path[512];
	struct utable *t;
	int fd;

	snprintf(path, sizeof(path), "%s", path_arg);
	fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	t = utable__build_fd(fd);
	close(fd);
	assert_non_null(t);
	for (uint64_t a = start; a < end; a += step) {
		const struct bp_urow *want = utable__lookup(t, a - start + vstart);
		struct bp_umap m;
		struct bp_urow got;
		bool found;

		assert_non_null(k_mapping(&e->k, pid, a, &m));
		found = k_row(&e->k, &m, a, &got);
		if (found != !!want || (want && memcmp(&got, want, sizeof(got))))
			fail_msg("%s at 0x%" PRIx64 ": kernel row %d, table row %d", path, a, found,
				 !!want);
	}
	utable__free(t);
}

static void test_install_and_lookup(void **state)
{
	struct env *e = *state;
	struct unwinder *u = new_unwinder(e, 0, 0);
	struct unwinder_stats st;
	struct bp_umap m;
	char maps[4096];
	struct kproc *kp;

	std_maps(maps, sizeof(maps), fixture_path("libfix.so"));
	fake_proc(e, 100, 5000, maps);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 0);
	kp = kproc_find(&e->k, 100);
	assert_non_null(kp);
	assert_int_equal(kp->p.nr_maps, 3);
	assert_int_equal(kp->p.start_time, 5000 * TICK_NS);
	assert_int_equal(kp->p.exec_id, 1);
	assert_int_equal(kp->p.flags, 0);
	check_mapping(e, 100, fixture_path("pie"), PIE_START, PIE_START + 0x1000, 0x1000, 1);
	check_mapping(e, 100, fixture_path("libfix.so"), LIB_START, LIB_START + 0x1000, 0x1000, 1);
	/* Anonymous executable memory: frame pointers. */
	assert_non_null(k_mapping(&e->k, 100, 0x7e0000000010ull, &m));
	assert_int_equal(m.pages, UNWIND_NO_TABLE);
	assert_null(k_mapping(&e->k, 100, 0x1000, &m));
	/* Idempotent. */
	assert_int_equal(unwinder__note_process(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 0);
	assert_int_equal(e->k.sets, 1);
	unwinder__stats(u, &st);
	assert_int_equal(st.procs, 1);
	assert_true(st.tables >= 2);
	assert_int_equal(st.kernel_bytes, (uint64_t)UNWIND_CHUNK_SLOTS * 8);
	unwinder__free(u);
}

static void test_tables_shared(void **state)
{
	struct env *e = *state;
	struct unwinder *u = new_unwinder(e, 0, 0);
	struct unwinder_stats a, b;
	char maps[4096], copy[256], *buf;
	size_t len;

	std_maps(maps, sizeof(maps), fixture_path("libfix.so"));
	fake_proc(e, 100, 5000, maps);
	fake_proc(e, 101, 5001, maps);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 0);
	unwinder__stats(u, &a);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(101, 5001 * TICK_NS, 1)), 0);
	unwinder__stats(u, &b);
	assert_int_equal(a.tables_built, b.tables_built); /* same inodes */
	/* A copy of libfix.so (another inode, same build id): shared, not rebuilt. */
	snprintf(copy, sizeof(copy), "%s/libfix-copy.so", e->root);
	assert_int_equal(read_file(fixture_path("libfix.so"), 1 << 20, &buf, &len), 0);
	{
		FILE *f = fopen(copy, "w");

		assert_non_null(f);
		assert_int_equal(fwrite(buf, 1, len, f), len);
		fclose(f);
	}
	free(buf);
	std_maps(maps, sizeof(maps), copy);
	fake_proc(e, 102, 5002, maps);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(102, 5002 * TICK_NS, 1)), 0);
	unwinder__stats(u, &b);
	assert_int_equal(b.tables_shared, 1);
	assert_int_equal(a.tables_built, b.tables_built);
	check_mapping(e, 102, copy, LIB_START, LIB_START + 0x1000, 0x1000, 1);
	unwinder__free(u);
}

static void test_split_table(void **state)
{
	struct env *e = *state;
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	struct unwinder *u = new_unwinder(e, 0, UNWIND_PAGE_MAX_ROWS);
	struct utable *t;
	char maps[4096] = "";
	int fd = open(libc, O_RDONLY);

	/* libc's text, mapped as the loader does (one r-xp segment). */
	assert_true(fd >= 0);
	t = utable__build_fd(fd);
	close(fd);
	assert_non_null(t);
	assert_true(t->nr_rows > 4 * UNWIND_PAGE_MAX_ROWS); /* several runs */
	for (size_t i = 0; i < t->nr_segs; i++) {
		const struct utable_seg *s = &t->segs[i];
		uint64_t start = 0x7f1000000000ull + (s->vaddr & ~0xfffull);

		if (!s->exec)
			continue;
		maps_line(maps, sizeof(maps), start, start + ((s->memsz + 0xfff) & ~0xfffull),
			  s->offset & ~0xfffull, libc);
		fake_proc(e, 200, 7000, maps);
		assert_int_equal(unwinder__note_process(u, &PROC_ID(200, 7000 * TICK_NS, 3)), 0);
		check_mapping(e, 200, libc, start, start + s->memsz, s->vaddr & ~0xfffull, 3);
	}
	utable__free(t);
	unwinder__free(u);
}

static void test_refresh_after_dlopen(void **state)
{
	struct env *e = *state;
	struct unwinder *u = new_unwinder(e, 0, 0);
	char maps[4096];
	struct kproc *kp;
	int sets;

	std_maps(maps, sizeof(maps), fixture_path("libfix.so"));
	fake_proc(e, 100, 5000, maps);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 0);
	/* Unchanged maps: nothing to rewrite. */
	assert_int_equal(unwinder__refresh(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 0);
	assert_int_equal(e->k.sets, 1);
	maps_line(maps, sizeof(maps), 0x7f0000100000ull, 0x7f0000101000ull, 0x1000,
		  fixture_path("libcfi.so"));
	fake_proc(e, 100, 5000, maps);
	/* Rate-limited: the refresh just done counts. */
	assert_int_equal(unwinder__refresh(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 1);
	assert_int_equal(e->k.sets, 1);
	/* It found nothing new: the next waits 500 ms, not 250. */
	usleep(300000);
	assert_int_equal(unwinder__refresh(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 1);
	usleep(250000);
	sets = e->k.sets;
	assert_int_equal(unwinder__refresh(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 0);
	assert_int_equal(e->k.sets, sets + 1);
	kp = kproc_find(&e->k, 100);
	assert_int_equal(kp->p.nr_maps, 4);
	/* That one found the new library: back to 250 ms. */
	usleep(300000);
	assert_int_equal(unwinder__refresh(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 0);
	assert_int_equal(e->k.sets, sets + 1);
	check_mapping(e, 100, fixture_path("libcfi.so"), 0x7f0000100000ull, 0x7f00001000d0ull,
		      0x1000, 1);
	unwinder__free(u);
}

static void test_pid_reuse_exec_and_exit(void **state)
{
	struct env *e = *state;
	struct unwinder *u = new_unwinder(e, 0, 0);
	struct unwinder_stats st;
	char maps[4096];

	std_maps(maps, sizeof(maps), fixture_path("libfix.so"));
	fake_proc(e, 100, 5000, maps);
	/* A notice for an older process with this pid: not this one. */
	assert_int_equal(unwinder__note_process(u, &PROC_ID(100, 4000 * TICK_NS, 1)), -ESRCH);
	assert_null(kproc_find(&e->k, 100));
	assert_int_equal(unwinder__note_process(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 0);
	/* exec: a new image in the same process replaces the entry. */
	assert_int_equal(unwinder__note_process(u, &PROC_ID(100, 5000 * TICK_NS, 2)), 0);
	assert_int_equal(kproc_find(&e->k, 100)->p.exec_id, 2);
	/* Exit: gone at the next sweep (sweeps are at most once a second). */
	gone(e, 100);
	usleep(1100000);
	unwinder__tick(u);
	assert_null(kproc_find(&e->k, 100));
	unwinder__stats(u, &st);
	assert_int_equal(st.procs, 0);
	/* Two reclaims later the list's and no table's slots are free again. */
	unwinder__tick(u);
	unwinder__stats(u, &st);
	assert_true(st.tables >= 2); /* tables stay cached for the next process */
	/* A new process's list reuses freed slots, announced first (k_write checks). */
	e->k.rewrites = 0;
	fake_proc(e, 101, 5100, maps);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(101, 5100 * TICK_NS, 1)), 0);
	assert_true(e->k.rewrites > 0);
	unwinder__free(u);
}

static void test_eviction_and_install_ahead(void **state)
{
	struct env *e = *state;
	struct unwinder *u = new_unwinder(e, 2, 0);
	struct unwinder_stats st;
	char maps[4096];

	std_maps(maps, sizeof(maps), fixture_path("libfix.so"));
	for (uint32_t pid = 300; pid < 303; pid++) {
		fake_proc(e, pid, 6000 + pid, maps);
		assert_int_equal(
			unwinder__note_process(u, &PROC_ID(pid, (6000 + pid) * TICK_NS, 1)), 0);
		usleep(1000);
	}
	/* max_procs 2: the least recently noticed (300) made room for 302. */
	assert_null(kproc_find(&e->k, 300));
	assert_non_null(kproc_find(&e->k, 301));
	assert_non_null(kproc_find(&e->k, 302));
	unwinder__stats(u, &st);
	assert_int_equal(st.procs_evicted, 1);
	assert_int_equal(st.procs, 2);

	/* Installed ahead (-p): matches any image until the first notice. */
	fake_proc(e, 400, 9000, maps);
	assert_int_equal(unwinder__install(u, 400), 0);
	assert_int_equal(kproc_find(&e->k, 400)->p.flags, UPROC_F_ANY_IMAGE);
	check_mapping(e, 400, fixture_path("pie"), PIE_START, PIE_START + 0x1000, 0x1000, 7);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(400, 9000 * TICK_NS, 5)), 0);
	assert_int_equal(kproc_find(&e->k, 400)->p.flags, 0);
	assert_int_equal(kproc_find(&e->k, 400)->p.exec_id, 5);
	unwinder__free(u);
}

static void test_files_without_tables(void **state)
{
	struct env *e = *state;
	struct unwinder *u = new_unwinder(e, 0, 0);
	struct unwinder_stats st;
	struct bp_umap m;
	char maps[4096];

	std_maps(maps, sizeof(maps), fixture_path("libnocfi.so"));
	fake_proc(e, 100, 5000, maps);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 0);
	assert_non_null(k_mapping(&e->k, 100, LIB_START + 16, &m));
	assert_int_equal(m.pages, UNWIND_NO_TABLE);
	unwinder__stats(u, &st);
	assert_int_equal(st.tables_failed, 1);
	/* Remembered: a second process does not retry the build. */
	fake_proc(e, 101, 5001, maps);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(101, 5001 * TICK_NS, 1)), 0);
	unwinder__stats(u, &st);
	assert_int_equal(st.tables_failed, 1);
	unwinder__free(u);
}

static void count_warn(void *ctx, const char *msg)
{
	char *last = ctx;

	snprintf(last, 1024, "%s", msg);
	last[1023]++; /* warnings seen */
}

/* maps text for n mappings; the caller frees it. */
static char *big_maps(size_t n)
{
	size_t size = (n + 8) * 160;
	char *buf = malloc(size);

	assert_non_null(buf);
	buf[0] = '\0';
	return buf;
}

/* Append: n anonymous executable pages from start, each step bytes apart. */
static void anon_lines(char *buf, size_t size, uint64_t start, size_t n, uint64_t step)
{
	size_t l = strlen(buf);

	for (size_t i = 0; i < n; i++)
		l += (size_t)snprintf(buf + l, size - l,
				      "%" PRIx64 "-%" PRIx64 " r-xp 00000000 00:00 0 \n",
				      start + i * step, start + i * step + 0x1000);
}

/* A process over UNWIND_MAX_MAPS (issue 14, item 4): contiguous code without
 * tables is one range; past the limit, mappings without tables go first
 * (nothing lost: a pc in none takes the same frame-pointer step), then those
 * of the file mapped most often - the flag, one warning, the counters. */
static void test_over_the_mapping_limit(void **state)
{
	struct env *e = *state;
	const size_t n = UNWIND_MAX_MAPS + 232, size = (n + 8) * 160;
	struct unwinder_opts o = { .proc_root = e->root, .max_chunks = MAX_CHUNKS };
	char lib[4096], last[1024] = { 0 };
	struct unwinder_stats st;
	struct unwinder *u;
	struct kproc *kp;
	struct bp_umap m;
	char *maps;

	o.warn = count_warn;
	o.warn_ctx = last;
	u = unwinder__new(&o, &e->kops);
	assert_non_null(u);
	snprintf(lib, sizeof(lib), "%s", fixture_path("libfix.so"));

	/* 40,000 contiguous anonymous pages: one mapping. */
	maps = big_maps(40000);
	std_maps(maps, size, lib);
	anon_lines(maps, 40008 * 160, 0x200000000ull, 40000, 0x1000);
	fake_proc(e, 100, 5000, maps);
	free(maps);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(100, 5000 * TICK_NS, 1)), 0);
	kp = kproc_find(&e->k, 100);
	assert_non_null(kp);
	assert_int_equal(kp->p.nr_maps, 4);
	assert_non_null(k_mapping(&e->k, 100, 0x200000000ull + 39999ull * 0x1000 + 8, &m));
	assert_int_equal(m.pages, UNWIND_NO_TABLE);

	/* n separate anonymous pages: they go, the two files stay, no flag. */
	maps = big_maps(n);
	std_maps(maps, size, lib);
	anon_lines(maps, size, 0x200000000ull, n, 0x2000);
	fake_proc(e, 101, 5001, maps);
	free(maps);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(101, 5001 * TICK_NS, 1)), 0);
	kp = kproc_find(&e->k, 101);
	assert_int_equal(kp->p.nr_maps, 2); /* pie, lib: every mapping without a table went */
	assert_int_equal(kp->p.flags & UPROC_F_CAPPED, 0);
	check_mapping(e, 101, lib, LIB_START, LIB_START + 0x1000, 0x1000, 7);
	assert_int_equal(last[1023], 0);

	/* libfix.so mapped n times below the pie: its highest 233 copies go. */
	maps = big_maps(n);
	for (size_t i = 0; i < n; i++)
		maps_line(maps, size, 0x100000000ull + i * 0x2000,
			  0x100000000ull + i * 0x2000 + 0x1000, 0x1000, lib);
	maps_line(maps, size, PIE_START, PIE_START + 0x1000, 0x1000, fixture_path("pie"));
	fake_proc(e, 102, 5002, maps);
	free(maps);
	assert_int_equal(unwinder__note_process(u, &PROC_ID(102, 5002 * TICK_NS, 1)), 0);
	kp = kproc_find(&e->k, 102);
	assert_int_equal(kp->p.nr_maps, UNWIND_MAX_MAPS);
	assert_int_equal(kp->p.flags & UPROC_F_CAPPED, UPROC_F_CAPPED);
	check_mapping(e, 102, fixture_path("pie"), PIE_START, PIE_START + 0x1000, 0x1000, 7);
	check_mapping(e, 102, lib, 0x100000000ull, 0x100001000ull, 0x1000, 7);
	assert_non_null(
		k_mapping(&e->k, 102, 0x100000000ull + (UNWIND_MAX_MAPS - 2) * 0x2000ull, &m));
	assert_null(k_mapping(&e->k, 102, 0x100000000ull + (UNWIND_MAX_MAPS - 1) * 0x2000ull, &m));
	assert_int_equal(last[1023], 1);
	assert_non_null(strstr(last, "process 102 has 33001 executable mappings"));
	assert_non_null(strstr(last, "limit of 32768"));
	assert_non_null(strstr(last, "libfix.so the most"));
	unwinder__stats(u, &st);
	assert_int_equal(st.maps_lost, n + 1 - UNWIND_MAX_MAPS);
	/* Re-read (a refresh): neither counted nor said again. */
	usleep(300000);
	assert_int_equal(unwinder__refresh(u, &PROC_ID(102, 5002 * TICK_NS, 1)), 0);
	unwinder__stats(u, &st);
	assert_int_equal(st.maps_lost, n + 1 - UNWIND_MAX_MAPS);
	assert_int_equal(last[1023], 1);
	unwinder__free(u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_install_and_lookup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tables_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(test_split_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refresh_after_dlopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pid_reuse_exec_and_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eviction_and_install_ahead, setup, teardown),
		cmocka_unit_test_setup_teardown(test_files_without_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(test_over_the_mapping_limit, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
