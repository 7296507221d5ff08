// Reporting of uncaught Python exceptions: when the process is a Python
// interpreter (Py_IsInitialized is in the global scope), a one-shot thread
// takes the GIL and runs crash_excepthook.py, which chains a sys.excepthook
// that sends the exception to the supervisor.
//
// Why a thread of its own: PyGILState_Ensure waits for the GIL, which a user
// thread may hold for a long time; neither the hooked call that starts us
// (it may hold locks the GIL holder waits for) nor the Poller (its
// heartbeat must keep moving) may wait for it. The thread has every signal
// blocked and ends after the install; if the interpreter is finalising it
// may never get the GIL, which costs nothing.
#pragma once

namespace xpu_timer::inject {

// No-op when the process is not Python. Any thread; call once.
void start_python_excepthook_install();

}  // namespace xpu_timer::inject
