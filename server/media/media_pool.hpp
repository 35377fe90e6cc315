#pragma once
// Where media work runs: MP4 and fragmented-MP4 muxing (exports, HLS segments) and thumbnail
// decoding, on a few threads of their own, never on the network threads that also carry the
// recorders' packets and acknowledgements. A route co_awaits run(): the work is posted to the
// pool, and the route resumes on its own network thread with the result.
// Memory is bounded by who may start work, not here: exports and HLS segments reserve their
// bytes from the export cache's build budget (export_cache.hpp), thumbnails take one of a
// bounded number of build slots (reserve_thumbnail): a request beyond either is answered 503 with
// Retry-After, never queued without bound.
// Thread: run() from any coroutine; the work runs on a pool thread. Errors: what the work
// throws, rethrown in the awaiting coroutine — but FFmpeg's failures (std::runtime_error from
// the muxer or the decoder) become ApiError 422: recorded bytes FFmpeg refuses are the
// recording's fault, not the server's, and are answered as such.
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include "server/net/api_error.hpp"

namespace vigil::server {

// Converts FN's libav failure into 422 (see the header).
template <class Fn>
auto with_media_errors(Fn& fn) -> std::invoke_result_t<Fn&> {
  try {
    return fn();
  } catch (const ApiError&) {
    throw;
  } catch (const std::system_error&) {
    throw;  // a device error, not the media's
  } catch (const std::runtime_error& e) {
    throw ApiError(ApiErrc::unprocessable, std::string("the recorded media cannot be processed: ") + e.what());
  }
}

class MediaPool {
 public:
  // THREADS ≥ 1 workers; at most THUMBNAIL_BUILDS thumbnails decoded at once.
  MediaPool(std::size_t threads, std::size_t thumbnail_builds);
  ~MediaPool();
  MediaPool(const MediaPool&) = delete;
  MediaPool& operator=(const MediaPool&) = delete;

  // FN() on a pool thread; its result back in the awaiting coroutine, on that coroutine's
  // executor. FN is taken by reference (`co_await pool.run(lambda)`: the lambda lives until the
  // full expression, the co_await, ends). FN captures by reference only: GCC 12 destroys a
  // temporary lambda's by-value captures (a std::string) twice in a co_await expression, and a
  // coroutine that took one by value did the same.
  template <class Fn>
  boost::asio::awaitable<std::invoke_result_t<Fn&>> run(Fn& fn) {
    return boost::asio::co_spawn(pool_.get_executor(), work(&fn), boost::asio::use_awaitable);
  }

  // FN() where the returned awaitable is resumed (with_media_errors).
  template <class Fn>
  static boost::asio::awaitable<std::invoke_result_t<Fn&>> work(Fn* fn) {
    co_return with_media_errors(*fn);
  }

  // One thumbnail build in progress, until destroyed.
  class Slot {
   public:
    explicit Slot(std::atomic<std::size_t>& used) : used_(&used) {}
    Slot(Slot&& o) noexcept : used_(o.used_) { o.used_ = nullptr; }
    Slot& operator=(Slot&& o) noexcept {
      std::swap(used_, o.used_);
      return *this;
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() {
      if (used_) used_->fetch_sub(1);
    }

   private:
    std::atomic<std::size_t>* used_;
  };
  // A slot, or nullopt when thumbnail_builds are in progress (the route answers 503).
  std::optional<Slot> reserve_thumbnail();

  // Waits for the work posted so far (shutdown; see Daemon::run).
  void join() { pool_.join(); }

  std::size_t threads() const noexcept { return threads_; }
  std::size_t thumbnail_builds() const noexcept { return thumbnail_builds_; }

 private:
  const std::size_t threads_, thumbnail_builds_;
  std::atomic<std::size_t> thumbnails_used_{0};
  boost::asio::thread_pool pool_;
};

// FN() on POOL, or in place where there is none (unit rigs). FN: as MediaPool::run.
template <class Fn>
boost::asio::awaitable<std::invoke_result_t<Fn&>> run_media(MediaPool* pool, Fn&& fn) {
  if (pool) return pool->run(fn);
  return MediaPool::work(&fn);
}

}  // namespace vigil::server
