// Capture of the crashing thread's native stack into a CrashReportMsg, from
// inside a signal handler. Async-signal-safe in practice:
//  - frames: libgcc's _Unwind_Backtrace (linked statically). Debian's
//    libunwind.a is not position-independent, so it cannot go into our
//    shared object; libgcc 12 on glibc >= 2.35 finds unwind tables with
//    _dl_find_object (lock-free, async-signal-safe) and unwinds through the
//    kernel's signal frame (__restore_rt) into the faulting function;
//  - modules: dl_iterate_phdr, which takes the loader's recursive lock (the
//    same thread may re-enter it; another thread inside dlopen delays us
//    until it is done);
//  - names: the nearest containing exported symbol, read from each module's
//    in-memory .dynsym (memory reads only; no file I/O, no malloc). Static
//    functions stay nameless here; the supervisor fills them in from the
//    file's .symtab.
// Never throws, never allocates.
#pragma once

#include <signal.h>

#include <cstdint>

#include "common/rank_messages.h"

namespace xpu_timer::inject {

// Fills msg->frames/modules/nframes/nmodules/flags for the current thread,
// starting at the frame the signal interrupted (`ucontext` of the handler;
// null: at the kernel's signal frame). `caller_pc` (0: none) is named into
// msg->caller: an address in the code that brought the signal to the
// handler (a handler's entry, or a call's address).
// `exe_path` names the main program (dlpi_name is "" for it).
void capture_crash_stack(void* ucontext, uintptr_t caller_pc, const char* exe_path,
                         proto::CrashReportMsg* msg);

}  // namespace xpu_timer::inject
