#pragma once
// Locking the IO buffers in memory (docs/scheduler.md, "The IO thread is never starved"): with
// it enabled (vigild, --io-priority realtime), every AlignedBuffer — the streams' buffer halves,
// playback and interactive reads — is mlock'ed when allocated and unlocked when freed, so the
// real-time IO thread never waits for a page fault on a buffer it fills or drains. The budget is
// RLIMIT_MEMLOCK: the first buffer that does not fit stops locking for good (one warning, naming
// the limit); later buffers are counted as unlocked, and everything works as before unlocked.
// Thread: any (atomics). Errors: none; a failure is a state that stats() reports.
#include <cstddef>
#include <cstdint>
#include <string>

namespace vigil::storage::memory_lock {

void enable(bool on) noexcept;
bool enabled() noexcept;

// Locks [P, P + BYTES) if enabled and nothing failed before; true if it is locked now.
bool lock(void* p, std::size_t bytes) noexcept;
void unlock(void* p, std::size_t bytes) noexcept;
// Gives the whole pages [P, P + BYTES) back to the kernel (page-aligned): they read as zeros and
// come back as they are written. LOCKED: they were locked, and the range is locked again on fault
// (mlock2 MLOCK_ONFAULT): each page is locked as it comes back, and the range still counts against
// RLIMIT_MEMLOCK as before. Returns false when the kernel refused (the pages stay as they were).
bool give_back(void* p, std::size_t bytes, bool locked) noexcept;

struct Stats {
  bool enabled = false;
  bool failed = false;               // a lock failed: no more are tried
  std::uint64_t locked_bytes = 0;    // locked now
  std::uint64_t unlocked_bytes = 0;  // allocated while enabled but not locked, since the failure (cumulative)
  std::uint64_t limit_bytes = 0;     // RLIMIT_MEMLOCK's soft limit (UINT64_MAX: unlimited)
  int error = 0;                     // errno of the failure
};
Stats stats() noexcept;
// For people: "locked", or why not ("RLIMIT_MEMLOCK 8 MiB exhausted (ENOMEM)…").
std::string describe(const Stats& s);

}  // namespace vigil::storage::memory_lock
