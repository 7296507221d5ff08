// The messages on the unix socket between a rank (inject/) and the
// supervisor (SOCK_SEQPACKET: one message per packet), and their codec.
//
// Every message starts with a MsgHeader. The encode_* / decode_* functions at
// the end of this header are the only code that builds or checks one: the
// injected library, the supervisor and the test fakes call them, and the
// Python excepthook packs its header with kMsgHeaderStructFormat, handed to
// it by inject/crash_python_hook.cc.
//
// Versioning: kMessageVersion versions these messages and nothing else; it is
// bumped on any change to a message below (the offsets are pinned by the
// static_asserts next to each struct); types are append-only. The status page
// carries its own version (common/status_page_layout.h). The supervisor drops
// a message whose magic or version differs with one log line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/rank_identity.h"

namespace xpu_timer::proto {

// Version 9 (until the split of common/protocol.h the page and the messages
// shared one version number; both continue from 9).
constexpr uint32_t kMessageVersion = 9;
constexpr uint32_t kMessageMagic = 0x54555058u;  // "XPUT"

enum class MsgType : uint16_t {
  kRegister = 1,         // rank -> supervisor, once, after the status page exists
  kCrashReport = 2,      // rank -> supervisor, from a fatal-signal handler (CrashReportMsg)
  kPythonException = 3,  // rank's sys.excepthook -> supervisor (header + JSON), own connection
};

// Largest message either side sends (the Python exception's JSON is cut to fit).
constexpr uint32_t kMaxMessageBytes = 65536;

struct MsgHeader {
  uint32_t magic;    // kMessageMagic
  uint16_t version;  // kMessageVersion
  uint16_t type;     // MsgType
  uint32_t bytes;    // whole message including this header
  uint32_t reserved;
};
static_assert(sizeof(MsgHeader) == 16);
static_assert(offsetof(MsgHeader, version) == 4 && offsetof(MsgHeader, type) == 6 &&
              offsetof(MsgHeader, bytes) == 8 && offsetof(MsgHeader, reserved) == 12);

// MsgHeader as Python's struct module packs it: little endian, the fields in
// declaration order (magic, version, type, bytes, reserved).
constexpr const char kMsgHeaderStructFormat[] = "<IHHII";

// Offset of field `index` of a "<" struct format of I and H fields, or of its
// end when index is the field count; -1 for anything else. For the checks below.
constexpr int struct_format_offset(const char* format, int index) {
  if (format[0] != '<') return -1;
  int offset = 0;
  for (int i = 0; format[i + 1] != '\0'; ++i) {
    if (i == index) return offset;
    const char c = format[i + 1];
    if (c != 'I' && c != 'H') return -1;
    offset += c == 'I' ? 4 : 2;
  }
  return offset;
}
static_assert(struct_format_offset(kMsgHeaderStructFormat, 1) == offsetof(MsgHeader, version));
static_assert(struct_format_offset(kMsgHeaderStructFormat, 2) == offsetof(MsgHeader, type));
static_assert(struct_format_offset(kMsgHeaderStructFormat, 3) == offsetof(MsgHeader, bytes));
static_assert(struct_format_offset(kMsgHeaderStructFormat, 4) == offsetof(MsgHeader, reserved));
static_assert(struct_format_offset(kMsgHeaderStructFormat, 5) == sizeof(MsgHeader));

struct RegisterMsg {
  MsgHeader header;
  int32_t pid;
  int32_t rank;
  int32_t local_rank;
  int32_t world_size;
  int32_t local_world_size;
  int32_t group_rank;
  char hostname[64];
  char status_path[256];  // NUL-terminated path of the status page file
};
static_assert(std::is_trivially_copyable_v<RegisterMsg>);
static_assert(sizeof(RegisterMsg) == 360);
static_assert(offsetof(RegisterMsg, pid) == 16 && offsetof(RegisterMsg, group_rank) == 36 &&
              offsetof(RegisterMsg, hostname) == 40 && offsetof(RegisterMsg, status_path) == 104);

// ---- crash report: written by a signal handler, so fixed-size POD only ----

constexpr int kCrashMaxFrames = 64;
constexpr int kCrashMaxModules = 24;
constexpr int kCrashFuncBytes = 128;    // mangled C++ names run long; cut, NUL-terminated
constexpr int kCrashModuleBytes = 160;  // path of a loaded object, cut, NUL-terminated

// One native frame, innermost first. `function` is the nearest preceding
// exported (.dynsym) symbol found in memory by the handler, possibly empty:
// the supervisor re-symbolizes from the module file (.symtab) and demangles.
struct CrashFrame {
  uint64_t pc;
  uint64_t module_offset;  // pc - load bias of its module (an ELF vaddr: addr2line-able)
  uint64_t func_offset;    // pc - start of `function` (0 when unknown)
  int32_t module;          // index into CrashReportMsg::modules, -1 when unknown
  uint32_t reserved;
  char function[kCrashFuncBytes];
};
static_assert(sizeof(CrashFrame) == 160);
static_assert(offsetof(CrashFrame, module_offset) == 8 && offsetof(CrashFrame, func_offset) == 16 &&
              offsetof(CrashFrame, module) == 24 && offsetof(CrashFrame, function) == 32);

struct CrashModule {
  uint64_t load_bias;  // dlpi_addr
  char path[kCrashModuleBytes];
};
static_assert(sizeof(CrashModule) == 168 && offsetof(CrashModule, path) == 8);

// CrashReportMsg::flags
constexpr uint32_t kCrashFlagFramesTruncated = 1;   // more than kCrashMaxFrames frames
constexpr uint32_t kCrashFlagModulesTruncated = 2;  // frames in more than kCrashMaxModules modules
constexpr uint32_t kCrashFlagNoFaultFrame = 4;      // the faulting pc was not found while unwinding
// The message carries one descriptor (SCM_RIGHTS): an end of a socket pair
// whose other end the rank's handler polls before it lets the process die.
// The supervisor reads the rank's Python stacks while it waits, then closes
// the descriptor to release it (docs/architecture.md "Crash report").
constexpr uint32_t kCrashFlagAwaitsRelease = 8;
// Our handler did not get the kernel's siginfo: another handler, installed
// after ours without SA_SIGINFO (so the kernel filled none) or passing other
// pointers, called it. si_code, sender and fault address are unknown (zero),
// and `caller` names that handler (or the code our handler returns to).
constexpr uint32_t kCrashFlagSiginfoNotKernels = 16;
// CrashReportMsg::siginfo_doubt: the first test a siginfo failed.
enum class CrashSiginfoDoubt : uint32_t {
  kNone = 0,
  kNoSaSiginfo = 1,  // the handler installed for the signal has no SA_SIGINFO
  kNoPointers = 2,   // siginfo or ucontext null
  kNotInFrame = 3,   // not where the kernel's signal frame puts it
  kSigno = 4,        // si_signo is another signal
  kCode = 5,         // an si_code the kernel never uses
  kPid = 6,          // a sender pid no process can have
};

struct CrashReportMsg {
  MsgHeader header;  // type kCrashReport, bytes = sizeof(CrashReportMsg)
  int32_t pid;
  int32_t tid;
  int32_t rank;
  int32_t signal;
  int32_t si_code;
  int32_t sender_pid;  // si_pid, for SI_USER/SI_TKILL/SI_QUEUE (0 otherwise)
  int32_t sender_uid;
  uint32_t flags;       // kCrashFlag*
  uint64_t fault_addr;  // si_addr (meaningful for SIGSEGV/SIGBUS/SIGFPE/SIGILL)
  uint64_t realtime_ns;
  uint64_t mono_ns;
  char thread_name[16];
  uint32_t nframes;
  uint32_t nmodules;
  CrashFrame frames[kCrashMaxFrames];
  CrashModule modules[kCrashMaxModules];
  // With kCrashFlagSiginfoNotKernels: the code that called our handler (its
  // module among `modules`), and which test the siginfo failed
  // (CrashSiginfoDoubt); else zero.
  CrashFrame caller;
  uint32_t siginfo_doubt;
  uint32_t reserved;
};
static_assert(std::is_trivially_copyable_v<CrashReportMsg>);
static_assert(sizeof(CrashReportMsg) <= kMaxMessageBytes);
static_assert(sizeof(CrashReportMsg) == 14536);
static_assert(offsetof(CrashReportMsg, pid) == 16 && offsetof(CrashReportMsg, flags) == 44 &&
              offsetof(CrashReportMsg, fault_addr) == 48 &&
              offsetof(CrashReportMsg, thread_name) == 72 &&
              offsetof(CrashReportMsg, nframes) == 88 && offsetof(CrashReportMsg, frames) == 96 &&
              offsetof(CrashReportMsg, modules) == 10336 &&
              offsetof(CrashReportMsg, caller) == 14368 &&
              offsetof(CrashReportMsg, siginfo_doubt) == 14528);

// ---- encoding and decoding of the messages ----
// Encoders fill every byte of a message, padding included. Decoders take
// untrusted bytes (any length, any alignment), check what the protocol
// requires of every message of that type, copy, and say in one line what is
// wrong otherwise; judging the values (a rank inside its world, an absolute
// path) is the receiver's business.

// Header of a message of `type` that is `bytes` long in all. Async-signal-safe.
MsgHeader make_header(MsgType type, uint32_t bytes);

// What a rank says when it registers.
struct RegisterInfo {
  int32_t pid = 0;
  RankIdentity identity;
  const char* hostname = "";
  const char* status_path = "";
};
// False when a string had to be cut to fit its field. No allocation.
bool encode_register(const RegisterInfo& info, RegisterMsg* out);
// The JSON body behind its header; "" when the whole exceeds kMaxMessageBytes.
std::string encode_python_exception(std::string_view json);

// Type of a message whose header is sound: our magic and version, a known
// type, `bytes` equal to the packet's length, within kMaxMessageBytes, and the
// size that type requires. nullopt with *error otherwise.
std::optional<MsgType> decode_message(const void* data, size_t len, std::string* error);
// A kRegister message; its strings must be NUL-terminated.
bool decode_register(const void* data, size_t len, RegisterMsg* out, std::string* error);
// The identity a decoded kRegister message carries (not yet judged).
RankIdentity identity_of(const RegisterMsg& msg);
// A kCrashReport message; nframes and nmodules must fit their arrays.
bool decode_crash_report(const void* data, size_t len, CrashReportMsg* out, std::string* error);
// The JSON body of a kPythonException message, a view into `data`.
std::optional<std::string_view> decode_python_exception(const void* data, size_t len,
                                                        std::string* error);

}  // namespace xpu_timer::proto
