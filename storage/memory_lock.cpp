#include "storage/memory_lock.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>

#include "common/log.hpp"

namespace vigil::storage::memory_lock {
namespace {
std::atomic<bool> g_enabled{false}, g_failed{false};
std::atomic<std::uint64_t> g_locked{0}, g_unlocked{0};
std::atomic<int> g_error{0};

std::uint64_t memlock_limit() noexcept {
  rlimit rl{};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
    return std::numeric_limits<std::uint64_t>::max();
  }
  return rl.rlim_cur;
}
}  // namespace

void enable(bool on) noexcept { g_enabled.store(on, std::memory_order_relaxed); }
bool enabled() noexcept { return g_enabled.load(std::memory_order_relaxed); }

bool lock(void* p, std::size_t bytes) noexcept {
  if (p == nullptr || bytes == 0 || !enabled()) return false;
  if (g_failed.load(std::memory_order_relaxed)) {
    g_unlocked.fetch_add(bytes, std::memory_order_relaxed);
    return false;
  }
  if (mlock(p, bytes) == 0) {
    g_locked.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
  const int e = errno;
  g_unlocked.fetch_add(bytes, std::memory_order_relaxed);
  if (!g_failed.exchange(true)) {
    g_error.store(e);
    log::warn(
        "IO buffers are no longer locked in memory: mlock failed (raise RLIMIT_MEMLOCK, e.g. LimitMEMLOCK= in the "
        "service unit); later buffers work unlocked and may page-fault on the IO thread",
        {{"error", std::strerror(e)}, {"locked_bytes", g_locked.load()}, {"limit_bytes", memlock_limit()}});
  }
  return false;
}

void unlock(void* p, std::size_t bytes) noexcept {
  if (p == nullptr || bytes == 0) return;
  munlock(p, bytes);
  g_locked.fetch_sub(bytes, std::memory_order_relaxed);
}

bool give_back(void* p, std::size_t bytes, bool locked) noexcept {
  if (p == nullptr || bytes == 0) return false;
  // Locked pages cannot be dropped (MADV_DONTNEED: EINVAL): unlocked for the drop, then the range
  // is locked again on fault — the IO thread only ever reads pages the network side has written,
  // which are resident and locked by then.
  if (locked && munlock(p, bytes) != 0) return false;
  const bool dropped = madvise(p, bytes, MADV_DONTNEED) == 0;
  if (locked && mlock2(p, bytes, MLOCK_ONFAULT) != 0) {
    // Not expected (the same range was locked a moment ago): the buffer works on, unlocked.
    if (!g_failed.exchange(true)) {
      g_error.store(errno);
      log::warn("an IO buffer could not be locked again after giving its pages back; it works unlocked",
                {{"error", std::strerror(errno)}});
    }
  }
  return dropped;
}

Stats stats() noexcept {
  return {.enabled = enabled(),
          .failed = g_failed.load(std::memory_order_relaxed),
          .locked_bytes = g_locked.load(std::memory_order_relaxed),
          .unlocked_bytes = g_unlocked.load(std::memory_order_relaxed),
          .limit_bytes = memlock_limit(),
          .error = g_error.load(std::memory_order_relaxed)};
}

std::string describe(const Stats& s) {
  if (!s.enabled) return "off";
  if (!s.failed) return "locked";
  return std::string("partly: mlock failed (") + std::strerror(s.error) + ") at RLIMIT_MEMLOCK " +
         (s.limit_bytes == std::numeric_limits<std::uint64_t>::max() ? std::string("unlimited")
                                                                     : std::to_string(s.limit_bytes) + " bytes");
}

}  // namespace vigil::storage::memory_lock
