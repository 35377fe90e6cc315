#pragma once
// Finished exports (MP4 files built in memory) kept for the requests that follow the first:
// a player fetches one export in several Range requests, and an operator downloads what they
// just previewed. Keyed by the export's ETag (what was recorded and which range), least
// recently used evicted first, within a byte budget. An export larger than the budget is
// served but not kept.
// Thread: any (one mutex, held for map operations only). Errors: none.
#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vigil::server {

class ExportCache {
 public:
  using Bytes = std::vector<std::byte>;
  explicit ExportCache(std::size_t budget_bytes) : budget_bytes_(budget_bytes) {}

  std::shared_ptr<const Bytes> find(const std::string& key);
  void put(const std::string& key, std::shared_ptr<const Bytes> data);
  std::size_t bytes() const;
  std::size_t budget_bytes() const noexcept { return budget_bytes_; }

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const Bytes>>>;
  const std::size_t budget_bytes_;
  mutable std::mutex mu_;
  Lru lru_;  // most recent first
  std::map<std::string, Lru::iterator> index_;
  std::size_t bytes_ = 0;
};

}  // namespace vigil::server
