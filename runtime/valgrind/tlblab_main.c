/* tlblab's Valgrind tool: the memory references of a real program, in binary, through a pipe.
 *
 * `tlblab trace record` runs `valgrind --tool=tlblab --out-fd=N PROGRAM` and reads the stream of
 * 8-byte words this tool writes to descriptor N (the protocol is below, and is read by
 * crates/tlblab-trace/src/vgtool.rs, which encodes it as a .tlbt file). It instruments the same
 * references as Valgrind's Lackey with --trace-mem=yes (instruction fetches, loads, stores, and
 * a load and store of the same address and size in one instruction as a "modify"), in the same
 * order, so both tools give the same reference stream for the same run. It is faster than Lackey
 * because nothing is formatted as text: a reference costs one helper call that stores one word in
 * a buffer, and the buffer goes to the pipe 128 K words at a time.
 *
 * It also does what Lackey cannot:
 * - threads: a word says which thread runs whenever Valgrind switches threads (it runs one at a
 *   time, under its big lock), and thread creation and exit are events;
 * - regions of interest: TLBLAB_ROI_BEGIN() / TLBLAB_ROI_END() (runtime/include/tlblab/roi.h)
 *   are client requests; with --roi-only=yes the code outside the region is not instrumented at
 *   all (its translations are thrown away at each switch), so it runs at Valgrind's base speed;
 * - --skip-instructions=N: the first N guest instructions are only counted (an add per exit of a
 *   superblock), and tracing starts at the first superblock entered after them;
 * - --max-instructions=N: after N traced instruction fetches the stream ends with an END word
 *   (tlblab then stops the program, as for --limit);
 * - --count-only=yes: the same instrumentation, but the helpers only count (the floor of this
 *   tool's cost: `tlblab bench capture` reports it).
 * - --dependence=yes: which earlier load each load's address came from. Every value in the
 *   guest's registers and the superblock's temporaries carries a shadow: the thread's reference
 *   number of the most recent load it was computed from (0: none), kept by inline IR (a loaded
 *   value's shadow is its own load's number; an operation's is the greatest of its operands';
 *   a register's is what the last Put wrote; a store keeps its data's shadow beside its address
 *   in a table of 2^19 slots, so that a load of a value the same thread stored within
 *   TLVG_DEPENDS_MAX_BACK references (a spill, a pointer kept in an array) passes the stored
 *   value's shadow on, as a store-to-load forward does, and any other load's value is its own).
 *   A conditional branch whose condition has a shadow and that a 2-bit counter per branch
 *   (2^14 of them, indexed by the branch's address) mispredicts puts OP_DEPENDS before the next
 *   access (the next instruction's fetch), naming the load the condition came from: the core
 *   refetches from the branch once that load's value is there (a control dependence).
 *   A load whose address has a shadow
 *   within TLVG_DEPENDS_MAX_BACK references is preceded by OP_DEPENDS. Guarded loads (LoadG),
 *   loads by dirty helpers and atomics give their values no shadow. Not with
 *   --skip-instructions (its early translations could not carry the shadows).
 *
 * Stream protocol (version 1), little-endian 64-bit words:
 *   word 0              magic "TLBVGT01"
 *   access word         bits 0..47 the address (sign-extended from bit 47: canonical x86-64),
 *                       bits 48..49 the kind (0 fetch, 1 load, 2 store), bits 50..63 the size
 *   control word        bits 48..49 = 3; bits 50..63 the opcode, bits 0..47 its payload:
 *     OP_LONG_ACCESS    payload = kind | size << 2; the next word is the full 64-bit address
 *                       (an address that is not canonical, or a size above 16383)
 *     OP_THREAD         payload = the thread whose accesses follow (0 = the main thread)
 *     OP_THREAD_START   payload = a new thread's number (thread numbers are never reused)
 *     OP_THREAD_EXIT    payload = a thread that ends
 *     OP_ROI_BEGIN      the program called TLBLAB_ROI_BEGIN()
 *     OP_ROI_END        the program called TLBLAB_ROI_END()
 *     OP_DEPENDS        payload = back: the next access word is a load whose address came from
 *                       the value this thread's access `back` accesses before it loaded
 *                       (--dependence=yes only; 1..=TLVG_DEPENDS_MAX_BACK)
 *     OP_END            payload = why (END_EXIT: the program exited, END_MAX: --max-instructions
 *                       reached); then one word: the exit code (END_EXIT) or 0, then three words:
 *                       fetches, loads, stores counted by the helpers. Nothing follows.
 * A stream without OP_END was cut short (Valgrind was killed).
 */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_transtab.h"
#include "valgrind.h"

#include "tlblab_vgtool.h"

/* Not in the pub_tool headers, but exported by libcoregrind: moves a descriptor into the range
 * Valgrind reserves for itself, which the client's close()/dup2() cannot touch (a program that
 * closes every descriptor at start, as daemons do, would otherwise close the pipe). */
extern Int VG_(safe_fd)(Int oldfd);

/*------------------------------------------------------------*/
/*--- Options                                              ---*/
/*------------------------------------------------------------*/

static Long clo_out_fd = -1;
static Bool clo_roi_only = False;
static Long clo_skip_instructions = 0;
static Long clo_max_instructions = 0; /* 0: no limit */
static Bool clo_count_only = False;
static Bool clo_dependence = False;

static Bool tl_process_cmd_line_option(const HChar *arg)
{
   if VG_INT_CLO(arg, "--out-fd", clo_out_fd) {}
   else if VG_BOOL_CLO(arg, "--roi-only", clo_roi_only) {}
   else if VG_INT_CLO(arg, "--skip-instructions", clo_skip_instructions) {}
   else if VG_INT_CLO(arg, "--max-instructions", clo_max_instructions) {}
   else if VG_BOOL_CLO(arg, "--count-only", clo_count_only) {}
   else if VG_BOOL_CLO(arg, "--dependence", clo_dependence) {}
   else
      return False;
   return True;
}

static void tl_print_usage(void)
{
   VG_(printf)(
      "    --out-fd=N                write the reference stream to descriptor N (required)\n"
      "    --roi-only=no|yes         trace only between TLBLAB_ROI_BEGIN() and TLBLAB_ROI_END()\n"
      "    --skip-instructions=N     count the first N instructions without tracing them\n"
      "    --max-instructions=N      end the stream after N traced instructions\n"
      "    --count-only=no|yes       instrument as usual, but only count the references\n"
      "    --dependence=no|yes       say which earlier load each load's address came from\n");
}

static void tl_print_debug_usage(void)
{
   VG_(printf)("    (none)\n");
}

/*------------------------------------------------------------*/
/*--- The output buffer                                    ---*/
/*------------------------------------------------------------*/

#define BUF_WORDS (1 << 17) /* 1 MiB: the pipe's size, which tlblab raises to 1 MiB */

static ULong out_buf[BUF_WORDS];
static ULong *out_pos = out_buf;
/* One word short of the end, so that a helper that writes two words checks once. */
static ULong *const out_limit = out_buf + BUF_WORDS - 1;
static Int out_fd = -1;
/* Set once the stream has ended (OP_END written), or in a forked child: later words are dropped.
 * The helpers do not test it on their fast path; the buffer-full path does. */
static Bool out_closed = False;

static ULong n_fetches, n_loads, n_stores;

/* --dependence=yes: the running thread's accesses so far (a modify counts two), and the shadow
 * of each of its guest state's bytes (indexed by the offset a Get or Put names). Each thread's
 * are saved at a switch (tl_start_client_code). */
#define SHADOW_SLOTS 4096
static ULong dep_refs = 0;
static ULong reg_shadow[SHADOW_SLOTS];

/* --dependence=yes: what the last store to an 8-byte word stored (its data's shadow), by whom and
 * at which of their accesses; a direct-mapped table (a collision forgets the older store, whose
 * load then counts as its value's producer, as if the value came from memory). */
typedef struct {
   Addr word;
   ULong producer;
   ULong at;
   UInt thread;
} StoredShadow;
#define STORED_BITS 19
static StoredShadow *stored_shadow;
static UInt dep_thread = 0; /* the running thread's trace number, for the stored shadows */

static inline StoredShadow *stored_slot(Addr a)
{
   return &stored_shadow[((ULong)(a >> 3) * 0x9E3779B97F4A7C15ULL) >> (64 - STORED_BITS)];
}

static void write_all(const void *p, SizeT len)
{
   const UChar *b = p;
   while (len > 0) {
      Int w = VG_(write)(out_fd, b, len);
      if (w <= 0) {
         /* The reader is gone (tlblab was interrupted or failed): nothing to write to. The
          * capture has failed on tlblab's side already, so stop quietly. */
         out_closed = True;
         return;
      }
      b += w;
      len -= (SizeT)w;
   }
}

static void flush_out(void)
{
   if (!out_closed && out_pos > out_buf)
      write_all(out_buf, (SizeT)(out_pos - out_buf) * sizeof(ULong));
   out_pos = out_buf;
}

static inline void put1(ULong w)
{
   if (UNLIKELY(out_pos >= out_limit))
      flush_out();
   *out_pos++ = w;
}

static inline void put2(ULong a, ULong b)
{
   if (UNLIKELY(out_pos >= out_limit))
      flush_out();
   out_pos[0] = a;
   out_pos[1] = b;
   out_pos += 2;
}

static inline ULong control(ULong op, ULong payload)
{
   return (op << TLVG_SIZE_SHIFT) | ((ULong)TLVG_KIND_CONTROL << TLVG_KIND_SHIFT) | payload;
}

/* The word of an access whose kind and size are already in `hi` (bits 48..63), or the escape
 * for an address that is not canonical. */
static inline void put_access(Addr a, ULong hi)
{
   if (LIKELY((ULong)((Long)((ULong)a << 16) >> 16) == (ULong)a)) {
      put1(((ULong)a & TLVG_ADDR_MASK) | hi);
   } else {
      ULong kind = (hi >> TLVG_KIND_SHIFT) & 3, size = hi >> TLVG_SIZE_SHIFT;
      put2(control(TLVG_OP_LONG_ACCESS, kind | (size << 2)), (ULong)a);
   }
}

/*------------------------------------------------------------*/
/*--- Tracing state                                        ---*/
/*------------------------------------------------------------*/

/* Guest instructions executed while waiting for --skip-instructions (added by inline IR). */
static ULong skip_counted = 0;
/* The count that ends the skip; ~0 once it has (the inline check then never fires again). */
static ULong skip_until = ~0ULL;
/* Read by the guarded helpers of translations made during the skip: 1 once they should trace. */
static ULong guarded_tracing = 0;
static Bool skip_done = True;
static Bool roi_inside = False;
static ULong traced_instructions = 0;
static ULong max_instructions = ~0ULL;

/* Whether a translation made now traces. */
static Bool tracing_now(void)
{
   return skip_done && (!clo_roi_only || roi_inside) && !out_closed;
}

static void end_stream(ULong why, ULong code)
{
   if (out_closed)
      return;
   put2(control(TLVG_OP_END, why), code);
   put2(n_fetches, n_loads);
   put1(n_stores);
   flush_out();
   out_closed = True;
}

/* Called by the instruction-fetch helpers after --max-instructions fetches. */
static void max_reached(void)
{
   end_stream(TLVG_END_MAX, 0);
   guarded_tracing = 0;
}

/*------------------------------------------------------------*/
/*--- Helpers called by the instrumented code              ---*/
/*------------------------------------------------------------*/

/* A fetch whose whole word (address, kind, size) was known at instrumentation time. The other
 * helpers take the address and `hi`: the kind and size, packed at instrumentation time. */
static void log_fetch(ULong word)
{
   n_fetches++;
   dep_refs++;
   put1(word);
   if (UNLIKELY(++traced_instructions >= max_instructions))
      max_reached();
}

static void log_fetch_long(Addr a, ULong hi)
{
   n_fetches++;
   dep_refs++;
   put_access(a, hi);
   if (UNLIKELY(++traced_instructions >= max_instructions))
      max_reached();
}

static void log_load(Addr a, ULong hi)
{
   n_loads++;
   dep_refs++;
   put_access(a, hi);
}

/* --dependence=yes: a load whose address's shadow is `producer` (0: none); returns its own
 * number, the shadow of the value it loads. */
static ULong log_load_dep(Addr a, ULong hi, ULong producer)
{
   ULong me = ++dep_refs;
   n_loads++;
   if (producer != 0 && me - producer <= TLVG_DEPENDS_MAX_BACK)
      put1(control(TLVG_OP_DEPENDS, me - producer));
   put_access(a, hi);
   /* A value this thread stored a moment ago comes from the store, not from memory. */
   StoredShadow *st = stored_slot(a);
   if (st->word == (a & ~(Addr)7) && st->thread == dep_thread && me - st->at <= TLVG_DEPENDS_MAX_BACK)
      return st->producer;
   return me;
}

/* --dependence=yes: the conditional branches' 2-bit counters (0-1 predict not taken, 2-3
 * taken), indexed by the branch instruction's address. */
#define BRANCH_BITS 14
static UChar branch_counter[1 << BRANCH_BITS];

/* --dependence=yes: the conditional branch at `pc`, `taken` or not, whose condition's shadow is
 * `shadow`: when the counter mispredicted it, the next access depends on that load. */
static void branch_dep(ULong pc, ULong taken, ULong shadow)
{
   UChar *c = &branch_counter[(pc ^ (pc >> BRANCH_BITS)) & ((1 << BRANCH_BITS) - 1)];
   Bool predicted = *c >= 2;
   if (taken && *c < 3)
      (*c)++;
   else if (!taken && *c > 0)
      (*c)--;
   if (predicted != (taken != 0) && shadow != 0 && dep_refs + 1 - shadow <= TLVG_DEPENDS_MAX_BACK)
      put1(control(TLVG_OP_DEPENDS, dep_refs + 1 - shadow));
}

/* --dependence=yes: a store of data whose shadow is `shadow` (0: none). */
static void log_store_dep(Addr a, ULong hi, ULong shadow)
{
   n_stores++;
   StoredShadow *st = stored_slot(a);
   st->word = a & ~(Addr)7;
   st->producer = shadow;
   st->at = ++dep_refs;
   st->thread = dep_thread;
   put_access(a, hi);
}

static void log_store(Addr a, ULong hi)
{
   n_stores++;
   dep_refs++;
   put_access(a, hi);
}

/* A modify is a load then a store of the same address and size (as tlblab reads Lackey's M). */
static void log_modify(Addr a, ULong hi)
{
   n_loads++;
   n_stores++;
   dep_refs += 2;
   put_access(a, hi);
   put_access(a, hi + ((ULong)(TLVG_KIND_STORE - TLVG_KIND_LOAD) << TLVG_KIND_SHIFT));
}

/* --count-only: the same calls, no words. */
static void count_fetch(ULong word)
{
   (void)word;
   n_fetches++;
   if (UNLIKELY(++traced_instructions >= max_instructions))
      max_reached();
}

static void count_fetch_long(Addr a, ULong hi)
{
   (void)a;
   (void)hi;
   count_fetch(0);
}

static void count_load(Addr a, ULong hi)
{
   (void)a;
   (void)hi;
   n_loads++;
}

static void count_store(Addr a, ULong hi)
{
   (void)a;
   (void)hi;
   n_stores++;
}

static void count_modify(Addr a, ULong hi)
{
   (void)a;
   (void)hi;
   n_loads++;
   n_stores++;
}

/* The inline check of a skip-mode superblock found the skip over. Translations cannot be thrown
 * away from inside a helper (Valgrind allows that only in a client request), so the skip-mode
 * translations stay, and their trace helpers, guarded by `guarded_tracing`, now run; new
 * translations are made with plain instrumentation. */
static void skip_reached(void)
{
   skip_until = ~0ULL;
   skip_done = True;
   guarded_tracing = tracing_now() ? 1 : 0;
}

/*------------------------------------------------------------*/
/*--- Instrumentation                                      ---*/
/*------------------------------------------------------------*/

/* An IR expression that is a temporary or a constant (as Lackey and Memcheck name it). */
typedef IRExpr IRAtom;

typedef enum { EV_FETCH, EV_LOAD, EV_STORE, EV_MODIFY } EventKind;

typedef struct {
   EventKind kind;
   IRAtom *addr;
   Int size;
   IRAtom *guard; /* Ity_I1, or NULL: always */
} Event;

/* Events not yet turned into helper calls. Lackey keeps 4; the count changes nothing in the
 * stream (the order of the calls is the order of the events, and the merge of a store into the
 * load before it looks only at the last event), only how long the address temporaries live. */
#define N_EVENTS 4
static Event events[N_EVENTS];
static Int events_used = 0;
/* In skip mode, every helper call is guarded by this flag (see skip_reached). */
static Bool instrumenting_guarded = False;

static ULong packed_hi(EventKind k, Int size)
{
   ULong kind = k == EV_FETCH ? TLVG_KIND_FETCH : k == EV_STORE ? TLVG_KIND_STORE : TLVG_KIND_LOAD;
   return (kind << TLVG_KIND_SHIFT) | ((ULong)size << TLVG_SIZE_SHIFT);
}

static IRAtom *guarded_tracing_atom(IRSB *sb)
{
   IRTemp flag = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp on = newIRTemp(sb->tyenv, Ity_I1);
   addStmtToIRSB(sb, IRStmt_WrTmp(flag, IRExpr_Load(Iend_LE, Ity_I64,
                                                      mkIRExpr_HWord((HWord)&guarded_tracing))));
   addStmtToIRSB(sb, IRStmt_WrTmp(on, IRExpr_Binop(Iop_CmpNE64, IRExpr_RdTmp(flag),
                                                    IRExpr_Const(IRConst_U64(0)))));
   return IRExpr_RdTmp(on);
}

static void flush_events(IRSB *sb)
{
   IRAtom *flag = NULL;
   if (events_used == 0)
      return;
   if (instrumenting_guarded)
      flag = guarded_tracing_atom(sb);
   for (Int i = 0; i < events_used; i++) {
      Event *ev = &events[i];
      const HChar *name;
      void *fn;
      IRExpr **args;
      ULong hi = packed_hi(ev->kind, ev->size);
      if (ev->kind == EV_FETCH && ev->addr->tag == Iex_Const && ev->size < (1 << 14)
          && (ULong)((Long)(ev->addr->Iex.Const.con->Ico.U64 << 16) >> 16)
                == ev->addr->Iex.Const.con->Ico.U64) {
         /* The common case: the whole word is known now, one argument. */
         name = clo_count_only ? "count_fetch" : "log_fetch";
         fn = clo_count_only ? (void *)count_fetch : (void *)log_fetch;
         args = mkIRExprVec_1(IRExpr_Const(IRConst_U64(
            (ev->addr->Iex.Const.con->Ico.U64 & TLVG_ADDR_MASK) | hi)));
      } else {
         switch (ev->kind) {
         case EV_FETCH:
            name = clo_count_only ? "count_fetch_long" : "log_fetch_long";
            fn = clo_count_only ? (void *)count_fetch_long : (void *)log_fetch_long;
            break;
         case EV_LOAD:
            name = clo_count_only ? "count_load" : "log_load";
            fn = clo_count_only ? (void *)count_load : (void *)log_load;
            break;
         case EV_STORE:
            name = clo_count_only ? "count_store" : "log_store";
            fn = clo_count_only ? (void *)count_store : (void *)log_store;
            break;
         default:
            name = clo_count_only ? "count_modify" : "log_modify";
            fn = clo_count_only ? (void *)count_modify : (void *)log_modify;
            break;
         }
         tl_assert(ev->size < (1 << 14)); /* the word's size field; Lackey's bound is 512 */
         args = mkIRExprVec_2(ev->addr, IRExpr_Const(IRConst_U64(hi)));
      }
      IRDirty *di = unsafeIRDirty_0_N(0, name, VG_(fnptr_to_fnentry)(fn), args);
      IRAtom *guard = ev->guard;
      if (flag != NULL) {
         if (guard == NULL) {
            guard = flag;
         } else {
            IRTemp both = newIRTemp(sb->tyenv, Ity_I1);
            addStmtToIRSB(sb, IRStmt_WrTmp(both, IRExpr_Binop(Iop_And1, guard, flag)));
            guard = IRExpr_RdTmp(both);
         }
      }
      if (guard != NULL)
         di->guard = guard;
      addStmtToIRSB(sb, IRStmt_Dirty(di));
   }
   events_used = 0;
}

static void add_event(IRSB *sb, EventKind kind, IRAtom *addr, Int size, IRAtom *guard)
{
   tl_assert(isIRAtom(addr));
   tl_assert(size >= 1);
   /* A store right after an unguarded load of the same size and address, in the same
    * instruction, is one read-modify-write access (Lackey's rule). */
   if (kind == EV_STORE && guard == NULL && events_used > 0) {
      Event *last = &events[events_used - 1];
      if (last->kind == EV_LOAD && last->size == size && last->guard == NULL
          && eqIRAtom(last->addr, addr)) {
         last->kind = EV_MODIFY;
         return;
      }
   }
   if (events_used == N_EVENTS)
      flush_events(sb);
   events[events_used].kind = kind;
   events[events_used].addr = addr;
   events[events_used].size = size;
   events[events_used].guard = guard;
   events_used++;
}

/* --dependence=yes, while a superblock is instrumented: the shadow temporary of each of the
 * original superblock's temporaries (IRTemp_INVALID: shadow 0), or NULL when not tracking. */
static IRTemp *shadow_of = NULL;

/* The shadow of an atom as an expression, or NULL for 0 (a constant, an untracked value). */
static IRExpr *shadow_atom(IRExpr *a)
{
   if (a == NULL || a->tag != Iex_RdTmp || shadow_of[a->Iex.RdTmp.tmp] == IRTemp_INVALID)
      return NULL;
   return IRExpr_RdTmp(shadow_of[a->Iex.RdTmp.tmp]);
}

/* The greater of two shadows (either NULL: 0), as IR. */
static IRExpr *shadow_max(IRSB *sb, IRExpr *x, IRExpr *y)
{
   if (x == NULL)
      return y;
   if (y == NULL)
      return x;
   IRTemp lt = newIRTemp(sb->tyenv, Ity_I1);
   IRTemp m = newIRTemp(sb->tyenv, Ity_I64);
   addStmtToIRSB(sb, IRStmt_WrTmp(lt, IRExpr_Binop(Iop_CmpLT64U, x, y)));
   addStmtToIRSB(sb, IRStmt_WrTmp(m, IRExpr_ITE(IRExpr_RdTmp(lt), y, x)));
   return IRExpr_RdTmp(m);
}

/* The address of the shadow of guest state byte `offset`. */
static IRExpr *shadow_slot(Int offset)
{
   tl_assert(offset >= 0 && offset < SHADOW_SLOTS);
   return mkIRExpr_HWord((HWord)&reg_shadow[offset]);
}

/* The shadow of temporary `t`, written by `data` (not a load: see tl_instrument), as IR. */
static void shadow_wrtmp(IRSB *sb, IRTemp t, IRExpr *data)
{
   IRExpr *sh = NULL;
   switch (data->tag) {
   case Iex_Get: {
      IRTemp g = newIRTemp(sb->tyenv, Ity_I64);
      addStmtToIRSB(sb, IRStmt_WrTmp(g, IRExpr_Load(Iend_LE, Ity_I64,
                                                     shadow_slot(data->Iex.Get.offset))));
      sh = IRExpr_RdTmp(g);
      break;
   }
   case Iex_RdTmp:
      sh = shadow_atom(data);
      break;
   case Iex_Unop:
      sh = shadow_atom(data->Iex.Unop.arg);
      break;
   case Iex_Binop:
      sh = shadow_max(sb, shadow_atom(data->Iex.Binop.arg1), shadow_atom(data->Iex.Binop.arg2));
      break;
   case Iex_Triop: {
      IRTriop *o = data->Iex.Triop.details;
      sh = shadow_max(sb, shadow_max(sb, shadow_atom(o->arg1), shadow_atom(o->arg2)),
                      shadow_atom(o->arg3));
      break;
   }
   case Iex_Qop: {
      IRQop *o = data->Iex.Qop.details;
      sh = shadow_max(sb, shadow_max(sb, shadow_atom(o->arg1), shadow_atom(o->arg2)),
                      shadow_max(sb, shadow_atom(o->arg3), shadow_atom(o->arg4)));
      break;
   }
   case Iex_ITE:
      sh = shadow_max(sb, shadow_atom(data->Iex.ITE.cond),
                      shadow_max(sb, shadow_atom(data->Iex.ITE.iftrue),
                                 shadow_atom(data->Iex.ITE.iffalse)));
      break;
   case Iex_CCall:
      for (Int k = 0; data->Iex.CCall.args[k] != NULL; k++)
         sh = shadow_max(sb, sh, shadow_atom(data->Iex.CCall.args[k]));
      break;
   default: /* Iex_Const, Iex_GetI: no shadow */
      break;
   }
   if (sh != NULL) {
      tl_assert(sh->tag == Iex_RdTmp);
      shadow_of[t] = sh->Iex.RdTmp.tmp;
   }
}

/* A load of `ty` from `addr` into `t`, traced with its dependence: the pending events, then
 * the load's own helper call, whose result (its number) is the loaded value's shadow. */
static void load_with_dependence(IRSB *sb, IRTemp t, IRExpr *addr, IRType ty)
{
   flush_events(sb);
   IRExpr *producer = shadow_atom(addr);
   if (producer == NULL)
      producer = IRExpr_Const(IRConst_U64(0));
   IRTemp me = newIRTemp(sb->tyenv, Ity_I64);
   IRDirty *di = unsafeIRDirty_1_N(
      me, 0, "log_load_dep", VG_(fnptr_to_fnentry)(log_load_dep),
      mkIRExprVec_3(addr, IRExpr_Const(IRConst_U64(packed_hi(EV_LOAD, sizeofIRType(ty)))),
                    producer));
   addStmtToIRSB(sb, IRStmt_Dirty(di));
   shadow_of[t] = me;
}

/* A store of `data` to `addr`, traced with its data's shadow: the pending events, then the
 * store's own helper call. */
static void store_with_dependence(IRSB *sb, IRExpr *addr, IRExpr *data, IRType ty)
{
   flush_events(sb);
   IRExpr *sh = shadow_atom(data);
   IRDirty *di = unsafeIRDirty_0_N(
      0, "log_store_dep", VG_(fnptr_to_fnentry)(log_store_dep),
      mkIRExprVec_3(addr, IRExpr_Const(IRConst_U64(packed_hi(EV_STORE, sizeofIRType(ty)))),
                    sh != NULL ? sh : IRExpr_Const(IRConst_U64(0))));
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

/* A conditional exit of the instruction at `pc` on `guard`, traced with its condition's shadow
 * (nothing when the condition has none). */
static void exit_with_dependence(IRSB *sb, Addr pc, IRExpr *guard)
{
   IRExpr *sh = shadow_atom(guard);
   if (sh == NULL)
      return;
   IRTemp taken = newIRTemp(sb->tyenv, Ity_I64);
   addStmtToIRSB(sb, IRStmt_WrTmp(taken, IRExpr_Unop(Iop_1Uto64, guard)));
   IRDirty *di = unsafeIRDirty_0_N(
      0, "branch_dep", VG_(fnptr_to_fnentry)(branch_dep),
      mkIRExprVec_3(IRExpr_Const(IRConst_U64((ULong)pc)), IRExpr_RdTmp(taken), sh));
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

/* `*counter += n` as IR (no helper call). */
static void add_to_counter(IRSB *sb, ULong *counter, ULong n)
{
   IRTemp old = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp sum = newIRTemp(sb->tyenv, Ity_I64);
   IRExpr *at = mkIRExpr_HWord((HWord)counter);
   addStmtToIRSB(sb, IRStmt_WrTmp(old, IRExpr_Load(Iend_LE, Ity_I64, at)));
   addStmtToIRSB(sb, IRStmt_WrTmp(sum, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(old),
                                                   IRExpr_Const(IRConst_U64(n)))));
   addStmtToIRSB(sb, IRStmt_Store(Iend_LE, at, IRExpr_RdTmp(sum)));
}

/* `if (skip_until <= skip_counted) skip_reached()` as IR: one guarded call at superblock entry. */
static void add_skip_check(IRSB *sb)
{
   IRTemp counted = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp until = newIRTemp(sb->tyenv, Ity_I64);
   IRTemp over = newIRTemp(sb->tyenv, Ity_I1);
   addStmtToIRSB(sb, IRStmt_WrTmp(counted, IRExpr_Load(Iend_LE, Ity_I64,
                                                         mkIRExpr_HWord((HWord)&skip_counted))));
   addStmtToIRSB(sb, IRStmt_WrTmp(until, IRExpr_Load(Iend_LE, Ity_I64,
                                                       mkIRExpr_HWord((HWord)&skip_until))));
   addStmtToIRSB(sb, IRStmt_WrTmp(over, IRExpr_Binop(Iop_CmpLE64U, IRExpr_RdTmp(until),
                                                      IRExpr_RdTmp(counted))));
   IRDirty *di = unsafeIRDirty_0_N(0, "skip_reached", VG_(fnptr_to_fnentry)(skip_reached),
                                   mkIRExprVec_0());
   di->guard = IRExpr_RdTmp(over);
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static IRSB *tl_instrument(VgCallbackClosure *closure, IRSB *sb_in, const VexGuestLayout *layout,
                           const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
   (void)closure;
   (void)layout;
   (void)vge;
   (void)archinfo_host;
   if (gWordTy != hWordTy)
      VG_(tool_panic)("tlblab: host and guest word sizes differ");

   Bool trace = tracing_now();
   Bool skipping = !skip_done && !out_closed;
   if (!trace && !skipping)
      return sb_in; /* outside the region of interest: no instrumentation at all */
   instrumenting_guarded = !trace;

   IRSB *sb = deepCopyIRSBExceptStmts(sb_in);
   IRTypeEnv *tyenv = sb_in->tyenv;
   Int i = 0;
   /* The preamble before the first instruction mark is copied as it is. */
   while (i < sb_in->stmts_used && sb_in->stmts[i]->tag != Ist_IMark) {
      addStmtToIRSB(sb, sb_in->stmts[i]);
      i++;
   }
   if (skipping)
      add_skip_check(sb);
   events_used = 0;
   ULong instrs_since_count = 0;
   Addr pc = 0; /* the current instruction's address (its IMark's) */
   /* Dependences only in translations that trace from the start (see --dependence). */
   Bool dependence = clo_dependence && trace && !clo_count_only;
   if (dependence) {
      shadow_of = VG_(malloc)("tlblab.shadow_of", sizeof(IRTemp) * (SizeT)tyenv->types_used);
      for (Int k = 0; k < tyenv->types_used; k++)
         shadow_of[k] = IRTemp_INVALID;
   }

   for (; i < sb_in->stmts_used; i++) {
      IRStmt *st = sb_in->stmts[i];
      if (st == NULL || st->tag == Ist_NoOp)
         continue;
      switch (st->tag) {
      case Ist_IMark:
         instrs_since_count++;
         pc = st->Ist.IMark.addr;
         add_event(sb, EV_FETCH, mkIRExpr_HWord((HWord)st->Ist.IMark.addr), (Int)st->Ist.IMark.len,
                   NULL);
         addStmtToIRSB(sb, st);
         break;
      case Ist_WrTmp: {
         IRExpr *data = st->Ist.WrTmp.data;
         if (data->tag == Iex_Load && dependence)
            load_with_dependence(sb, st->Ist.WrTmp.tmp, data->Iex.Load.addr, data->Iex.Load.ty);
         else if (data->tag == Iex_Load)
            add_event(sb, EV_LOAD, data->Iex.Load.addr, sizeofIRType(data->Iex.Load.ty), NULL);
         else if (dependence)
            shadow_wrtmp(sb, st->Ist.WrTmp.tmp, data);
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_Put: {
         if (dependence) {
            IRExpr *sh = shadow_atom(st->Ist.Put.data);
            addStmtToIRSB(sb, IRStmt_Store(Iend_LE, shadow_slot(st->Ist.Put.offset),
                                           sh != NULL ? sh : IRExpr_Const(IRConst_U64(0))));
         }
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_Store: {
         IRType ty = typeOfIRExpr(tyenv, st->Ist.Store.data);
         if (dependence)
            store_with_dependence(sb, st->Ist.Store.addr, st->Ist.Store.data, ty);
         else
            add_event(sb, EV_STORE, st->Ist.Store.addr, sizeofIRType(ty), NULL);
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_StoreG: {
         IRStoreG *sg = st->Ist.StoreG.details;
         add_event(sb, EV_STORE, sg->addr, sizeofIRType(typeOfIRExpr(tyenv, sg->data)), sg->guard);
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_LoadG: {
         IRLoadG *lg = st->Ist.LoadG.details;
         IRType loaded = Ity_INVALID, widened = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &widened, &loaded);
         add_event(sb, EV_LOAD, lg->addr, sizeofIRType(loaded), lg->guard);
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_Dirty: {
         IRDirty *d = st->Ist.Dirty.details;
         if (d->mFx != Ifx_None) {
            if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
               add_event(sb, EV_LOAD, d->mAddr, d->mSize, NULL);
            if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
               add_event(sb, EV_STORE, d->mAddr, d->mSize, NULL);
         }
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_CAS: {
         /* A load and a store of the location, as Lackey counts it (a modify, merged). */
         IRCAS *cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
         if (cas->dataHi != NULL)
            size *= 2;
         add_event(sb, EV_LOAD, cas->addr, size, NULL);
         add_event(sb, EV_STORE, cas->addr, size, NULL);
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_LLSC: {
         if (st->Ist.LLSC.storedata == NULL) {
            add_event(sb, EV_LOAD, st->Ist.LLSC.addr,
                      sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)), NULL);
            flush_events(sb); /* before the load-linked, so the store-conditional can succeed */
         } else {
            add_event(sb, EV_STORE, st->Ist.LLSC.addr,
                      sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)), NULL);
         }
         addStmtToIRSB(sb, st);
         break;
      }
      case Ist_Exit:
         flush_events(sb);
         if (dependence && st->Ist.Exit.jk == Ijk_Boring)
            exit_with_dependence(sb, pc, st->Ist.Exit.guard);
         if (skipping && instrs_since_count > 0) {
            add_to_counter(sb, &skip_counted, instrs_since_count);
            instrs_since_count = 0;
         }
         addStmtToIRSB(sb, st);
         break;
      default: /* Ist_AbiHint, Ist_PutI, Ist_MBE */
         addStmtToIRSB(sb, st);
         break;
      }
   }
   flush_events(sb);
   if (skipping && instrs_since_count > 0)
      add_to_counter(sb, &skip_counted, instrs_since_count);
   if (shadow_of != NULL) {
      VG_(free)(shadow_of);
      shadow_of = NULL;
   }
   return sb;
}

/*------------------------------------------------------------*/
/*--- Threads, fork, client requests                      ---*/
/*------------------------------------------------------------*/

/* The trace's number of each Valgrind thread slot (slots are reused, trace numbers are not). */
static UInt *thread_number;
static UInt next_thread_number = 1;
static ThreadId running = 1;

/* --dependence=yes: each thread's shadows and access count while another runs. */
static ULong **saved_shadow;
static ULong *saved_refs;

static void switch_shadows(ThreadId from, ThreadId to)
{
   if (saved_shadow[from] == NULL)
      saved_shadow[from] = VG_(malloc)("tlblab.shadow", sizeof reg_shadow);
   VG_(memcpy)(saved_shadow[from], reg_shadow, sizeof reg_shadow);
   saved_refs[from] = dep_refs;
   if (saved_shadow[to] != NULL)
      VG_(memcpy)(reg_shadow, saved_shadow[to], sizeof reg_shadow);
   else
      VG_(memset)(reg_shadow, 0, sizeof reg_shadow);
   dep_refs = saved_refs[to];
   dep_thread = thread_number[to];
}

static void tl_start_client_code(ThreadId tid, ULong blocks_done)
{
   (void)blocks_done;
   if (tid != running) {
      if (clo_dependence)
         switch_shadows(running, tid);
      running = tid;
      put1(control(TLVG_OP_THREAD, thread_number[tid]));
   }
}

static void tl_thread_create(ThreadId parent, ThreadId child)
{
   if (parent == VG_INVALID_THREADID) {
      /* The main thread, made at start-up: thread 0, which the stream starts with. */
      thread_number[child] = 0;
      return;
   }
   thread_number[child] = next_thread_number++;
   put1(control(TLVG_OP_THREAD_START, thread_number[child]));
}

static void tl_thread_exit(ThreadId tid)
{
   /* The main thread's end is the end of the stream. */
   if (thread_number[tid] != 0)
      put1(control(TLVG_OP_THREAD_EXIT, thread_number[tid]));
}

/* A forked child runs on under Valgrind (this tool does not follow it): it must not write into
 * its parent's stream, nor keep the pipe open. */
static void tl_after_fork_child(ThreadId tid)
{
   (void)tid;
   out_pos = out_buf;
   out_closed = True;
   guarded_tracing = 0;
   if (out_fd >= 0)
      VG_(close)(out_fd);
   out_fd = -1;
}

static void retranslate_everything(void)
{
   VG_(discard_translations_safely)((Addr)0x1000, ~(SizeT)0xfff, "tlblab");
}

static Bool tl_handle_client_request(ThreadId tid, UWord *args, UWord *ret)
{
   (void)tid;
   if (!VG_IS_TOOL_USERREQ('T', 'L', args[0]))
      return False;
   switch (args[0]) {
   case TLVG_USERREQ_ROI_BEGIN:
   case TLVG_USERREQ_ROI_END: {
      Bool begin = args[0] == TLVG_USERREQ_ROI_BEGIN;
      if (begin != roi_inside && !out_closed) {
         Bool was = tracing_now();
         roi_inside = begin;
         put1(control(begin ? TLVG_OP_ROI_BEGIN : TLVG_OP_ROI_END, 0));
         guarded_tracing = tracing_now() ? 1 : 0;
         if (clo_roi_only && was != tracing_now())
            retranslate_everything();
      }
      *ret = 0;
      return True;
   }
   default:
      return False;
   }
}

/*------------------------------------------------------------*/
/*--- Start and end                                        ---*/
/*------------------------------------------------------------*/

static void tl_post_clo_init(void)
{
   if (clo_out_fd < 0)
      VG_(fmsg_bad_option)("--out-fd", "tlblab needs --out-fd=N: the descriptor to write to\n");
   if (clo_skip_instructions < 0 || clo_max_instructions < 0)
      VG_(fmsg_bad_option)("--skip-instructions/--max-instructions", "must not be negative\n");
   out_fd = VG_(safe_fd)((Int)clo_out_fd);
   if (out_fd < 0)
      VG_(fmsg_bad_option)("--out-fd", "descriptor %lld is not open\n", clo_out_fd);
   if (clo_max_instructions > 0)
      max_instructions = (ULong)clo_max_instructions;
   if (clo_skip_instructions > 0) {
      skip_done = False;
      skip_until = (ULong)clo_skip_instructions;
   }
   guarded_tracing = tracing_now() ? 1 : 0;
   thread_number = VG_(calloc)("tlblab.threads", VG_N_THREADS, sizeof(UInt));
   if (clo_dependence) {
      if (clo_skip_instructions > 0)
         VG_(fmsg_bad_option)("--dependence=yes",
                              "cannot be combined with --skip-instructions (the translations "
                              "made while skipping carry no shadows)\n");
      saved_shadow = VG_(calloc)("tlblab.shadows", VG_N_THREADS, sizeof(ULong *));
      saved_refs = VG_(calloc)("tlblab.refs", VG_N_THREADS, sizeof(ULong));
      stored_shadow = VG_(calloc)("tlblab.stored", 1UL << STORED_BITS, sizeof(StoredShadow));
   }
   put1(TLVG_MAGIC);
}

static void tl_fini(Int exitcode)
{
   if (roi_inside && !out_closed)
      put1(control(TLVG_OP_ROI_END, 0));
   end_stream(TLVG_END_EXIT, (ULong)(Long)exitcode);
}

static void tl_pre_clo_init(void)
{
   VG_(details_name)("tlblab");
   VG_(details_version)("1");
   VG_(details_description)("tlblab's memory-reference capture");
   VG_(details_copyright_author)("tlblab: a TLB laboratory.");
   VG_(details_bug_reports_to)("the tlblab repository");
   VG_(details_avg_translation_sizeB)(200);

   VG_(basic_tool_funcs)(tl_post_clo_init, tl_instrument, tl_fini);
   VG_(needs_command_line_options)(tl_process_cmd_line_option, tl_print_usage,
                                   tl_print_debug_usage);
   VG_(needs_client_requests)(tl_handle_client_request);
   VG_(track_start_client_code)(tl_start_client_code);
   VG_(track_pre_thread_ll_create)(tl_thread_create);
   VG_(track_pre_thread_ll_exit)(tl_thread_exit);
   VG_(atfork)(NULL, NULL, tl_after_fork_child);
}

VG_DETERMINE_INTERFACE_VERSION(tl_pre_clo_init)
