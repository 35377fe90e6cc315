#include "server/media/export_cache.hpp"

namespace vigil::server {

std::shared_ptr<const ExportCache::Bytes> ExportCache::find(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void ExportCache::put(const std::string& key, std::shared_ptr<const Bytes> data) {
  if (!data || data->size() > budget_bytes_) return;
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= it->second->second->size();
    lru_.erase(it->second);
    index_.erase(it);
  }
  bytes_ += data->size();
  lru_.emplace_front(key, std::move(data));
  index_[key] = lru_.begin();
  while (bytes_ > budget_bytes_ && !lru_.empty()) {
    bytes_ -= lru_.back().second->size();
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

std::optional<ExportCache::BuildLease> ExportCache::reserve_build(std::uint64_t bytes) {
  std::uint64_t used = building_bytes_.load();
  do {
    // One build alone may always run (the request caps keep it bounded).
    if (used > 0 && used + bytes > build_budget_bytes_) return std::nullopt;
  } while (!building_bytes_.compare_exchange_weak(used, used + bytes));
  return std::optional<BuildLease>(std::in_place, building_bytes_, bytes);
}

std::size_t ExportCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace vigil::server
