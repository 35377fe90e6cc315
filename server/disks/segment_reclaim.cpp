#include "server/disks/segment_reclaim.hpp"

#include <chrono>
#include <future>
#include <memory>

#include "server/disks/disk_set.hpp"
#include "storage/retention.hpp"

namespace vigil::server {

std::optional<ReclaimOutcome> reclaim_on_io_thread(Disk& disk, const std::vector<std::uint64_t>& ids,
                                                   std::stop_token stop) {
  auto& vol = *disk.volume->volume;
  auto promise = std::make_shared<std::promise<ReclaimOutcome>>();
  auto future = promise->get_future();
  disk.io->scheduler().post_task([promise, ids, &vol] {
    ReclaimOutcome out;
    for (auto id : ids) {
      const auto it = vol.segments().find(id);
      const std::uint64_t extents = it == vol.segments().end() ? 0 : it->second.size();
      if (auto r = storage::reclaim_segment(vol, id); !r && r.error() != errc::not_found) {
        out.error = "segment " + std::to_string(id) + ": " + r.error().message();
        break;  // left 'deleting': the next start's recovery finishes it
      }
      out.done.push_back(id);
      out.bytes += extents * vol.extent_bytes();
    }
    promise->set_value(std::move(out));
  });
  // The IO thread runs it within a cycle or two.
  while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (stop.stop_requested()) return std::nullopt;
  }
  return future.get();
}

}  // namespace vigil::server
