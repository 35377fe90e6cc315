#pragma once
// Finished exports (MP4 files built in memory) kept for the requests that follow the first:
// a player fetches one export in several Range requests, and an operator downloads what they
// just previewed. Keyed by the export's ETag (what was recorded and which range), least
// recently used evicted first, within a byte budget. An export larger than the budget is
// served but not kept.
// It also bounds the memory of builds in progress: a build reserves about twice the video it
// covers (the GOPs read plus the file written) and one that would pass the build budget is
// refused (the route answers 503, retry later) rather than queued or let grow.
// Thread: any (one mutex, held for map operations only; the build budget is an atomic).
// Errors: none.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vigil::server {

class ExportCache {
 public:
  using Bytes = std::vector<std::byte>;
  ExportCache(std::size_t budget_bytes, std::uint64_t build_budget_bytes = 1ull << 30)
      : budget_bytes_(budget_bytes), build_budget_bytes_(build_budget_bytes) {}

  // Memory reserved for one build until it is destroyed.
  class BuildLease {
   public:
    BuildLease(std::atomic<std::uint64_t>& used, std::uint64_t bytes) : used_(&used), bytes_(bytes) {}
    BuildLease(BuildLease&& o) noexcept : used_(o.used_), bytes_(o.bytes_) { o.used_ = nullptr; }
    BuildLease& operator=(BuildLease&& o) noexcept {
      if (this != &o) {
        release();
        used_ = o.used_;
        bytes_ = o.bytes_;
        o.used_ = nullptr;
      }
      return *this;
    }
    BuildLease(const BuildLease&) = delete;
    BuildLease& operator=(const BuildLease&) = delete;
    ~BuildLease() { release(); }

   private:
    void release() noexcept {
      if (used_) used_->fetch_sub(bytes_);
      used_ = nullptr;
    }
    std::atomic<std::uint64_t>* used_;
    std::uint64_t bytes_;
  };
  // BYTES for a build, or nullopt when the builds in progress already hold the budget.
  std::optional<BuildLease> reserve_build(std::uint64_t bytes);

  std::shared_ptr<const Bytes> find(const std::string& key);
  void put(const std::string& key, std::shared_ptr<const Bytes> data);
  std::size_t bytes() const;
  std::size_t budget_bytes() const noexcept { return budget_bytes_; }

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const Bytes>>>;
  const std::size_t budget_bytes_;
  const std::uint64_t build_budget_bytes_;
  std::atomic<std::uint64_t> building_bytes_{0};
  mutable std::mutex mu_;
  Lru lru_;  // most recent first
  std::map<std::string, Lru::iterator> index_;
  std::size_t bytes_ = 0;
};

}  // namespace vigil::server
