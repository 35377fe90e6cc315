#include "server/disks/io_thread_priority.hpp"

#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>

namespace vigil::server {
namespace {

std::atomic<bool> g_rttime_exceeded{false};

extern "C" void on_sigxcpu(int) { g_rttime_exceeded.store(true, std::memory_order_relaxed); }

// RLIMIT_RTTIME and its SIGXCPU handler, once per process (the limit is the process's; only
// real-time threads are charged against it).
std::string cap_rttime(int rttime_ms) {
  static std::once_flag once;
  static std::string outcome;
  std::call_once(once, [&] {
    struct sigaction sa {};
    sa.sa_handler = on_sigxcpu;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGXCPU, &sa, nullptr);
    rlimit rl{};
    getrlimit(RLIMIT_RTTIME, &rl);
    const rlim_t soft = static_cast<rlim_t>(rttime_ms) * 1000;
    // The hard limit (SIGKILL) is the kernel's last resort for a thread that spins on past the
    // demotion; 20× the soft limit leaves the IO thread its cycle to see the flag.
    const rlim_t hard = rl.rlim_max == RLIM_INFINITY ? soft * 20 : rl.rlim_max;
    rlimit want{std::min(soft, hard), hard};
    if (setrlimit(RLIMIT_RTTIME, &want) == 0) {
      outcome = "RLIMIT_RTTIME " + std::to_string(want.rlim_cur / 1000) + " ms (hard " +
                std::to_string(want.rlim_max / 1000) + " ms)";
    } else {
      outcome = std::string("RLIMIT_RTTIME not set (") + std::strerror(errno) + ")";
    }
    // The kernel's RT throttling: what share of each period real-time threads may use at most.
    long runtime = -2, period = 0;
    std::ifstream("/proc/sys/kernel/sched_rt_runtime_us") >> runtime;
    std::ifstream("/proc/sys/kernel/sched_rt_period_us") >> period;
    if (runtime == -1) {
      outcome += ", kernel RT throttling off (sched_rt_runtime_us -1)";
    } else if (runtime >= 0 && period > 0) {
      outcome += ", kernel RT throttling " + std::to_string(runtime) + "/" + std::to_string(period) + " us";
    }
  });
  return outcome;
}

}  // namespace

const char* io_priority_name(IoPriority p) noexcept { return p == IoPriority::realtime ? "realtime" : "normal"; }

IoPriorityOutcome apply_io_priority(IoPriority wanted, int rt_priority, int rttime_ms) {
  if (wanted == IoPriority::normal) return {false, "normal priority (--io-priority normal)"};
  const std::string caps = cap_rttime(rttime_ms);
  sched_param sp{};
  sp.sched_priority = rt_priority;
  // Reset on fork: a thread or process the IO thread happens to start (a callback's) runs at
  // normal priority — only the IO thread itself is real-time.
  const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO | SCHED_RESET_ON_FORK, &sp);
  if (rc != 0) {
    return {false, std::string("normal priority: SCHED_FIFO refused (") + std::strerror(rc) +
                       (rc == EPERM ? "; needs root, CAP_SYS_NICE or RLIMIT_RTPRIO ≥ " + std::to_string(rt_priority) +
                                          ", e.g. LimitRTPRIO= in the service unit)"
                                    : ")")};
  }
  return {true, "SCHED_FIFO " + std::to_string(rt_priority) + ", " + caps};
}

bool rttime_exceeded() noexcept { return g_rttime_exceeded.load(std::memory_order_relaxed); }

void demote_to_normal() noexcept {
  sched_param sp{};
  sp.sched_priority = 0;
  pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
}

RunDelay::RunDelay() : fd_(::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}

RunDelay::~RunDelay() {
  if (fd_ >= 0) ::close(fd_);
}

storage::Nanos RunDelay::read() const noexcept {
  if (fd_ < 0) return storage::Nanos(0);
  // "<on-cpu ns> <run-queue wait ns> <timeslices>"; pread at 0 renders it afresh.
  char buf[96];
  const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
  if (n <= 0) return storage::Nanos(0);
  buf[n] = '\0';
  unsigned long long on_cpu = 0, waited = 0;
  if (std::sscanf(buf, "%llu %llu", &on_cpu, &waited) != 2) return storage::Nanos(0);
  return storage::Nanos(static_cast<storage::Nanos::rep>(waited));
}

}  // namespace vigil::server
