#include "storage/background_broker.hpp"

namespace vigil::storage {

struct BackgroundBroker::Task {
  std::vector<BrokerExtent> extents;
  BrokerBlockFn on_block;
  BrokerDoneFn on_done;
  std::size_t extent = 0;        // the extent being read
  std::uint64_t at_bytes = 0;    // within it: the block in flight starts here
  std::uint64_t generation = 0;  // of the request in flight; a promote supersedes it
  bool promoted = false;
};

BackgroundBroker::BackgroundBroker(CycleScheduler& scheduler, std::size_t block_bytes, std::size_t alignment)
    : scheduler_(scheduler),
      block_bytes_(block_bytes / alignment * alignment),
      alignment_(alignment),
      alive_(std::make_shared<Alive>()) {
  alive_->broker = this;
}

BackgroundBroker::~BackgroundBroker() {
  std::lock_guard alive(alive_->mu);
  alive_->broker = nullptr;
}

Result<BackgroundBroker::TaskId> BackgroundBroker::register_read(std::vector<BrokerExtent> extents,
                                                                 BrokerBlockFn on_block, BrokerDoneFn on_done,
                                                                 bool promoted) {
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
  // Empty extents read nothing: skipped here so that issue() always has a block to read.
  std::erase_if(task->extents, [](const BrokerExtent& e) { return e.bytes == 0; });
  auto& t = *tasks_.emplace(id, std::move(task)).first->second;
  issue(id, t);
  return id;
}

void BackgroundBroker::issue(TaskId id, Task& task) {
  if (task.extent >= task.extents.size()) {
    // Nothing (left) to read: done, on the caller's thread for an empty task.
    auto done = std::move(task.on_done);
    tasks_.erase(id);
    if (done) done({});
    return;
  }
  const BrokerExtent& e = task.extents[task.extent];
  const std::uint64_t offset = e.offset + task.at_bytes;
  const auto bytes = static_cast<std::size_t>(std::min<std::uint64_t>(block_bytes_, e.bytes - task.at_bytes));
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
    auto done = std::move(task.on_done);
    tasks_.erase(it);
    if (done) done(outcome.result.error());
    return;
  }
  ++blocks_read_;
  bytes_read_ += buf->size();
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

bool BackgroundBroker::abort(TaskId task) {
  std::lock_guard lock(mu_);
  return tasks_.erase(task) > 0;
}

bool BackgroundBroker::promote(TaskId id) {
  std::lock_guard lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return false;
  if (it->second->promoted) return true;
  it->second->promoted = true;
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

}  // namespace vigil::storage
