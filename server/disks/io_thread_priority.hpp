#pragma once
// The IO thread is never starved (docs/scheduler.md): each disk's IO thread asks for real-time
// priority (SCHED_FIFO) so a busy network, ingest or load-generator thread cannot keep it off a
// CPU, with caps on what a runaway real-time thread could take: RLIMIT_RTTIME (CPU time without
// a blocking call; its soft limit's SIGXCPU demotes the IO threads back to normal priority, the
// hard limit kills the process as the kernel's last resort) and the kernel's RT throttling
// (sched_rt_runtime_us, reported). Without the privilege (not root, no CAP_SYS_NICE, RLIMIT_RTPRIO
// 0: EPERM) it stays at normal priority and says so: a warning, the metric
// vigil_disk_io_thread_realtime and /api/v1/disks' io_priority. Network and ingest threads are
// never touched. RunDelay reads the calling thread's run-queue delay for the cpu_starved cause.
// Thread: apply_io_priority and RunDelay on the IO thread itself. Errors: values, never thrown.
#include <string>

#include "storage/clock.hpp"

namespace vigil::server {

enum class IoPriority { realtime, normal };
const char* io_priority_name(IoPriority p) noexcept;  // "realtime", "normal"

struct IoPriorityOutcome {
  bool realtime = false;
  std::string detail;  // "SCHED_FIFO 10, RLIMIT_RTTIME 200 ms, ...", or why normal
};

// Applies WANTED to the calling thread. RTTIME_MS: the soft RLIMIT_RTTIME (process-wide; only
// real-time threads are charged).
IoPriorityOutcome apply_io_priority(IoPriority wanted, int rt_priority = 10, int rttime_ms = 200);
// True once the RLIMIT_RTTIME soft limit fired (SIGXCPU): the IO threads demote themselves.
bool rttime_exceeded() noexcept;
// Back to SCHED_OTHER for the calling thread.
void demote_to_normal() noexcept;

// The calling thread's cumulative run-queue delay (/proc/thread-self/schedstat's second field:
// time runnable but not running). Open it on the thread it measures; 0 where unavailable.
class RunDelay {
 public:
  RunDelay();
  ~RunDelay();
  RunDelay(const RunDelay&) = delete;
  RunDelay& operator=(const RunDelay&) = delete;
  bool available() const noexcept { return fd_ >= 0; }
  storage::Nanos read() const noexcept;

 private:
  int fd_ = -1;
};

}  // namespace vigil::server
