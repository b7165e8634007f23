# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
#
# make              build build/bpfprof
# make test         install what tests need, then every suite (lint, unit, ASan+UBSan,
#                   fuzz, integration)
# make demo         install what is missing, build, profile this machine for 10 s
# make vmlinux      regenerate vmlinux/$(ARCH)/vmlinux.h from the running kernel's BTF
# make man          render the man pages (docs/*.1.rst, rst2man) into build/man/
# make install      the binary, its man pages and tools/bpfprof.service; PREFIX
#                   (/usr/local), DESTDIR, BINDIR, MANDIR, SYSTEMDUNITDIR
# make uninstall    remove exactly what make install installs (same variables)
# make V=1          show the commands
#
# Layout of build/: obj/ objects, libcore.a (everything but main and the
# collector's libbpf users: no libbpf, testable without root), tests/ unit tests, fixtures/
# ELF fixtures, workloads/ test workloads, asan/ and fuzz/ sub-builds.

.DELETE_ON_ERROR:
.SECONDARY: # keep intermediates (build/*.bpf.o) between runs
.SUFFIXES:

OUT	?= build
ARCH	?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' \
			-e 's/s390x/s390/' -e 's/riscv64/riscv/' -e 's/loongarch64/loongarch/')
VMLINUX	:= vmlinux/$(ARCH)/vmlinux.h
CLANG	?= clang
BPFTOOL	?= bpftool
CC	?= cc
AR	?= ar
PYTHON	?= /usr/bin/python3

VERSION	:= $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GITREV	:= $(shell git describe --always --dirty 2>/dev/null || echo unknown)

WARNINGS := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter \
	    -Wformat=2 -Wno-format-nonliteral
CFLAGS	?= -O2 -g
EXTRA_CFLAGS ?=
EXTRA_LDFLAGS ?=
BPF_EXTRA_CFLAGS ?= # e.g. -DBPFPROF_TIMING (tools/bench_breakdown.py)
ALL_CFLAGS := -std=gnu11 -D_GNU_SOURCE $(WARNINGS) -Isrc -Ibpf -I$(OUT) $(CFLAGS) $(EXTRA_CFLAGS) \
	      -DBPFPROF_VERSION='"$(VERSION) ($(GITREV))"' -MMD -MP
# capstone (annotate) and libcurl (push) are loaded on first use, not linked
# (src/base/dynlib.h): their sonames, from the development links the build has.
soname = $(shell objdump -p "$$($(CC) -print-file-name=lib$(1).so)" 2>/dev/null | awk '/SONAME/ {print $$2}')
CAPSTONE_SONAME := $(call soname,capstone)
CURL_SONAME := $(call soname,curl)
ALL_CFLAGS += $(if $(CAPSTONE_SONAME),-DCAPSTONE_SONAME='"$(CAPSTONE_SONAME)"') \
	      $(if $(CURL_SONAME),-DCURL_SONAME='"$(CURL_SONAME)"')
LDLIBS_CORE := -lncursesw -ltinfo -ldw -lelf -lz -llzma -lzstd -liberty -lm -lcap -lpthread
LDLIBS_BPF  := -lbpf

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# The collector's files that use libbpf and the skeletons (collector_int.h).
LIBBPF_SRCS := $(addprefix src/collector/,collector.c deadline.c open_load.c kwalk.c prefill.c events.c \
		 offcpu.c drain.c stats.c unwind_kops.c count.c \
		 alloc.c uprobe.c execstop.c)
LIBBPF_OBJS := $(patsubst src/%.c,$(OUT)/obj/%.o,$(LIBBPF_SRCS))
CORE_SRCS := $(filter-out src/cmd/main.c $(LIBBPF_SRCS),$(wildcard src/*/*.c))
CORE_OBJS := $(patsubst src/%.c,$(OUT)/obj/%.o,$(CORE_SRCS))
MAIN_OBJS := $(OUT)/obj/cmd/main.o $(LIBBPF_OBJS)
BPF_OBJ   := $(OUT)/profile.bpf.o
SKEL	  := $(OUT)/profile.skel.h
KREAD_SKEL := $(OUT)/kread.skel.h

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
FIXTURE_SRCS := $(wildcard tests/unit/fixtures/*.c)
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOADS := $(patsubst tests/workloads/%.c,$(OUT)/workloads/%,$(WORKLOAD_SRCS))
WORKLOADS += $(patsubst tests/workloads/%.cc,$(OUT)/workloads/%,$(wildcard tests/workloads/*.cc))
WORKLOADS += $(OUT)/workloads/execa $(OUT)/workloads/execb $(OUT)/workloads/fakesbcl_new
WORKLOADS += $(OUT)/workloads/fakesbcl_alloc_new $(OUT)/workloads/fakesbcl_attach
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)

.PHONY: all
all: $(OUT)/bpfprof

SRC_DIRS  := $(patsubst src/%,$(OUT)/obj/%,$(wildcard src/*))

$(OUT) $(OUT)/obj $(SRC_DIRS) $(OUT)/gen $(OUT)/tests $(OUT)/fixtures $(OUT)/workloads:
	$(Q)mkdir -p $@

# --- BPF ------------------------------------------------------------------
$(OUT)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(VMLINUX) | $(OUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(dir $(VMLINUX)) -Ibpf \
		-Wall -Werror $(BPF_EXTRA_CFLAGS) -c $< -o $@

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@

.PHONY: vmlinux
vmlinux:
	$(Q)tools/gen-vmlinux.sh $(VMLINUX)

# --- userspace ------------------------------------------------------------
$(OUT)/obj/%.o: src/%.c | $(OUT)/obj $(SRC_DIRS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# The flame graph's script, compiled into svg.o as a C string. It goes into a
# CDATA section, so it must not contain "]]>".
$(OUT)/gen/flamegraph_js.h: src/format/flamegraph.js | $(OUT)/gen
	$(call msg,GEN,$@)
	$(Q)! grep -q ']]>' $< || { echo "$<: contains ]]>" >&2; exit 1; }
	$(Q){ echo '/* Generated from $< by the Makefile. */'; \
	      echo 'static const char flamegraph_js[] ='; \
	      sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; \
	      echo ';'; } > $@
$(OUT)/obj/format/svg.o: $(OUT)/gen/flamegraph_js.h

$(LIBBPF_OBJS): $(SKEL) $(KREAD_SKEL) $(OUT)/count.skel.h $(OUT)/alloc.skel.h

$(OUT)/libcore.a: $(CORE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(OUT)/bpfprof: $(MAIN_OBJS) $(OUT)/libcore.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(EXTRA_LDFLAGS) $^ $(LDLIBS_BPF) $(LDLIBS_CORE) -o $@

# --- tests ----------------------------------------------------------------
$(OUT)/tests/test_%: tests/unit/test_%.c tests/unit/testutil.h $(OUT)/libcore.a | $(OUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit $< $(OUT)/libcore.a $(EXTRA_LDFLAGS) -lcmocka \
		$(LDLIBS_CORE) -o $@

# ELF fixtures for the symbolizer tests, built at test time with known layouts.
FIXTURES := $(OUT)/fixtures/pie $(OUT)/fixtures/nopie $(OUT)/fixtures/libfix.so \
	    $(OUT)/fixtures/stripped
$(OUT)/fixtures/pie: tests/unit/fixtures/prog.c | $(OUT)/fixtures
	$(Q)$(CC) -O0 -g -fPIE -pie $< -o $@
$(OUT)/fixtures/nopie: tests/unit/fixtures/prog.c | $(OUT)/fixtures
	$(Q)$(CC) -O0 -g -fno-pie -no-pie $< -o $@
$(OUT)/fixtures/libfix.so: tests/unit/fixtures/lib.c | $(OUT)/fixtures
	$(Q)$(CC) -O0 -g -fPIC -shared $< -o $@
$(OUT)/fixtures/stripped: $(OUT)/fixtures/pie
	$(Q)strip -s $< -o $@
# IBT build: PLT stubs in .plt.sec, lazy-binding halves in .plt.
FIXTURES += $(OUT)/fixtures/pie-ibt
$(OUT)/fixtures/pie-ibt: tests/unit/fixtures/prog.c | $(OUT)/fixtures
	$(Q)$(CC) -O0 -g -fPIE -pie -fcf-protection=full -Wl,-z,ibtplt $< -o $@

# Unwind table fixtures: every CFI rule kind (hand-written), with and without
# .eh_frame_hdr; CFI only in .debug_frame; no CFI at all.
FIXTURES += $(addprefix $(OUT)/fixtures/,libcfi.so libcfi-nohdr.so libfix-dbgframe.so libnocfi.so \
	    libcfi-hugereg.so)
$(OUT)/fixtures/libcfi-hugereg.so: tests/unit/fixtures/cfi_hugereg.S | $(OUT)/fixtures
	$(Q)$(CC) -shared -nostdlib -Wl,-z,noexecstack $< -o $@
$(OUT)/fixtures/libcfi.so: tests/unit/fixtures/cfi.S | $(OUT)/fixtures
	$(Q)$(CC) -shared -nostdlib -Wl,-z,noexecstack $< -o $@
$(OUT)/fixtures/libcfi-nohdr.so: tests/unit/fixtures/cfi.S | $(OUT)/fixtures
	$(Q)$(CC) -shared -nostdlib -Wl,-z,noexecstack -Wl,--no-eh-frame-hdr $< -o $@
$(OUT)/fixtures/libfix-dbgframe.so: tests/unit/fixtures/lib.c | $(OUT)/fixtures
	$(Q)$(CC) -O0 -g -fPIC -shared -nostdlib -fno-asynchronous-unwind-tables -fno-unwind-tables \
		$< -o $@
$(OUT)/fixtures/libnocfi.so: tests/unit/fixtures/lib.c | $(OUT)/fixtures
	$(Q)$(CC) -O0 -fPIC -shared -nostdlib -fno-asynchronous-unwind-tables -fno-unwind-tables \
		$< -o $@
# Separate debug info fixtures: a stripped PIE with a build id and a
# .gnu_debuglink to dbgprog.debug (objcopy --only-keep-debug, as Debian's
# -dbgsym packages are made), and one with MiniDebugInfo (Fedora's recipe:
# the local function symbols, xz-compressed into .gnu_debugdata).
FIXTURES += $(OUT)/fixtures/dbgprog $(OUT)/fixtures/dbgprog.debug $(OUT)/fixtures/minidebug \
	    $(OUT)/fixtures/cxx
$(OUT)/fixtures/dbgprog.full: tests/unit/fixtures/prog.c | $(OUT)/fixtures
	$(Q)$(CC) -O0 -g -fPIE -pie -Wl,--build-id=sha1 $< -o $@
$(OUT)/fixtures/dbgprog.debug: $(OUT)/fixtures/dbgprog.full
	$(Q)objcopy --only-keep-debug $< $@
$(OUT)/fixtures/dbgprog: $(OUT)/fixtures/dbgprog.full $(OUT)/fixtures/dbgprog.debug
	$(Q)strip -s $< -o $@.tmp && cd $(dir $@) && \
		objcopy --add-gnu-debuglink=dbgprog.debug $(notdir $@).tmp $(notdir $@) && rm -f $(notdir $@).tmp
$(OUT)/fixtures/minidebug: $(OUT)/fixtures/dbgprog.full
	$(Q)set -e; d=$@.d.tmp; rm -rf $$d; mkdir -p $$d; \
	nm -D $< --format=posix --defined-only | awk '{ print $$1 }' | sort > $$d/dynsyms; \
	nm $< --format=posix --defined-only | awk '{ if ($$2 == "T" || $$2 == "t") print $$1 }' | sort > $$d/funcsyms; \
	comm -13 $$d/dynsyms $$d/funcsyms > $$d/keep; \
	objcopy --only-keep-debug $< $$d/mini; \
	objcopy -S --remove-section .comment --keep-symbols=$$d/keep $$d/mini $$d/mini2; \
	xz -f $$d/mini2; \
	strip -s -R .comment $< -o $$d/bin; \
	objcopy --add-section .gnu_debugdata=$$d/mini2.xz $$d/bin $@; rm -rf $$d
$(OUT)/fixtures/cxx: tests/unit/fixtures/cxx.cc | $(OUT)/fixtures
	$(Q)$(CLANG)++ -O1 -g $< -o $@
# Inlined functions at -O2 (dwinline): clang's DWARF 5, gcc's DWARF 4 with
# compressed sections, and the first's debug file alone.
FIXTURES += $(addprefix $(OUT)/fixtures/,inlined5 inlined4z inlined5.debug)
$(OUT)/fixtures/inlined5: tests/unit/fixtures/inlined.c | $(OUT)/fixtures
	$(Q)$(CLANG) -O2 -g -gdwarf-5 $< -o $@
$(OUT)/fixtures/inlined4z: tests/unit/fixtures/inlined.c | $(OUT)/fixtures
	$(Q)gcc -O2 -g -gdwarf-4 -gz $< -o $@
$(OUT)/fixtures/inlined5.debug: $(OUT)/fixtures/inlined5
	$(Q)objcopy --only-keep-debug $< $@

# dwz'd copies of the inlined fixture (dwzalt): two programs sharing
# dwz/common.dwz, which holds heavy's and light's names; their
# .gnu_debugaltlink is the relative "common.dwz". Without dwz: an empty
# dwz/a (test_dwzalt skips what needs it).
FIXTURES += $(OUT)/fixtures/dwz/a
$(OUT)/fixtures/dwz/a: tests/unit/fixtures/inlined.c | $(OUT)/fixtures
	$(Q)rm -rf $(dir $@) && mkdir -p $(dir $@)
	$(Q)if command -v dwz >/dev/null; then \
		gcc -O2 -g -gdwarf-4 $< -o $(dir $@)a.tmp && cp $(dir $@)a.tmp $(dir $@)b && \
		cd $(dir $@) && dwz -m common.dwz -M common.dwz a.tmp b && mv a.tmp a; \
	else : > $@; fi

# CPython 3.11's structures as the installed headers lay them out (python3.11-dev).
FIXTURES += $(OUT)/fixtures/py311_offsets
$(OUT)/fixtures/py311_offsets: tests/unit/fixtures/py311_offsets.c | $(OUT)/fixtures
	$(Q)$(CC) -O0 -I/usr/include/python3.11 $< -o $@
# A python3.11 whose interpreter is the shared libpython3.11.so (python3.11-dev).
FIXTURES += $(OUT)/fixtures/pyshared/python3.11 $(OUT)/fixtures/stopatload.so
$(OUT)/fixtures/stopatload.so: tests/unit/fixtures/stopatload.c | $(OUT)/fixtures
	$(Q)$(CC) -O2 -fPIC -shared $< -o $@
$(OUT)/fixtures/pyshared/python3.11: tests/unit/fixtures/pyshared.c | $(OUT)/fixtures
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) -O2 $< -o $@ -lpython3.11

# Workloads for the integration tests: clang keeps leaf frame pointers.
WL_CFLAGS := -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline-functions \
	     -fno-optimize-sibling-calls
$(OUT)/workloads/%: tests/workloads/%.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CLANG) $(WL_CFLAGS) $< -o $@ -lpthread -lm
$(OUT)/workloads/%: tests/workloads/%.cc | $(OUT)/workloads
	$(call msg,CXX,$@)
	$(Q)$(CLANG)++ $(WL_CFLAGS) $< -o $@ -lpthread
# Two programs from one source, identical layout, different names: an exec
# from one into the other must never lend the second's names to the first.
$(OUT)/workloads/exec%: tests/workloads/exec/execpair.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CLANG) $(WL_CFLAGS) -DWHO=$* $< -o $@
$(OUT)/workloads/libwl.so: tests/workloads/lib/libwl.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CLANG) $(WL_CFLAGS) -fPIC -shared $< -o $@
# Links libpython3.11 (python3.11-dev), never starts the interpreter.
$(OUT)/workloads/pylinked: tests/workloads/pylinked.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CLANG) $(WL_CFLAGS) $< -o $@ -lpython3.11
$(OUT)/workloads/pieapp: tests/workloads/pieapp.c $(OUT)/workloads/libwl.so | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CLANG) $(WL_CFLAGS) -fPIE -pie $< -o $@ -L$(OUT)/workloads -lwl -Wl,-rpath,'$$ORIGIN'

# The Go workload, with symbols and stripped as Go releases ship (-s -w).
GO ?= go
GO_WORKLOADS := $(OUT)/workloads/gohot $(OUT)/workloads/gohot-stripped
$(OUT)/workloads/gohot: tests/workloads/gohot/main.go tests/workloads/gohot/go.mod | $(OUT)/workloads
	$(call msg,GO,$@)
	$(Q)cd tests/workloads/gohot && $(GO) build -o $(abspath $@) .
$(OUT)/workloads/gohot-stripped: tests/workloads/gohot/main.go tests/workloads/gohot/go.mod | $(OUT)/workloads
	$(call msg,GO,$@)
	$(Q)cd tests/workloads/gohot && $(GO) build -ldflags='-s -w' -o $(abspath $@) .
# issue 39's allocation-heavy Go program (tools/bench_alloc.py go), its
# runtime sampling on (runtime.MemProfile linked), stripped, and off.
GOALLOC_SRCS := $(wildcard tests/workloads/goalloc/*.go) tests/workloads/goalloc/go.mod
GO_WORKLOADS += $(addprefix $(OUT)/workloads/,goalloc goalloc-stripped goalloc-nomemprof)
$(OUT)/workloads/goalloc: $(GOALLOC_SRCS) | $(OUT)/workloads
	$(call msg,GO,$@)
	$(Q)cd tests/workloads/goalloc && $(GO) build -o $(abspath $@) .
$(OUT)/workloads/goalloc-stripped: $(GOALLOC_SRCS) | $(OUT)/workloads
	$(call msg,GO,$@)
	$(Q)cd tests/workloads/goalloc && $(GO) build -ldflags='-s -w' -o $(abspath $@) .
$(OUT)/workloads/goalloc-nomemprof: $(GOALLOC_SRCS) | $(OUT)/workloads
	$(call msg,GO,$@)
	$(Q)cd tests/workloads/goalloc && $(GO) build -tags nomemprof -o $(abspath $@) .
# gobucket: the runtime's bucket list forged, a package goforge and gowalk
# share (a local module: their go.mod replaces it by its directory, offline).
GOBUCKET_SRCS := tests/workloads/gobucket/gobucket.go tests/workloads/gobucket/go.mod
# A tenant's Go program that forges the profile buckets bpfprof --alloc reads.
GO_WORKLOADS += $(OUT)/workloads/goforge
$(OUT)/workloads/goforge: tests/workloads/goforge/main.go tests/workloads/goforge/go.mod $(GOBUCKET_SRCS) | $(OUT)/workloads
	$(call msg,GO,$@)
	$(Q)cd tests/workloads/goforge && $(GO) build -o $(abspath $@) .
# A tenant's Go program handing the probed path thousands of forged buckets
# with stacks of their own (test_gofair: one cgroup's share of Go's stacks).
GO_WORKLOADS += $(OUT)/workloads/goflood
$(OUT)/workloads/goflood: tests/workloads/goflood/main.go tests/workloads/goflood/go.mod | $(OUT)/workloads
	$(call msg,GO,$@)
	$(Q)cd tests/workloads/goflood && $(GO) build -o $(abspath $@) .
# Go programs for review9's F1 (a bucket list that cannot be walked to its
# end) and F2 (an exit right after the last allocations).
GO_WORKLOADS += $(OUT)/workloads/gowalk $(OUT)/workloads/goexit
$(OUT)/workloads/gowalk: tests/workloads/gowalk/main.go tests/workloads/gowalk/go.mod $(GOBUCKET_SRCS) | $(OUT)/workloads
	$(call msg,GO,$@)
	$(Q)cd tests/workloads/gowalk && $(GO) build -o $(abspath $@) .
$(OUT)/workloads/goexit: tests/workloads/goexit/main.go tests/workloads/goexit/go.mod | $(OUT)/workloads
	$(call msg,GO,$@)
	$(Q)cd tests/workloads/goexit && $(GO) build -o $(abspath $@) .

# Workloads for the annotate tests: one hot instruction, a C and a C++ template
# function; their DWARF moved to NAME.debug beside them (.gnu_debuglink), the
# binaries keep their symbol tables, as strip --strip-debug leaves them.
ANN_WORKLOADS := $(addprefix $(OUT)/workloads/,annloop annloop.debug anntpl anntpl.debug)
$(OUT)/workloads/annloop.full: tests/workloads/annotate/annloop.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CLANG) $(WL_CFLAGS) $< -o $@
$(OUT)/workloads/anntpl.full: tests/workloads/annotate/anntpl.cc | $(OUT)/workloads
	$(call msg,CXX,$@)
	$(Q)$(CLANG)++ $(WL_CFLAGS) $< -o $@
$(OUT)/workloads/%.debug: $(OUT)/workloads/%.full
	$(Q)objcopy --only-keep-debug $< $@
$(OUT)/workloads/annloop $(OUT)/workloads/anntpl: $(OUT)/workloads/%: $(OUT)/workloads/%.full \
		$(OUT)/workloads/%.debug
	$(Q)cd $(dir $@) && strip --strip-debug $*.full -o $*.tmp && \
		objcopy --add-gnu-debuglink=$*.debug $*.tmp $* && rm -f $*.tmp

# Workloads for the unwinder tests, built the way distributions build code
# (gcc -O2, no frame pointers, .eh_frame only), except uw_mixed's own code:
# frame pointers and no unwind tables at all (no -g: no .debug_frame either).
UW_NOFP := -O2 -g -fomit-frame-pointer -fno-inline -fno-optimize-sibling-calls
UW_WORKLOADS := $(addprefix $(OUT)/workloads/,uw_mixed libuw_nofp.so uw_leaf uw_dlopen \
		libuw_plugin.so uw_maps uw_signal uw_switch)
$(OUT)/workloads/libuw_%.so: tests/workloads/unwind/%.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) $(UW_NOFP) -fPIC -shared $< -o $@
$(OUT)/workloads/libuw_nofp.so: tests/workloads/unwind/nofp_lib.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) $(UW_NOFP) -fPIC -shared $< -o $@
$(OUT)/workloads/uw_mixed: tests/workloads/unwind/mixed.c $(OUT)/workloads/libuw_nofp.so
	$(call msg,CC,$@)
	$(Q)$(CLANG) -O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline-functions \
		-fno-optimize-sibling-calls -fno-asynchronous-unwind-tables -fno-unwind-tables $< -o $@ \
		-L$(OUT)/workloads -luw_nofp -Wl,-rpath,'$$ORIGIN'
$(OUT)/workloads/uw_leaf: tests/workloads/unwind/leaf.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls $< -o $@
$(OUT)/workloads/uw_dlopen: tests/workloads/unwind/dlopen.c $(OUT)/workloads/libuw_plugin.so
	$(call msg,CC,$@)
	$(Q)$(CC) $(UW_NOFP) $< -o $@ -ldl
$(OUT)/workloads/uw_%: tests/workloads/unwind/%.c | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) $(UW_NOFP) $< -o $@

# A tenant's fake SBCL runtime (tests/integration/test_sbcl.py): its exported
# variables in .dynsym (-rdynamic), one version with a layout, one without.
$(OUT)/workloads/fakesbcl: tests/workloads/fakesbcl.c tests/workloads/fakesbcl.h | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -rdynamic -pthread $< -o $@
$(OUT)/workloads/fakesbcl_new: tests/workloads/fakesbcl.c tests/workloads/fakesbcl.h | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -rdynamic -pthread -DFAKE_VERSION='"9.9.9"' $< -o $@
# ... and one with a dynamic space made to cost (tests/integration/test_tenant_s5.py)
$(OUT)/workloads/fakesbcl_dyn: tests/workloads/fakesbcl_dyn.c tests/workloads/fakesbcl.h | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -rdynamic -pthread $< -o $@
# ... and one that passes for an executable saved with its core
# (tests/integration/test_sbcl2.py).
$(OUT)/workloads/fakesbcl_exe: tests/workloads/fakesbcl_exe.c tests/workloads/fakesbcl.h | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -rdynamic -pthread $< -o $@

# ... and one that passes for 2.2.9 to --alloc (tests/integration/test_allocsbcl.py),
# with a twin of a release without a layout.
$(OUT)/workloads/fakesbcl_alloc: tests/workloads/fakesbcl_alloc.c tests/workloads/fakesbcl.h | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -rdynamic $< -o $@
$(OUT)/workloads/fakesbcl_alloc_new: tests/workloads/fakesbcl_alloc.c tests/workloads/fakesbcl.h | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -rdynamic -DFAKE_VERSION='"9.9.9"' $< -o $@
# ... and one that passes every check but whose probe the kernel refuses
# (tests/integration/test_allocsbcl2.py).
$(OUT)/workloads/fakesbcl_attach: tests/workloads/fakesbcl_alloc.c tests/workloads/fakesbcl.h | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -rdynamic -DFAKE_ATTACH_FAILS $< -o $@

# A tenant's fake HotSpot JVM (tests/integration/test_jvm.py): its exported
# gHotSpotVM* variables in .dynsym (-rdynamic).
$(OUT)/workloads/fakejvm: tests/workloads/fakejvm.c tests/workloads/fakejvm.h | $(OUT)/workloads
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -rdynamic -pthread $< -o $@

# tools/uwtable: prints the unwind table of ELF files (used by tools/bench_unwind.py).
$(OUT)/uwtable: tools/uwtable.c $(OUT)/libcore.a
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(OUT)/libcore.a $(LDLIBS_CORE) -o $@

# Symbolization benchmark harness (tools/bench_symbolize.py runs it).
$(OUT)/tools/symbench: tools/symbench.c $(OUT)/libcore.a
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(OUT)/libcore.a $(EXTRA_LDFLAGS) $(LDLIBS_CORE) -o $@

# Inlined frames and lines of many addresses (tools/bench_inlines.py runs it).
$(OUT)/tools/inlbench: tools/inlbench.c $(OUT)/libcore.a
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< $(OUT)/libcore.a $(EXTRA_LDFLAGS) $(LDLIBS_CORE) -o $@

# The least a once-a-second terminal view costs (tools/bench_top.py --floor).
$(OUT)/tools/tuifloor: tools/tuifloor.c
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $< -o $@

.PHONY: unit-tests test-deps
unit-tests: $(UNIT_BINS) $(FIXTURES) $(GO_WORKLOADS)
test-deps: all unit-tests $(WORKLOADS) $(OUT)/workloads/libwl.so $(UW_WORKLOADS) $(ANN_WORKLOADS) \
	   $(OUT)/tools/symbench $(OUT)/tools/tuifloor

# The same unit tests, and bpfprof itself (for test_hostile's churn run),
# under AddressSanitizer + UndefinedBehaviorSanitizer.
.PHONY: asan
asan:
	$(Q)$(MAKE) --no-print-directory OUT=$(OUT)/asan \
		EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		EXTRA_LDFLAGS="-fsanitize=address,undefined" unit-tests all

# libFuzzer targets: the parsers built with coverage and sanitizers.
.PHONY: fuzz
fuzz:
	$(Q)$(MAKE) --no-print-directory OUT=$(OUT)/fuzz CC=$(CLANG) CFLAGS="-O1 -g" \
		EXTRA_CFLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" \
		fuzz-bins

FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(OUT)/fuzzers/%,$(FUZZ_SRCS))
.PHONY: fuzz-bins
fuzz-bins: $(FUZZ_BINS)
$(OUT)/fuzzers/%: tests/fuzz/%.c $(OUT)/libcore.a
	$(Q)mkdir -p $(dir $@)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer,address,undefined $< $(OUT)/libcore.a \
		$(LDLIBS_CORE) -o $@

# make test first installs what the tests need (tools/install-deps.sh: a
# second when nothing is missing), so it works on a fresh machine before or
# after make demo; TEST_DEPS=no skips that step (offline, no root).
.PHONY: test check test-setup
test-setup:
ifneq ($(TEST_DEPS),no)
	$(Q)tools/install-deps.sh
endif
test check: test-setup
	$(Q)$(MAKE) --no-print-directory test-deps asan fuzz
	$(Q)OUT=$(OUT) PYTHON=$(PYTHON) tests/run

.PHONY: demo
demo:
	$(Q)tools/demo.sh

# --- man pages, install ---------------------------------------------------
# Man page sources are reStructuredText in docs/, rendered by rst2man
# (python3-docutils), as bpftool's are; tests/lint/manpages.py checks that
# every command has one naming every option of its --help. "bpfprof record"
# is bpfprof(1): bpfprof-record(1) is a .so link to it.
RST2MAN	?= rst2man
MAN_SRCS  := $(wildcard docs/*.1.rst)
MAN_NAMES := $(patsubst docs/%.rst,%,$(MAN_SRCS)) bpfprof-record.1
MAN_PAGES := $(addprefix $(OUT)/man/,$(MAN_NAMES))

.PHONY: man
man: $(MAN_PAGES)

$(OUT)/man:
	$(Q)mkdir -p $@

$(OUT)/man/%.1: docs/%.1.rst Makefile | $(OUT)/man
	$(call msg,RST2MAN,$@)
	$(Q)command -v $(RST2MAN) >/dev/null || \
		{ echo "$(RST2MAN) not found: install python3-docutils (tools/install-deps.sh build)" >&2; exit 1; }
	$(Q)$(RST2MAN) --halt=warning $< $@.tmp
	$(Q)sed 's/@VERSION@/$(VERSION)/g' $@.tmp > $@ && rm -f $@.tmp

$(OUT)/man/bpfprof-record.1: | $(OUT)/man
	$(Q)echo '.so man1/bpfprof.1' > $@

# GNU conventions: PREFIX (or prefix) and DESTDIR for staged installs, as
# packagers use them. Man pages go in uncompressed, as bpftool, perf and git
# install theirs: man reads both, and packaging compresses them itself
# (dh_compress, brp-compress). The unit's ExecStart is pointed at BINDIR.
PREFIX	?= /usr/local
prefix	?= $(PREFIX)
BINDIR	?= $(prefix)/bin
MANDIR	?= $(prefix)/share/man
SYSTEMDUNITDIR ?= $(prefix)/lib/systemd/system
INSTALL	?= install

.PHONY: install uninstall
install: $(OUT)/bpfprof man
	$(call msg,INSTALL,$(DESTDIR)$(BINDIR)/bpfprof)
	$(Q)$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(SYSTEMDUNITDIR)
	$(Q)$(INSTALL) -m 0755 $(OUT)/bpfprof $(DESTDIR)$(BINDIR)/bpfprof
	$(call msg,INSTALL,$(addprefix $(DESTDIR)$(MANDIR)/man1/,$(MAN_NAMES)))
	$(Q)$(INSTALL) -m 0644 $(MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/
	$(call msg,INSTALL,$(DESTDIR)$(SYSTEMDUNITDIR)/bpfprof.service)
	$(Q)sed 's|^ExecStart=[^ ]*/bpfprof |ExecStart=$(BINDIR)/bpfprof |' tools/bpfprof.service \
		> $(OUT)/bpfprof.service
	$(Q)grep -q '^ExecStart=$(BINDIR)/bpfprof ' $(OUT)/bpfprof.service || \
		{ echo "install: tools/bpfprof.service has no ExecStart=.../bpfprof line to rewrite" >&2; exit 1; }
	$(Q)$(INSTALL) -m 0644 $(OUT)/bpfprof.service $(DESTDIR)$(SYSTEMDUNITDIR)/bpfprof.service

uninstall:
	$(call msg,RM,$(DESTDIR)$(BINDIR)/bpfprof and its man pages and unit)
	$(Q)rm -f $(DESTDIR)$(BINDIR)/bpfprof $(addprefix $(DESTDIR)$(MANDIR)/man1/,$(MAN_NAMES)) \
		$(DESTDIR)$(SYSTEMDUNITDIR)/bpfprof.service

.PHONY: clean
clean:
	$(Q)rm -rf $(OUT)

.PHONY: format
format:
	$(Q)$$(command -v clang-format-14 || echo clang-format) -i $(wildcard src/*/*.[ch] bpf/*.[ch] tests/unit/*.[ch] tests/fuzz/*.c)

-include $(wildcard $(OUT)/obj/*/*.d $(OUT)/tests/*.d)
