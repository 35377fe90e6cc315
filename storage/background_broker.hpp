#pragma once
// The background broker of one disk (docs/scheduler.md, "The background broker"): the shape of
// seed 003's freeblock interface (Table 1 of the research note's §1.2) over the cycle scheduler.
// A task is a list of extents to read; the broker reads it block by block and hands each block
// to the task's callback, in order, then calls its done callback once.
//
// Tier 1 of the research note's §5.3: blocks are IoClass::background requests, served in a
// cycle's slack once its stream IOs are done and within background_budget, so background work
// never costs an admitted stream its deadline (the scheduler's rule). Tiers 2 and 3, on the
// simulated hard disk (a FreeblockTier given here and to the scheduler's Mechanics): the blocks of
// any-order tasks are also read just ahead of a stream read they end at (tier 2, within the budget
// and the slack) and for free inside the rotational latency before foreground commands (tier 3),
// and handed to their task as they come; tier 1 then reads only what is still wanted.
// promote() moves a task to interactive requests: overdue work is served within the interactive
// share, ahead of the slack, as any interactive read.
//
// One tier-1 block of a task is in flight at a time; an in-order task's blocks arrive in order
// (the scrubber verifies a segment as it streams by). An any-order task's pieces arrive in any
// order and size (sector multiples), each byte of its extents exactly once. Tasks run side by
// side; overlapping any-order tasks share tier 3's wanted set (a sector read for free goes to
// each, and one task's abort stops tier 3 wanting it for the others too). Each request reads into its own buffer, so a promote() can reissue the
// block in flight at once: the superseded background request still completes, and is dropped.
// Thread: register/abort/promote from any thread; callbacks on the disk's IO thread. After
// abort() returns no callback of that task runs (unless abort is called from inside one of its
// callbacks, which is allowed). Errors: a failed read ends its task with the error (on_done).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/errors.hpp"
#include "storage/cycle_scheduler.hpp"

namespace vigil::storage {

struct BrokerExtent {
  std::uint64_t offset = 0;  // device offset, block-aligned
  std::uint64_t bytes = 0;   // a block multiple
};

// A block to write: DATA (aligned, a block multiple) at OFFSET. Shared: the request may be
// reissued by promote() while the first is still in flight.
struct BrokerWrite {
  std::uint64_t offset = 0;
  std::shared_ptr<AlignedBuffer> data;
};

// A block: DATA as read from the device at OFFSET.
using BrokerBlockFn = std::function<void(std::span<const std::byte> data, std::uint64_t offset)>;
// The task ended: every block delivered (ok), or a read failed (its error).
using BrokerDoneFn = std::function<void(Result<void>)>;
enum class BrokerOrder { in_order, any_order };

class FreeblockTier;

class BackgroundBroker {
 public:
  using TaskId = std::uint64_t;

  // BLOCK_BYTES: the most one request reads (a multiple of ALIGNMENT, the device's block).
  // TIER: the scheduler's Mechanics::freeblock (tier 3), or null; it must outlive the broker.
  BackgroundBroker(CycleScheduler& scheduler, std::size_t block_bytes, std::size_t alignment,
                   FreeblockTier* tier = nullptr);
  ~BackgroundBroker();
  BackgroundBroker(const BackgroundBroker&) = delete;
  BackgroundBroker& operator=(const BackgroundBroker&) = delete;

  // Reads EXTENTS in order. invalid_argument for an extent that is not block-aligned. PROMOTED:
  // as interactive requests from the first block (work already overdue when it is registered).
  // ORDER any_order: tier 3 may deliver pieces of it early (see above).
  Result<TaskId> register_read(std::vector<BrokerExtent> extents, BrokerBlockFn on_block, BrokerDoneFn on_done,
                               bool promoted = false, BrokerOrder order = BrokerOrder::in_order);
  // Writes BLOCKS in order, one in flight at a time, each durable when it completes (the
  // scheduler's last chunk of a write is FUA); ON_DONE once all are (ok) or at the first failure
  // (its error: the blocks before it are durable, it and those after may not be). Same classes as
  // reads: background in the slack, PROMOTED as interactive. invalid_argument for a block that is
  // not aligned. Tiers 2 and 3 read only.
  Result<TaskId> register_write(std::vector<BrokerWrite> blocks, BrokerDoneFn on_done, bool promoted = false);
  // No callback of TASK runs after this returns; other tasks are untouched. False: not running.
  bool abort(TaskId task);
  // The rest of TASK is read (or written) as interactive requests (overdue work); a read in flight
  // is issued again at once, a write in flight is not (see promote()). False: not running.
  bool promote(TaskId task);

  std::size_t running() const;
  std::uint64_t blocks_read() const;  // delivered by tier 1, all tasks
  std::uint64_t bytes_read() const;   // by tier 1
  std::uint64_t free_bytes() const;   // delivered by tiers 2 and 3 to tasks
  std::uint64_t bytes_written() const;

 private:
  struct Task;
  void issue(TaskId id, Task& task);  // REQUIRES mu_
  void completed(TaskId id, std::uint64_t generation, std::shared_ptr<AlignedBuffer> buf, std::uint64_t offset,
                 const IoOutcome& outcome);
  void issue_write(TaskId id, Task& task);  // REQUIRES mu_
  void written(TaskId id, std::uint64_t generation, const IoOutcome& outcome);
  // Any-order tasks: hands TASK the bytes of DATA (read at OFFSET) it still wants, in runs.
  // False: the task was aborted or ended by its callback.  REQUIRES mu_
  bool deliver_wanted(TaskId id, std::uint64_t offset, std::span<const std::byte> data);
  void read_free(std::uint64_t offset, std::span<const std::byte> data);  // tier 3's sink
  void finish(TaskId id, Result<void> result);                            // REQUIRES mu_
  static std::uint64_t left_bytes(const Task& task);                      // an any-order task's wanted bytes
  void unwant_left(const Task& task);                                     // tier 3 stops wanting them

  CycleScheduler& scheduler_;
  std::size_t block_bytes_, alignment_;
  FreeblockTier* tier_;
  // Held while a callback runs and by abort(): abort's promise. Recursive: a callback may abort.
  mutable std::recursive_mutex mu_;
  std::map<TaskId, std::unique_ptr<Task>> tasks_;
  TaskId next_id_ = 1;
  std::uint64_t blocks_read_ = 0, bytes_read_ = 0, free_bytes_ = 0, bytes_written_ = 0;
  // Outlives the broker in the requests' callbacks: a completion after destruction is dropped.
  struct Alive {
    std::mutex mu;
    BackgroundBroker* broker = nullptr;
  };
  std::shared_ptr<Alive> alive_;
};

}  // namespace vigil::storage
