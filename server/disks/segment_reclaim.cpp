#include "server/disks/segment_reclaim.hpp"

#include <atomic>
#include <future>
#include <memory>

#include "server/disks/disk_set.hpp"
#include "storage/background_broker.hpp"
#include "storage/volume.hpp"

namespace vigil::server {
namespace {

// One run's state, shared by the waiting thread and the IO thread's steps.
struct Run {
  std::vector<std::uint64_t> ids;
  std::size_t next = 0;  // IO thread only
  ReclaimOutcome out;    // IO thread only, until the promise is set
  std::promise<ReclaimOutcome> promise;
  std::atomic<storage::BackgroundBroker::TaskId> task{0};  // the segment being written
};

void finish(const std::shared_ptr<Run>& run) { run->promise.set_value(std::move(run->out)); }

// On the IO thread: the next segment's tombstones, written by one broker task whose completion
// frees its extents and takes the next.
void step(std::shared_ptr<Run> run, storage::Volume& vol, storage::BackgroundBroker& broker) {
  while (run->next < run->ids.size()) {
    const std::uint64_t id = run->ids[run->next];
    const auto it = vol.segments().find(id);
    if (it == vol.segments().end()) {  // not on the volume (any more): nothing to free
      run->out.done.push_back(id);
      ++run->next;
      continue;
    }
    std::vector<std::uint64_t> extents;
    std::vector<storage::BrokerWrite> blocks;
    for (const auto& use : it->second) {
      auto t = vol.prepare_free(use.extent);
      if (!t) {
        for (const auto e : extents) vol.abandon_free(e);
        run->out.error = "segment " + std::to_string(id) + ": " + t.error().message();
        return finish(run);  // left 'deleting': the next start's recovery finishes it
      }
      extents.push_back(t->extent);
      blocks.push_back({t->offset, t->block});
    }
    auto task = broker.register_write(std::move(blocks), [run, &vol, &broker, extents, id](Result<void> written) {
      if (!written) {
        for (const auto e : extents) vol.abandon_free(e);
        run->out.error = "segment " + std::to_string(id) + ": tombstone write: " + written.error().message();
        return finish(run);
      }
      for (const auto e : extents) vol.commit_free(e);
      run->out.done.push_back(id);
      run->out.bytes += extents.size() * vol.extent_bytes();
      ++run->next;
      step(run, vol, broker);
    });
    if (!task) {
      for (const auto e : extents) vol.abandon_free(e);
      run->out.error = "segment " + std::to_string(id) + ": " + task.error().message();
      return finish(run);
    }
    run->task = *task;
    return;  // goes on in the task's completion
  }
  finish(run);
}

}  // namespace

std::optional<ReclaimOutcome> reclaim_on_io_thread(Disk& disk, const std::vector<std::uint64_t>& ids,
                                                   std::stop_token stop) {
  auto& vol = *disk.volume->volume;
  auto& broker = disk.io->broker();
  auto run = std::make_shared<Run>();
  run->ids = ids;
  auto future = run->promise.get_future();
  disk.io->scheduler().post_task([run, &vol, &broker] { step(run, vol, broker); });
  const auto start = std::chrono::steady_clock::now();
  storage::BackgroundBroker::TaskId promoted = 0;
  while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (stop.stop_requested()) return std::nullopt;
    // Overdue: a disk without slack. The writes still to go become interactive requests.
    const auto task = run->task.load();
    if (task != 0 && task != promoted && std::chrono::steady_clock::now() - start > kPromoteAfter) {
      broker.promote(task);
      promoted = task;
    }
  }
  return future.get();
}

}  // namespace vigil::server
