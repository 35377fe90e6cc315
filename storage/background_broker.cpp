#include "storage/background_broker.hpp"

#include <algorithm>

#include "storage/freeblock_tier.hpp"

namespace vigil::storage {

struct BackgroundBroker::Task {
  std::vector<BrokerExtent> extents;
  BrokerBlockFn on_block;
  BrokerDoneFn on_done;
  std::size_t extent = 0;        // the extent being read
  std::uint64_t at_bytes = 0;    // within it: the block in flight starts here
  std::uint64_t generation = 0;  // of the request in flight; a promote supersedes it
  bool promoted = false;
  BrokerOrder order = BrokerOrder::in_order;
  std::map<std::uint64_t, std::uint64_t> left;  // any_order: byte ranges still wanted, start → end
  std::vector<BrokerWrite> writes;              // a write task's blocks; EXTENT is the next one
  bool write = false;
};

BackgroundBroker::BackgroundBroker(CycleScheduler& scheduler, std::size_t block_bytes, std::size_t alignment,
                                   FreeblockTier* tier)
    : scheduler_(scheduler),
      block_bytes_(block_bytes / alignment * alignment),
      alignment_(alignment),
      tier_(tier),
      alive_(std::make_shared<Alive>()) {
  alive_->broker = this;
  if (tier_) {
    tier_->set_sink([alive = alive_](std::uint64_t offset, std::span<const std::byte> data) {
      std::lock_guard lock(alive->mu);
      if (alive->broker) alive->broker->read_free(offset, data);
    });
  }
}

BackgroundBroker::~BackgroundBroker() {
  if (tier_) tier_->set_sink({});
  std::lock_guard alive(alive_->mu);
  alive_->broker = nullptr;
}

Result<BackgroundBroker::TaskId> BackgroundBroker::register_read(std::vector<BrokerExtent> extents,
                                                                 BrokerBlockFn on_block, BrokerDoneFn on_done,
                                                                 bool promoted, BrokerOrder order) {
  for (const auto& e : extents) {
    if (e.offset % alignment_ != 0 || e.bytes % alignment_ != 0) return errc::invalid_argument;
  }
  std::lock_guard lock(mu_);
  const TaskId id = next_id_++;
  auto task = std::make_unique<Task>();
  task->extents = std::move(extents);
  task->on_block = std::move(on_block);
  task->on_done = std::move(on_done);
  task->promoted = promoted;
  task->order = order;
  // Empty extents read nothing: skipped here so that issue() always has a block to read.
  std::erase_if(task->extents, [](const BrokerExtent& e) { return e.bytes == 0; });
  if (order == BrokerOrder::any_order) {
    for (const auto& e : task->extents) {
      // Overlapping extents of one task are read once.
      std::uint64_t from = e.offset;
      const std::uint64_t to = e.offset + e.bytes;
      auto it = task->left.upper_bound(from);
      if (it != task->left.begin() && std::prev(it)->second >= from) from = (--it)->first;
      std::uint64_t end = to;
      while (it != task->left.end() && it->first <= end) {
        end = std::max(end, it->second);
        it = task->left.erase(it);
      }
      task->left[from] = end;
      if (tier_) tier_->want(e.offset, e.bytes);
    }
  }
  auto& t = *tasks_.emplace(id, std::move(task)).first->second;
  issue(id, t);
  return id;
}

Result<BackgroundBroker::TaskId> BackgroundBroker::register_write(std::vector<BrokerWrite> blocks, BrokerDoneFn on_done,
                                                                  bool promoted) {
  for (const auto& b : blocks) {
    if (!b.data || b.offset % alignment_ != 0 || b.data->size() % alignment_ != 0) return errc::invalid_argument;
  }
  std::lock_guard lock(mu_);
  const TaskId id = next_id_++;
  auto task = std::make_unique<Task>();
  task->writes = std::move(blocks);
  task->write = true;
  task->on_done = std::move(on_done);
  task->promoted = promoted;
  auto& t = *tasks_.emplace(id, std::move(task)).first->second;
  issue_write(id, t);
  return id;
}

void BackgroundBroker::issue_write(TaskId id, Task& task) {
  if (task.extent >= task.writes.size()) {
    finish(id, {});
    return;
  }
  const BrokerWrite& b = task.writes[task.extent];
  const std::uint64_t generation = ++task.generation;
  IoRequest req{.cls = task.promoted ? IoClass::interactive : IoClass::background,
                .write = true,
                .offset = b.offset,
                .buf = b.data->span(),
                .done = [alive = alive_, id, generation, keep = b.data](const IoOutcome& o) {
                  std::lock_guard lock(alive->mu);
                  if (alive->broker) alive->broker->written(id, generation, o);
                }};
  scheduler_.submit(std::move(req));
}

void BackgroundBroker::written(TaskId id, std::uint64_t generation, const IoOutcome& outcome) {
  std::lock_guard lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second->generation != generation) return;
  Task& task = *it->second;
  if (!outcome.result) {
    finish(id, outcome.result.error());
    return;
  }
  bytes_written_ += task.writes[task.extent].data->size();
  ++task.extent;
  issue_write(id, task);
}

std::uint64_t BackgroundBroker::left_bytes(const Task& task) {
  std::uint64_t n = 0;
  for (const auto& [from, to] : task.left) n += to - from;
  return n;
}

void BackgroundBroker::unwant_left(const Task& task) {
  if (!tier_) return;
  for (const auto& [from, to] : task.left) tier_->unwant(from, to - from);
}

void BackgroundBroker::finish(TaskId id, Result<void> result) {
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  unwant_left(*it->second);
  auto done = std::move(it->second->on_done);
  tasks_.erase(it);
  if (done) done(result);
}

void BackgroundBroker::issue(TaskId id, Task& task) {
  const bool any = task.order == BrokerOrder::any_order;
  if (any ? task.left.empty() : task.extent >= task.extents.size()) {
    // Nothing (left) to read: done, on the caller's thread for an empty task.
    finish(id, {});
    return;
  }
  std::uint64_t offset = 0;
  std::size_t bytes = 0;
  if (any) {
    // The first range still wanted, from its block: tier 3 may have taken sectors inside it.
    const auto [from, to] = *task.left.begin();
    offset = from / alignment_ * alignment_;
    const std::uint64_t end = (to + alignment_ - 1) / alignment_ * alignment_;
    bytes = static_cast<std::size_t>(std::min<std::uint64_t>(block_bytes_, end - offset));
  } else {
    const BrokerExtent& e = task.extents[task.extent];
    offset = e.offset + task.at_bytes;
    bytes = static_cast<std::size_t>(std::min<std::uint64_t>(block_bytes_, e.bytes - task.at_bytes));
  }
  auto buf = std::make_shared<AlignedBuffer>(bytes, alignment_);
  const std::uint64_t generation = ++task.generation;
  IoRequest req{.cls = task.promoted ? IoClass::interactive : IoClass::background,
                .write = false,
                .offset = offset,
                .buf = buf->span(),
                .done = [alive = alive_, id, generation, buf, offset](const IoOutcome& o) {
                  std::lock_guard lock(alive->mu);
                  if (alive->broker) alive->broker->completed(id, generation, buf, offset, o);
                }};
  scheduler_.submit(std::move(req));
}

void BackgroundBroker::completed(TaskId id, std::uint64_t generation, std::shared_ptr<AlignedBuffer> buf,
                                 std::uint64_t offset, const IoOutcome& outcome) {
  std::lock_guard lock(mu_);
  auto it = tasks_.find(id);
  // Aborted, or a request a promote() superseded (its block is read again at interactive priority).
  if (it == tasks_.end() || it->second->generation != generation) return;
  Task& task = *it->second;
  if (!outcome.result) {
    finish(id, outcome.result.error());
    return;
  }
  ++blocks_read_;
  bytes_read_ += buf->size();
  if (task.order == BrokerOrder::any_order) {
    if (tier_) tier_->unwant(offset, buf->size());
    if (!deliver_wanted(id, offset, std::span<const std::byte>(buf->data(), buf->size()))) return;
    issue(id, *tasks_.at(id));
    return;
  }
  if (task.on_block) task.on_block(std::span<const std::byte>(buf->data(), buf->size()), offset);
  // The callback may have aborted its own task.
  it = tasks_.find(id);
  if (it == tasks_.end()) return;
  task.at_bytes += buf->size();
  if (task.at_bytes >= task.extents[task.extent].bytes) {
    ++task.extent;
    task.at_bytes = 0;
  }
  issue(id, task);
}

bool BackgroundBroker::deliver_wanted(TaskId id, std::uint64_t offset, std::span<const std::byte> data) {
  Task* task = tasks_.at(id).get();
  const std::uint64_t end = offset + data.size();
  std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;  // taken out of LEFT first: a callback may abort
  auto it = task->left.upper_bound(offset);
  if (it != task->left.begin() && std::prev(it)->second > offset) --it;
  while (it != task->left.end() && it->first < end) {
    const auto [from, to] = *it;
    const std::uint64_t a = std::max(from, offset), b = std::min(to, end);
    it = task->left.erase(it);
    if (from < a) task->left.emplace(from, a);
    if (b < to) it = task->left.emplace(b, to).first;
    runs.emplace_back(a, b);
  }
  for (const auto& [a, b] : runs) {
    if (task->on_block) task->on_block(data.subspan(static_cast<std::size_t>(a - offset), b - a), a);
    // The callback may have aborted its own task.
    auto found = tasks_.find(id);
    if (found == tasks_.end()) return false;
    task = found->second.get();
  }
  return true;
}

void BackgroundBroker::read_free(std::uint64_t offset, std::span<const std::byte> data) {
  std::lock_guard lock(mu_);
  std::vector<TaskId> any;
  for (const auto& [id, task] : tasks_) {
    if (task->order == BrokerOrder::any_order) any.push_back(id);
  }
  for (const TaskId id : any) {
    auto it = tasks_.find(id);
    if (it == tasks_.end()) continue;
    const std::uint64_t before = left_bytes(*it->second);
    if (!deliver_wanted(id, offset, data)) continue;
    Task& task = *tasks_.at(id);
    free_bytes_ += before - left_bytes(task);
    if (task.left.empty()) {
      ++task.generation;  // its tier-1 block in flight, if any, is dropped when it completes
      finish(id, {});
    }
  }
}

bool BackgroundBroker::abort(TaskId task) {
  std::lock_guard lock(mu_);
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return false;
  unwant_left(*it->second);
  tasks_.erase(it);
  return true;
}

bool BackgroundBroker::promote(TaskId id) {
  std::lock_guard lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return false;
  if (it->second->promoted) return true;
  it->second->promoted = true;
  // A write in flight is not issued again: its stale copy could land after the task is done and
  // the blocks are reused. The blocks after it go as interactive requests.
  if (it->second->write) return true;
  // The block in flight may wait for slack that never comes: read it again now, as interactive.
  issue(id, *it->second);
  return true;
}

std::size_t BackgroundBroker::running() const {
  std::lock_guard lock(mu_);
  return tasks_.size();
}

std::uint64_t BackgroundBroker::blocks_read() const {
  std::lock_guard lock(mu_);
  return blocks_read_;
}

std::uint64_t BackgroundBroker::bytes_read() const {
  std::lock_guard lock(mu_);
  return bytes_read_;
}

std::uint64_t BackgroundBroker::bytes_written() const {
  std::lock_guard lock(mu_);
  return bytes_written_;
}

std::uint64_t BackgroundBroker::free_bytes() const {
  std::lock_guard lock(mu_);
  return free_bytes_;
}

}  // namespace vigil::storage
