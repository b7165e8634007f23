// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/* caps.c - capability checks and dropping, with libcap; see caps.h. */
#include "proc/caps.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif
#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

static bool has(cap_t c, cap_value_t v)
{
	cap_flag_value_t f = CAP_CLEAR;

	if (v > CAP_LAST_CAP && !CAP_IS_SUPPORTED(v))
		return false;
	return cap_get_flag(c, v, CAP_EFFECTIVE, &f) == 0 && f == CAP_SET;
}

void caps__check(struct caps_report *r)
{
	cap_t c = cap_get_proc();
	bool admin;

	memset(r, 0, sizeof(*r));
	if (!c)
		return;
	admin = has(c, CAP_SYS_ADMIN);
	r->can_bpf = admin || has(c, CAP_BPF);
	r->can_perfmon = admin || has(c, CAP_PERFMON);
	r->can_ptrace = has(c, CAP_SYS_PTRACE);
	r->can_syslog = has(c, CAP_SYSLOG);
	r->can_map_files = admin || has(c, CAP_CHECKPOINT_RESTORE);
	snprintf(r->missing, sizeof(r->missing), "%s%s%s", r->can_bpf ? "" : "CAP_BPF",
		 !r->can_bpf && !r->can_perfmon ? " and " : "",
		 r->can_perfmon ? "" : "CAP_PERFMON");
	cap_free(c);
}

int caps__drop_after_attach(bool keep_dac_override)
{
	/* Still needed: map reads (bpf() checks CAP_BPF per call when unprivileged
	 * BPF is disabled), /proc of other processes, kallsyms, map_files. */
	static const cap_value_t keep[] = {
		CAP_BPF, CAP_SYS_PTRACE, CAP_SYSLOG, CAP_CHECKPOINT_RESTORE, CAP_DAC_READ_SEARCH,
	};
	cap_t cur = cap_get_proc(), next = cap_init();
	int err = 0;

	if (!cur || !next) {
		err = -errno;
		goto out;
	}
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		cap_flag_value_t f = CAP_CLEAR;

		if (!CAP_IS_SUPPORTED(keep[i]))
			continue;
		if (cap_get_flag(cur, keep[i], CAP_PERMITTED, &f) || f != CAP_SET)
			continue;
		cap_set_flag(next, CAP_PERMITTED, 1, &keep[i], CAP_SET);
		cap_set_flag(next, CAP_EFFECTIVE, 1, &keep[i], CAP_SET);
	}
	if (keep_dac_override) {
		cap_value_t d = CAP_DAC_OVERRIDE;
		cap_flag_value_t f = CAP_CLEAR;

		if (!cap_get_flag(cur, d, CAP_PERMITTED, &f) && f == CAP_SET) {
			cap_set_flag(next, CAP_PERMITTED, 1, &d, CAP_SET);
			cap_set_flag(next, CAP_EFFECTIVE, 1, &d, CAP_SET);
		}
	}
	/* Kernels before CAP_BPF (5.8) need CAP_SYS_ADMIN for map access, before
	 * CAP_CHECKPOINT_RESTORE (5.9) for map_files: keep it there. */
	if (!CAP_IS_SUPPORTED(CAP_BPF) || !CAP_IS_SUPPORTED(CAP_CHECKPOINT_RESTORE)) {
		cap_value_t a = CAP_SYS_ADMIN;

		cap_set_flag(next, CAP_PERMITTED, 1, &a, CAP_SET);
		cap_set_flag(next, CAP_EFFECTIVE, 1, &a, CAP_SET);
	}
	if (cap_set_proc(next))
		err = -errno;
out:
	if (cur)
		cap_free(cur);
	if (next)
		cap_free(next);
	return err;
}

unsigned long long caps__effective(void)
{
	unsigned long long mask = 0;
	cap_t c = cap_get_proc();

	if (!c)
		return 0;
	for (cap_value_t v = 0; v <= 63; v++)
		if (CAP_IS_SUPPORTED(v) && has(c, v))
			mask |= 1ULL << v;
	cap_free(c);
	return mask;
}
