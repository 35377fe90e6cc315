#include "server/media/media_pool.hpp"

namespace vigil::server {

MediaPool::MediaPool(std::size_t threads, std::size_t thumbnail_builds)
    : threads_(std::max<std::size_t>(threads, 1)),
      thumbnail_builds_(std::max<std::size_t>(thumbnail_builds, 1)),
      pool_(threads_) {}

// Work already posted finishes (its coroutines hold what it uses); the threads are joined.
MediaPool::~MediaPool() { pool_.join(); }

std::optional<MediaPool::Slot> MediaPool::reserve_thumbnail() {
  auto used = thumbnails_used_.load();
  do {
    if (used >= thumbnail_builds_) return std::nullopt;
  } while (!thumbnails_used_.compare_exchange_weak(used, used + 1));
  return Slot(thumbnails_used_);
}

}  // namespace vigil::server
