#include "server/disks/disk_health.hpp"

#include <algorithm>

namespace vigil::server {

DiskHealth disk_health(const Disk& disk, std::chrono::steady_clock::time_point now) {
  DiskHealth h;
  if (!disk.io) return h;
  h.cycles = disk.io->cycles();
  h.last_cycle_age_s = std::max(0.0, std::chrono::duration<double>(now - disk.io->last_cycle_at()).count());
  const auto stalled_after =
      std::max<std::chrono::steady_clock::duration>(kStalledMin, disk.io->cycle_length() * kStalledCycles);
  h.io_alive = now - disk.io->last_cycle_at() <= stalled_after;
  // Failed first: a failed volume's IO thread still cycles, and its state does not come back.
  if (disk.io->volume_failed()) {
    h.state = DiskState::failed;
    h.detail = disk.io->failure_reason();
  } else if (!h.io_alive) {
    h.state = DiskState::stalled;
    h.detail =
        "the IO thread has not ended a cycle for " + std::to_string(static_cast<long long>(h.last_cycle_age_s)) + " s";
  } else if (disk.no_room.load(std::memory_order_relaxed)) {
    h.state = DiskState::full;
    h.detail = "short of its reserve with nothing retention may reclaim: new recordings are refused";
  }
  return h;
}

}  // namespace vigil::server
