# profilefs: one Makefile for the whole tree. Objects go under build/,
# the binary to bin/profilefs. `make V=1` shows commands, `make SANITIZE=address,undefined`
# builds an instrumented binary, `make WERROR=1` (as CI does) turns warnings into errors.
# CFLAGS, CPPFLAGS, LDFLAGS and LDLIBS given by the user are added to the project's own;
# building with other flags than last time rebuilds everything. Plain `make` builds
# the daemon only; `make tests` builds the unit tests (cmocka), fuzz replays and
# tools; `make check` builds both and runs the test suite (tests/run.sh) against
# this build. Header dependencies come from the compiler (-MMD): touching a header
# rebuilds only what includes it. tests/integration/layers.sh checks what this
# file promises.
#
# The code is layered; each layer is one directory, one archive and one public
# header, and is compiled with the public headers of the layers below it only,
# so including another layer's internal header fails the build:
#
#   base/              buffers, arenas, interning, logging, metrics, labels, clocks;
#                      RE2 for the matchers (re2shim.cc, the tree's one C++ file)
#   pprof/             the pprof model: codec, merge, diff        (base)
#   store/             RocksDB storage and range queries          (base, pprof)
#   render/            flame graphs, folded stacks, top, timelines (base, pprof)
#   query/             what fs/ and api/ both ask: services, merges (base, pprof, store)
#   cluster/           ClickHouse: shipping, reads of the fleet   (base, pprof, store)
#   fs/                the FUSE tree and its ingest directory     (base, pprof, store, render, query)
#   api/               the HTTP API: push and query over HTTP     (base, pprof, store, render, query)
#   collector/ebpf/    the eBPF agent, runtimes/ per language     (base, pprof, store; -Ibpf)
#   collector/scrape/  the Go /debug/pprof scraper                (base, pprof, store)
#   main/              the program: flags, wiring, signals        (every public header)
#
# fs/ and api/ are two views of the store side by side: neither includes the
# other, and what they both answer they ask query/. The producers
# (collector/*) see no view. Only store/ sees RocksDB's header; only the
# agent sees bpf/.

VERSION := 0.1.0
COMMIT  := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

CC      ?= cc
CXX     ?= c++
CFLAGS  ?= -O2 -g
CXXFLAGS ?= -O2 -g
PKGS    := fuse3 libprotobuf-c zlib libmicrohttpd libcurl libcrypto libbpf libelf libdw liblzma jansson re2 \
           libsystemd
# pkg-config runs once per make invocation (simple assignment).
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))

PF_CFLAGS := -std=gnu11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -fno-omit-frame-pointer -pthread -D_FILE_OFFSET_BITS=64 \
           -DPROFILEFS_VERSION='"$(VERSION)"' -DPROFILEFS_COMMIT='"$(COMMIT)"' $(PKG_CFLAGS)
# C++ only where a library speaks nothing else: base/re2shim.cc wraps RE2
# behind a C interface (the one reason for libstdc++ in the link).
PF_CXXFLAGS := -std=c++17 -Wall -Wextra -Wshadow -fno-omit-frame-pointer -pthread \
           -D_FILE_OFFSET_BITS=64 $(PKG_CFLAGS)
PF_LDLIBS := $(PKG_LIBS) -lrocksdb -liberty -lstdc++ -lpthread -lm
ifdef WERROR
PF_CFLAGS += -Werror
PF_CXXFLAGS += -Werror
endif
ifdef SANITIZE
PF_CFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
PF_CXXFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
PF_LDFLAGS := -fsanitize=$(SANITIZE)
endif
ALL_CXXFLAGS = $(PF_CXXFLAGS) $(CPPFLAGS) $(CXXFLAGS)
ALL_CFLAGS  = $(PF_CFLAGS) $(CPPFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(PF_LDFLAGS) $(LDFLAGS)
ALL_LDLIBS  = $(PF_LDLIBS) $(LDLIBS)

# Out-of-tree builds: make O=/tmp/x puts objects in /tmp/x/build and the binary in /tmp/x/bin.
O       ?= .
B       := $(O)/build
BIN     := $(O)/bin

# Two makes may run in one tree at once (an editor's and a terminal's): what
# a rule writes goes to a name of this make's own ($@$(TMP_SUFFIX), in the
# same directory) and is renamed into place whole, so the other make never
# reads half a file (a header, an object, a .d file it includes) nor has one
# taken from under it.
TMP_SUFFIX := .$(shell echo $$PPID).tmp

# The flags the objects were built with, kept in $(B)/flags: building with
# other ones (SANITIZE=, WERROR=, CFLAGS=, ...) rebuilds everything instead of
# linking objects of two kinds together. The version and commit are left out:
# a new commit does not rebuild the tree.
FLAGS_STAMP := $(B)/flags
FLAGS_NOW   := $(CC) $(CXX) $(CXXFLAGS) $(SANITIZE) $(WERROR) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(LDLIBS) $(PKG_CFLAGS) $(PKG_LIBS)
ifneq ($(FLAGS_NOW),$(file <$(FLAGS_STAMP)))
$(shell mkdir -p $(B))
$(file >$(FLAGS_STAMP)$(TMP_SUFFIX),$(FLAGS_NOW))
$(shell mv -f $(FLAGS_STAMP)$(TMP_SUFFIX) $(FLAGS_STAMP))
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.PHONY: all clean test tests unit check layercheck tools

# --- layers ---
# A layer is named by its public header: DIR_<layer> holds <layer>.h and its
# sources (with SUBDIRS_<layer> for sources one level down).
LAYERS := base pprof store render query cluster fs api ebpf scrape main
DEPS_base   :=
DEPS_pprof  := base
DEPS_store  := base pprof
DEPS_render := base pprof
DEPS_query  := base pprof store
DEPS_cluster:= base pprof store
DEPS_fs     := base pprof store render query
DEPS_api    := base pprof store render query
DEPS_ebpf   := base pprof store
DEPS_scrape := base pprof store
DEPS_main   := base pprof store render query cluster fs api ebpf scrape
DIR_ebpf    := collector/ebpf
DIR_scrape  := collector/scrape
SUBDIRS_ebpf := collector/ebpf/runtimes
dir_of = $(or $(DIR_$(1)),$(1))

# Each layer's public header is copied alone into $(B)/pub/<layer>/, and a
# layer sees only the copies of the layers it depends on (its own headers it
# finds next to its sources).
PUB := $(B)/pub
define pub_rule
$(PUB)/$(1)/$(1).h: $(call dir_of,$(1))/$(1).h
	@mkdir -p $$(dir $$@)
	$$(Q)cp $$< $$@$$(TMP_SUFFIX) && mv -f $$@$$(TMP_SUFFIX) $$@
endef
$(foreach l,$(filter-out main,$(LAYERS)),$(eval $(call pub_rule,$(l))))
PUB_HDRS := $(foreach l,$(filter-out main,$(LAYERS)),$(PUB)/$(l)/$(l).h)

# Only the agent sees the BPF program's shared types and its skeleton.
INC_pprof  := -I$(B)/gen/pb
INC_api    := -I$(B)/gen/otlp -I$(B)/gen/api -I$(B)/gen/pb
INC_ebpf   := -Icollector/ebpf -Icollector/ebpf/runtimes -Ibpf -I$(B)/gen/bpf
layer_cflags = $(foreach d,$(DEPS_$(1)),-I$(PUB)/$(d)) $(INC_$(1))

GEN := $(B)/gen/pb/profile.pb-c.c $(B)/gen/pb/profile.pb-c.h \
       $(B)/gen/otlp/otlp.pb-c.c $(B)/gen/otlp/otlp.pb-c.h
# The Grafana query API's messages (api/proto/, importing pprof/profile.proto).
API_PROTO := api/proto/types/v1/types.proto api/proto/querier/v1/querier.proto
API_GEN_C := $(patsubst api/proto/%.proto,$(B)/gen/api/%.pb-c.c,$(API_PROTO))
API_GEN_O := $(API_GEN_C:.c=.o)
GEN += $(API_GEN_C) $(API_GEN_C:.c=.h)

src_of = $(foreach d,$(call dir_of,$(1)) $(SUBDIRS_$(1)),$(wildcard $(d)/*.c) $(wildcard $(d)/*.cc))
obj_of = $(patsubst %.cc,$(B)/%.o,$(patsubst %.c,$(B)/%.o,$(call src_of,$(1))))
LIB_LAYERS := base pprof store render query cluster fs api ebpf scrape
LIBS_LINK  := $(B)/libfs.a $(B)/libapi.a $(B)/libebpf.a $(B)/libscrape.a $(B)/libcluster.a \
              $(B)/libquery.a $(B)/librender.a $(B)/libstore.a $(B)/libpprof.a $(B)/libbase.a
SRC_DIRS   := $(foreach l,$(LAYERS),$(call dir_of,$(l)) $(SUBDIRS_$(l)))

TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(TEST_SRC))
# Fuzz harnesses linked with tests/fuzz/replay.c: they replay the corpus
# (tests/integration/fuzz-replay.sh); scripts/fuzz.sh builds them for libFuzzer.
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(patsubst tests/fuzz/%.c,$(B)/tests/%,$(FUZZ_SRC))
# Tests and tools reach into every layer, internal headers included.
TEST_INC := $(foreach d,$(filter-out main,$(SRC_DIRS)),-I$(d)) -Ibpf -I$(B)/gen/pb -I$(B)/gen/otlp \
            -I$(B)/gen/api -I$(B)/gen/bpf

# `make` builds the daemon alone (no cmocka needed); `make tests` the unit
# tests, fuzz replays and tools; `make check` both, then runs the suite.
all: $(BIN)/profilefs layercheck
tests: $(TEST_BIN) $(FUZZ_BIN) tools

# protoc_into DIR, PROTOC ARGS: protoc-c's output made in a directory of its
# own next to DIR, then each file renamed into DIR (headers first).
protoc_into = t=$$(mktemp -d $(B)/gen/.protoc.XXXXXX) && protoc-c $(2) --c_out=$$t && \
	(cd $$t && find . -type f | sort -r) | while read -r f; do \
	    mkdir -p $(1)/$$(dirname $$f) && mv -f $$t/$$f $(1)/$$f || exit 1; done; \
	rc=$$?; rm -rf $$t; exit $$rc

# pprof/profile.proto declares string_table `repeated string`, as pprof and
# Pyroscope do (so its clients and the JSON form see names); the C codec is
# made from a copy declaring it `bytes` (the same wire format), since
# protobuf-c's strings are C strings: a name holding a NUL, or not UTF-8,
# must survive decoding.
$(B)/gen/pb/profile.proto: pprof/profile.proto
	@mkdir -p $(B)/gen/pb
	$(Q)sed 's/^\(  repeated \)string\( string_table = 6;\)/\1bytes\2/' $< >$@$(TMP_SUFFIX) && \
	    grep -q '^  repeated bytes string_table = 6;' $@$(TMP_SUFFIX) && \
	    mv -f $@$(TMP_SUFFIX) $@ || { rm -f $@$(TMP_SUFFIX); exit 1; }

$(B)/gen/pb/profile.pb-c.c $(B)/gen/pb/profile.pb-c.h &: $(B)/gen/pb/profile.proto
	@echo "  PROTOC  pprof/profile.proto"
	$(Q)$(call protoc_into,$(B)/gen/pb,-I$(B)/gen/pb $<)

$(B)/gen/pb/profile.pb-c.o: $(B)/gen/pb/profile.pb-c.c $(FLAGS_STAMP)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -I$(B)/gen/pb -c -o $@$(TMP_SUFFIX) $< && \
	    mv -f $@$(TMP_SUFFIX) $@

# OpenTelemetry's profiles (the subset api/otlp.c reads): api/ alone sees them.
$(B)/gen/otlp/otlp.pb-c.c $(B)/gen/otlp/otlp.pb-c.h &: api/otlp.proto
	@mkdir -p $(B)/gen/otlp
	@echo "  PROTOC  $<"
	$(Q)$(call protoc_into,$(B)/gen/otlp,-Iapi $<)

$(B)/gen/otlp/otlp.pb-c.o: $(B)/gen/otlp/otlp.pb-c.c $(FLAGS_STAMP)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -I$(B)/gen/otlp -c -o $@$(TMP_SUFFIX) $< && \
	    mv -f $@$(TMP_SUFFIX) $@

$(API_GEN_C) $(API_GEN_C:.c=.h) &: $(API_PROTO) $(B)/gen/pb/profile.proto
	@mkdir -p $(B)/gen/api
	@echo "  PROTOC  $(API_PROTO)"
	$(Q)$(call protoc_into,$(B)/gen/api,-I$(B)/gen/pb -Iapi/proto $(API_PROTO))

$(B)/gen/api/%.pb-c.o: $(B)/gen/api/%.pb-c.c $(B)/gen/pb/profile.pb-c.h $(FLAGS_STAMP) | $(GEN)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-missing-prototypes -I$(B)/gen/api -I$(B)/gen/pb -c -o $@$(TMP_SUFFIX) $< && \
	    mv -f $@$(TMP_SUFFIX) $@

# An object depends on its source, the flags and the headers it includes as
# the compiler lists them (-MMD, in its .d file): touching a public header
# rebuilds what includes it, nothing else. The generated and copied headers
# are only made to exist first (order-only), the .d files do the rest.
define layer_rules
$(B)/$(call dir_of,$(1))/%.o: $(call dir_of,$(1))/%.c $(FLAGS_STAMP) | $(GEN) $(PUB_HDRS)
	@mkdir -p $$(dir $$@)
	@echo "  CC      $$<"
	$$(Q)$$(CC) $$(ALL_CFLAGS) $$(call layer_cflags,$(1)) -MMD -MP -MT $$@ \
	    -MF $$(@:.o=.d)$$(TMP_SUFFIX) -c -o $$@$$(TMP_SUFFIX) $$< && \
	    mv -f $$(@:.o=.d)$$(TMP_SUFFIX) $$(@:.o=.d) && mv -f $$@$$(TMP_SUFFIX) $$@
$(B)/$(call dir_of,$(1))/%.o: $(call dir_of,$(1))/%.cc $(FLAGS_STAMP) | $(GEN) $(PUB_HDRS)
	@mkdir -p $$(dir $$@)
	@echo "  CXX     $$<"
	$$(Q)$$(CXX) $$(ALL_CXXFLAGS) $$(call layer_cflags,$(1)) -MMD -MP -MT $$@ \
	    -MF $$(@:.o=.d)$$(TMP_SUFFIX) -c -o $$@$$(TMP_SUFFIX) $$< && \
	    mv -f $$(@:.o=.d)$$(TMP_SUFFIX) $$(@:.o=.d) && mv -f $$@$$(TMP_SUFFIX) $$@
endef
$(foreach l,$(LAYERS),$(eval $(call layer_rules,$(l))))

define lib_rule
$(B)/lib$(1).a: $(call obj_of,$(1)) $(2)
	@echo "  AR      $$@"
	$$(Q)rm -f $$@$$(TMP_SUFFIX) && ar rcs $$@$$(TMP_SUFFIX) $$^ && mv -f $$@$$(TMP_SUFFIX) $$@
endef
$(foreach l,$(filter-out pprof api,$(LIB_LAYERS)),$(eval $(call lib_rule,$(l))))
$(eval $(call lib_rule,pprof,$(B)/gen/pb/profile.pb-c.o))
$(eval $(call lib_rule,api,$(B)/gen/otlp/otlp.pb-c.o $(API_GEN_O)))

# The eBPF sampler: the BPF objects compiled by clang (no sanitizers, DWARF
# stripped, BTF kept for CO-RE) and a libbpf skeleton that collector/ebpf/ebpf.c
# includes. vmlinux.h: the checked-in one for the architecture (CO-RE makes it
# valid on other kernels), else generated from the build machine's BTF.
BPF_CLANG   ?= clang
BPF_STRIP   ?= llvm-strip
BPFTOOL     ?= bpftool
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_ARCH    := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
BPF_SRC     := $(wildcard bpf/*.bpf.c)
BPF_SKEL    := $(patsubst bpf/%.bpf.c,$(B)/gen/bpf/%.skel.h,$(BPF_SRC))
VMLINUX_IN  := $(wildcard bpf/vmlinux/$(BPF_ARCH)/vmlinux.h)

$(B)/gen/bpf/vmlinux.h: $(VMLINUX_IN)
	@mkdir -p $(B)/gen/bpf
	@echo "  BTF     $@"
ifneq ($(VMLINUX_IN),)
	$(Q)cp $< $@$(TMP_SUFFIX) && mv -f $@$(TMP_SUFFIX) $@
else
	$(Q)test -r $(VMLINUX_BTF) || { echo "no bpf/vmlinux/$(BPF_ARCH)/vmlinux.h and no $(VMLINUX_BTF): build on a kernel with BTF, or add the header" >&2; exit 1; }
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@$(TMP_SUFFIX) && mv -f $@$(TMP_SUFFIX) $@
endif

$(B)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(B)/gen/bpf/vmlinux.h
	@mkdir -p $(B)/bpf
	@echo "  BPF     $<"
	$(Q)$(BPF_CLANG) -O2 -g -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(B)/gen/bpf -Ibpf -c -o $@$(TMP_SUFFIX) $< && \
	    $(BPF_STRIP) -g $@$(TMP_SUFFIX) && mv -f $@$(TMP_SUFFIX) $@

$(B)/gen/bpf/%.skel.h: $(B)/bpf/%.bpf.o
	@mkdir -p $(B)/gen/bpf
	@echo "  SKEL    $@"
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@$(TMP_SUFFIX) && mv -f $@$(TMP_SUFFIX) $@

# Every object of the agent may include the skeleton: built first (order only;
# the .d files then name the ones that do).
$(call obj_of,ebpf): | $(BPF_SKEL)
$(B)/collector/ebpf/ebpf.o: $(BPF_SKEL)
.SECONDARY: $(patsubst bpf/%.bpf.c,$(B)/bpf/%.bpf.o,$(BPF_SRC))

$(BIN)/profilefs: $(call obj_of,main) $(LIBS_LINK) $(FLAGS_STAMP)
	@mkdir -p $(BIN)
	@echo "  LD      $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@$(TMP_SUFFIX) $(filter %.o %.a,$^) $(ALL_LDLIBS) && \
	    mv -f $@$(TMP_SUFFIX) $@

# Tests, harnesses and tools: each compiled to an object (its header
# dependencies in its .d file), then linked; a changed archive relinks them
# without recompiling.
TEST_CC = $(CC) $(ALL_CFLAGS) $(TEST_INC) -MMD -MP -MT $@ -MF $(@:.o=.d)$(TMP_SUFFIX) \
	  -c -o $@$(TMP_SUFFIX) $<
TEST_MV = mv -f $(@:.o=.d)$(TMP_SUFFIX) $(@:.o=.d) && mv -f $@$(TMP_SUFFIX) $@
$(B)/tests/unit/%.o: tests/unit/%.c $(FLAGS_STAMP) | $(GEN) $(BPF_SKEL)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(TEST_CC) -Wno-missing-prototypes && $(TEST_MV)
$(B)/tests/fuzz/%.o: tests/fuzz/%.c $(FLAGS_STAMP) | $(GEN) $(BPF_SKEL)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(TEST_CC) && $(TEST_MV)
$(B)/tests/tools/%.o: tests/tools/%.c $(FLAGS_STAMP) | $(GEN) $(BPF_SKEL)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(TEST_CC) && $(TEST_MV)

$(TEST_BIN): $(B)/tests/%: $(B)/tests/unit/%.o $(LIBS_LINK)
	@echo "  LD      $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@$(TMP_SUFFIX) $< $(LIBS_LINK) $(ALL_LDLIBS) -lcmocka && \
	    mv -f $@$(TMP_SUFFIX) $@

# The harnesses linked with replay.c instead of libFuzzer.
$(FUZZ_BIN): $(B)/tests/%: $(B)/tests/fuzz/%.o $(B)/tests/fuzz/replay.o $(LIBS_LINK)
	@echo "  LD      $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@$(TMP_SUFFIX) $< $(B)/tests/fuzz/replay.o $(LIBS_LINK) $(ALL_LDLIBS) && \
	    mv -f $@$(TMP_SUFFIX) $@

# Programs the benchmarks drive (scripts/bench-http.sh).
TOOL_BIN := $(patsubst tests/tools/%.c,$(B)/tests/tools/%,$(wildcard tests/tools/*.c))
tools: $(TOOL_BIN)
$(TOOL_BIN): $(B)/tests/tools/%: $(B)/tests/tools/%.o $(LIBS_LINK)
	@echo "  LD      $@"
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@$(TMP_SUFFIX) $< $(LIBS_LINK) $(ALL_LDLIBS) && \
	    mv -f $@$(TMP_SUFFIX) $@

# Relative includes would step around the include paths: refuse them. Only
# store/ sees RocksDB: its header elsewhere is refused too.
layercheck:
	$(Q)! grep -n '#include "\.\./' $(foreach d,$(SRC_DIRS),$(d)/*.[ch]) || \
	    { echo "layercheck: a relative #include reaches into another layer" >&2; exit 1; }
	$(Q)! grep -n '#include <rocksdb/' $(foreach d,$(filter-out store,$(SRC_DIRS)),$(d)/*.[ch]) || \
	    { echo "layercheck: RocksDB's header outside store/" >&2; exit 1; }

unit: $(TEST_BIN)
	$(Q)for t in $(TEST_BIN); do $$t || exit 1; done

test check: all tests
	$(Q)PROFILEFS_BIN=$(abspath $(BIN))/profilefs PROFILEFS_BUILD=$(abspath $(B)) bash tests/run.sh

clean:
	rm -rf $(B) $(BIN)

# --- install ---
# make install [PREFIX=/usr/local] [DESTDIR=/staging]: the binary, profilefs(8),
# the systemd unit (paths filled in), a sysusers.d entry for the user and group
# profilefs, and SYSCONFDIR/default/profilefs for the service's flags, which is
# kept if it exists (it is the administrator's), and SYSCONFDIR/profilefs, the
# directory for --http-token-file, 0750 root:profilefs (the group once it
# exists: systemd-sysusers makes it from the sysusers.d entry). make uninstall
# removes them; the flags file only while it is unchanged, the directory only
# while empty, the data under /var/lib never.
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
MANDIR      ?= $(PREFIX)/share/man
SYSCONFDIR  ?= /etc
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
INSTALL     ?= install
PFGROUP     ?= profilefs
.PHONY: install uninstall
install: $(BIN)/profilefs
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR) \
	    $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(SYSCONFDIR)/default
	$(INSTALL) -m 0755 $(BIN)/profilefs $(DESTDIR)$(BINDIR)/profilefs
	gzip -9n <scripts/profilefs.8 >$(DESTDIR)$(MANDIR)/man8/profilefs.8.gz
	chmod 0644 $(DESTDIR)$(MANDIR)/man8/profilefs.8.gz
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	    scripts/profilefs.service.in >$(DESTDIR)$(UNITDIR)/profilefs.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/profilefs.service
	$(INSTALL) -m 0644 scripts/profilefs.sysusers $(DESTDIR)$(SYSUSERSDIR)/profilefs.conf
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/default/profilefs ]; then \
	    echo "  keeping $(DESTDIR)$(SYSCONFDIR)/default/profilefs"; \
	else \
	    $(INSTALL) -m 0644 scripts/profilefs.default $(DESTDIR)$(SYSCONFDIR)/default/profilefs; \
	fi
	@# The token's directory: the daemon reads the token as root before it
	@# gives up root; the group lets its members (clients) read the token too.
	@d=$(DESTDIR)$(SYSCONFDIR)/profilefs; \
	if [ -d $$d ]; then \
	    echo "  keeping $$d"; \
	else \
	    $(INSTALL) -d -m 0750 $$d || exit 1; \
	    if getent group $(PFGROUP) >/dev/null && [ "$$(id -u)" = 0 ]; then \
	        chgrp $(PFGROUP) $$d || exit 1; \
	    else \
	        echo "  $$d: no group $(PFGROUP) yet (or not root); after systemd-sysusers: chgrp $(PFGROUP) $$d"; \
	    fi; \
	fi
	@[ -n "$(DESTDIR)" ] || echo "  then: systemd-sysusers && systemctl daemon-reload && systemctl enable --now profilefs"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/profilefs $(DESTDIR)$(MANDIR)/man8/profilefs.8.gz \
	    $(DESTDIR)$(UNITDIR)/profilefs.service $(DESTDIR)$(SYSUSERSDIR)/profilefs.conf
	@if cmp -s scripts/profilefs.default $(DESTDIR)$(SYSCONFDIR)/default/profilefs; then \
	    rm -f $(DESTDIR)$(SYSCONFDIR)/default/profilefs; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/default/profilefs ]; then \
	    echo "  keeping the changed $(DESTDIR)$(SYSCONFDIR)/default/profilefs"; \
	fi
	@rmdir $(DESTDIR)$(SYSCONFDIR)/profilefs 2>/dev/null || \
	    { [ ! -d $(DESTDIR)$(SYSCONFDIR)/profilefs ] || echo "  keeping $(DESTDIR)$(SYSCONFDIR)/profilefs (not empty)"; }

-include $(shell find $(B) -name '*.d' 2>/dev/null)
