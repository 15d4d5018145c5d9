/* tlblab's QEMU TCG plugin: the memory references of a guest program run under QEMU's user mode
 * (qemu-arm: an ARMv7 Linux binary on any host), as the same word stream tlblab's Valgrind tool
 * writes (runtime/valgrind/tlblab_main.c gives the protocol; tlblab_vgtool.h its values), so
 * that the one reader (crates/tlblab-trace/src/vgtool.rs) encodes both as a .tlbt file.
 *
 * Why QEMU: seed 004 (Song, Park, Kim 2022) ran ARMv7 binaries on a Cortex-A9; an x86-64 capture
 * under Valgrind has another ISA's instruction and data layout, and its glibc picks string and
 * memory routines by the host CPU's features. Under `qemu-arm -cpu cortex-a9` the guest sees the
 * same CPU on every host, and QEMU's user mode lays the guest's memory out the same way every run
 * (no address randomization of its own), so the references are the same on every host.
 *
 *   qemu-arm -cpu cortex-a9 -plugin libtlblab_qemu.so,outfd=N[,sysfd=M] PROGRAM ARGS...
 *
 * Per executed instruction: a fetch word (its address and size), before the instruction runs;
 * then a load or store word per data access, in the order the instruction makes them (QEMU calls
 * the memory callback after each access). An access QEMU splits (an unaligned or multi-register
 * transfer) is reported as QEMU performs it. Guest threads are QEMU's vCPUs: a thread word
 * (OP_THREAD, the vCPU's index) whenever the vCPU making references changes; a vCPU's first
 * appearance after the first is a thread start, its exit a thread end. At exit: the OP_END word
 * with END_EXIT and exit code 0 (a plugin is not told the guest's exit status: the caller reads
 * QEMU's own), then the fetch, load and store counts.
 *
 * With `sysfd=M`, the guest's system calls, which a user-space reference stream does not show
 * (seed 004's Tables 2-3 charge each one as a kernel entry, and a munmap or mprotect its TLB
 * maintenance: the x86 path traces them under Lackey --trace-syscalls), go to descriptor M as
 * text lines, one when QEMU is about to run a call and one when it returns (QEMU's syscall and
 * syscall-return callbacks, include/qemu/qemu-plugin.h of QEMU v7.2.0):
 *
 *   C <references before the call> <vCPU> <number> <arg1> <arg2> <arg3>
 *   R <vCPU> <number> <result>
 *
 * in decimal, the arguments as QEMU passes them (the guest's registers widened to 64 bits: the
 * reader keeps an ARMv7 guest's low 32), the result signed; a call that never returns
 * (exit_group) has no R line. The references before the call are the access words written so
 * far (each is one record of the trace), so the call's place is exact, the call instruction's
 * fetch included. M is written unbuffered: lines of calls before a capture's limit are there
 * when tlblab stops QEMU there.
 *
 * Callbacks of several vCPUs (guest threads) can run at once in user mode: one mutex orders the
 * stream, as Valgrind's big lock does for its tool. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qemu_plugin_api.h"
#include "../valgrind/tlblab_vgtool.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define BUF_WORDS (1u << 17) /* 1 MiB, the pipe's size as tlblab sets it */

static uint64_t buf[BUF_WORDS];
static size_t nbuf;
static int out_fd = -1;
static int sys_fd = -1;
static int closed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t n_fetches, n_loads, n_stores;
static unsigned int current_vcpu;
static int seen_vcpus; /* vCPUs seen so far: thread numbers are never reused */

static void flush_out(void)
{
    const unsigned char *p = (const unsigned char *)buf;
    size_t len = nbuf * sizeof(uint64_t);
    while (!closed && len > 0) {
        ssize_t w = write(out_fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            /* The reader is gone (tlblab stopped the capture): nothing to write to. */
            closed = 1;
            break;
        }
        p += w;
        len -= (size_t)w;
    }
    nbuf = 0;
}

static inline void put1(uint64_t w)
{
    if (nbuf == BUF_WORDS)
        flush_out();
    buf[nbuf++] = w;
}

static inline uint64_t control(uint64_t op, uint64_t payload)
{
    return (op << TLVG_SIZE_SHIFT) | (TLVG_KIND_CONTROL << TLVG_KIND_SHIFT) | payload;
}

/* An access word; a guest address of an ARMv7 guest always fits the 48 address bits, but a
 * 64-bit guest's may not: the escape then carries it whole. */
static inline void put_access(uint64_t kind, uint64_t addr, uint64_t size)
{
    if ((uint64_t)((int64_t)(addr << 16) >> 16) == addr && size < (1u << 14)) {
        put1((addr & TLVG_ADDR_MASK) | (kind << TLVG_KIND_SHIFT) | (size << TLVG_SIZE_SHIFT));
    } else {
        put1(control(TLVG_OP_LONG_ACCESS, kind | (size << 2)));
        put1(addr);
    }
}

/* Called with the lock held: the thread word when another vCPU makes references. */
static inline void on_vcpu(unsigned int vcpu)
{
    if (vcpu != current_vcpu) {
        current_vcpu = vcpu;
        put1(control(TLVG_OP_THREAD, vcpu));
    }
}

static void on_insn(unsigned int vcpu, void *udata)
{
    uint64_t packed = (uint64_t)(uintptr_t)udata; /* the address, the size in the top bits */
    pthread_mutex_lock(&lock);
    on_vcpu(vcpu);
    n_fetches++;
    put_access(TLVG_KIND_FETCH, packed & TLVG_ADDR_MASK, packed >> TLVG_SIZE_SHIFT);
    pthread_mutex_unlock(&lock);
}

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    (void)udata;
    int store = qemu_plugin_mem_is_store(info);
    uint64_t size = 1ull << qemu_plugin_mem_size_shift(info);
    pthread_mutex_lock(&lock);
    on_vcpu(vcpu);
    if (store)
        n_stores++;
    else
        n_loads++;
    put_access(store ? TLVG_KIND_STORE : TLVG_KIND_LOAD, vaddr, size);
    pthread_mutex_unlock(&lock);
}

/* One line to the system-call descriptor, whole (a short write is retried; a failure drops the
 * descriptor: tlblab reads what was written and the references are unaffected). */
static void put_line(const char *line, size_t len)
{
    while (sys_fd >= 0 && len > 0) {
        ssize_t w = write(sys_fd, line, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            sys_fd = -1;
            break;
        }
        line += w;
        len -= (size_t)w;
    }
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1, uint64_t a2,
                       uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8)
{
    (void)id, (void)a4, (void)a5, (void)a6, (void)a7, (void)a8;
    char line[160];
    pthread_mutex_lock(&lock);
    int n = snprintf(line, sizeof line, "C %llu %u %lld %llu %llu %llu\n",
                     (unsigned long long)(n_fetches + n_loads + n_stores), vcpu, (long long)num,
                     (unsigned long long)a1, (unsigned long long)a2, (unsigned long long)a3);
    put_line(line, (size_t)n);
    pthread_mutex_unlock(&lock);
}

static void on_syscall_ret(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, int64_t ret)
{
    (void)id;
    char line[96];
    pthread_mutex_lock(&lock);
    int n = snprintf(line, sizeof line, "R %u %lld %lld\n", vcpu, (long long)num, (long long)ret);
    put_line(line, (size_t)n);
    pthread_mutex_unlock(&lock);
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t va = qemu_plugin_insn_vaddr(insn);
        uint64_t size = qemu_plugin_insn_size(insn);
        /* The fetch's address and size packed into the callback's pointer (a 48-bit address;
         * an instruction is at most 4 bytes on ARM, 15 on x86). */
        uintptr_t packed = (uintptr_t)((va & TLVG_ADDR_MASK) | (size << TLVG_SIZE_SHIFT));
        qemu_plugin_register_vcpu_insn_exec_cb(insn, on_insn, QEMU_PLUGIN_CB_NO_REGS, (void *)packed);
        qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
    }
}

static void on_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu)
{
    (void)id;
    pthread_mutex_lock(&lock);
    if (seen_vcpus++ > 0)
        put1(control(TLVG_OP_THREAD_START, vcpu));
    pthread_mutex_unlock(&lock);
}

static void on_vcpu_exit(qemu_plugin_id_t id, unsigned int vcpu)
{
    (void)id;
    pthread_mutex_lock(&lock);
    if (vcpu != 0)
        put1(control(TLVG_OP_THREAD_EXIT, vcpu));
    pthread_mutex_unlock(&lock);
}

static void on_exit_cb(qemu_plugin_id_t id, void *udata)
{
    (void)id;
    (void)udata;
    pthread_mutex_lock(&lock);
    if (!closed) {
        put1(control(TLVG_OP_END, TLVG_END_EXIT));
        put1(0);
        put1(n_fetches);
        put1(n_loads);
        put1(n_stores);
        flush_out();
        closed = 1;
    }
    pthread_mutex_unlock(&lock);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        int *to = strncmp(argv[i], "outfd=", 6) == 0 ? &out_fd : strncmp(argv[i], "sysfd=", 6) == 0 ? &sys_fd : NULL;
        char *end = NULL;
        long fd = to ? strtol(argv[i] + 6, &end, 10) : -1;
        if (!to || *end != '\0' || fd < 0 || fd > 1 << 20) {
            fprintf(stderr, "tlblab qemu plugin: bad argument '%s' (expected outfd=N or sysfd=M, descriptors)\n",
                    argv[i]);
            return 1;
        }
        *to = (int)fd;
    }
    if (out_fd < 0) {
        fprintf(stderr, "tlblab qemu plugin: give the stream's descriptor: -plugin PATH,outfd=N\n");
        return 1;
    }
    put1(TLVG_MAGIC);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
    qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
    qemu_plugin_register_vcpu_exit_cb(id, on_vcpu_exit);
    qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
    if (sys_fd >= 0) {
        qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
        qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
    }
    return 0;
}
