// Marks a hook definition: C linkage and default visibility (everything else
// in the library is hidden and the version script exports only the hooks).
#pragma once

#define XPU_TIMER_HOOK extern "C" __attribute__((visibility("default")))
