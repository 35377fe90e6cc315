#include "server/media/clip_reader.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <tuple>

namespace asio = boost::asio;

namespace vigil::server {
namespace {

// Interactive requests in flight, all readers together: shutdown waits for them (see
// ClipReader::wait_for_requests) so that no completion is posted to a destroyed io_context.
std::mutex inflight_mu;
std::condition_variable inflight_cv;
std::size_t inflight = 0;

void request_started() {
  std::lock_guard lock(inflight_mu);
  ++inflight;
}

void request_done() {
  std::lock_guard lock(inflight_mu);
  if (--inflight == 0) inflight_cv.notify_all();
}

// Issues PIECES as interactive reads and completes with the first error (or none) once all
// are done. KEEP owns the buffers the pieces point into.
template <class Token>
auto async_read_pieces(storage::CycleScheduler& scheduler, std::vector<storage::IoPiece>& pieces,
                       const std::shared_ptr<void>& keep, Token&& token) {
  return asio::async_initiate<Token, void(boost::system::error_code)>(
      [&scheduler, &pieces](auto handler, std::shared_ptr<void> owner) {
        using Handler = decltype(handler);
        struct State {
          explicit State(Handler h, std::shared_ptr<void> k, std::size_t n)
              : handler(std::move(h)), keep(std::move(k)), left(n) {}
          Handler handler;
          std::shared_ptr<void> keep;
          std::mutex mu;
          std::size_t left;
          boost::system::error_code ec;
        };
        auto state = std::make_shared<State>(std::move(handler), std::move(owner), pieces.size());
        auto ex = asio::get_associated_executor(state->handler);
        for (const auto& p : pieces) {
          request_started();
          scheduler.submit(storage::IoRequest{.cls = storage::IoClass::interactive,
                                              .write = false,
                                              .offset = p.offset,
                                              .buf = p.buf,
                                              .done = [state, ex](const storage::IoOutcome& o) {
                                                bool last = false;
                                                {
                                                  std::lock_guard lock(state->mu);
                                                  if (!o.result && !state->ec) state->ec = o.result.error();
                                                  last = --state->left == 0;
                                                }
                                                if (last) {
                                                  asio::post(ex, [state]() mutable {
                                                    const auto ec = state->ec;
                                                    std::move(state->handler)(ec);
                                                  });
                                                }
                                                request_done();
                                              }});
        }
      },
      token, keep);
}

// Reads PIECES of the archived OBJECTS on READS' threads; completes on the caller's executor.
template <class Token>
auto async_read_archive(ArchiveReads& reads, const ArchivedObjects& objects, std::vector<storage::IoPiece>& pieces,
                        const std::shared_ptr<void>& keep, Token&& token) {
  return asio::async_initiate<Token, void(boost::system::error_code)>(
      [&reads, &objects, &pieces](auto handler, std::shared_ptr<void> owner) {
        auto ex = asio::get_associated_executor(handler);
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        request_started();
        reads.submit(objects, pieces, std::move(owner), [h, ex](boost::system::error_code ec) {
          asio::post(ex, [h, ec]() mutable { std::move (*h)(ec); });
          request_done();
        });
      },
      token, keep);
}

}  // namespace

ClipReader::ClipReader(ArchiveReads& archive, ArchivedObjects objects, std::vector<storage::PlaybackSegment> segments,
                       storage::PlaybackRange range, std::size_t block_bytes, std::size_t batch_bytes)
    : archive_(&archive),
      objects_(std::move(objects)),
      stream_(std::make_shared<storage::PlaybackStream>(std::move(segments), range, batch_bytes, block_bytes)) {}

ClipReader::ClipReader(storage::CycleScheduler& scheduler, std::vector<storage::PlaybackSegment> segments,
                       storage::PlaybackRange range, std::size_t block_bytes, std::size_t batch_bytes)
    : scheduler_(&scheduler),
      stream_(std::make_shared<storage::PlaybackStream>(std::move(segments), range, batch_bytes, block_bytes)) {}

asio::awaitable<std::vector<std::shared_ptr<storage::PlaybackGop>>> ClipReader::next() {
  std::vector<std::shared_ptr<storage::PlaybackGop>> out;
  // Each round either hands over GOPs, reads more, or finds the range done; a round that does
  // none of these would loop for ever, so it is an error.
  for (int idle_rounds = 0; out.empty();) {
    while (auto g = stream_->pop()) out.push_back(std::move(g));
    if (!out.empty()) break;
    if (stream_->done()) {
      if (auto e = stream_->error()) throw std::system_error(*e, "reading the clip");
      break;
    }
    storage::StreamIo io = stream_->prepare(0);
    if (io.pieces.empty()) {
      if (++idle_rounds > 2) throw std::logic_error("clip reader: no progress");
      continue;  // only damaged GOPs this round: handed over already, as gaps
    }
    idle_rounds = 0;
    requests_ += io.pieces.size();
    // No temporaries in the awaited call (GCC 12, see CatalogPool::run).
    const std::shared_ptr<void> keep = stream_;
    boost::system::error_code ec;
    if (scheduler_) {
      std::tie(ec) = co_await async_read_pieces(*scheduler_, io.pieces, keep, asio::as_tuple(asio::use_awaitable));
    } else {
      std::tie(ec) =
          co_await async_read_archive(*archive_, objects_, io.pieces, keep, asio::as_tuple(asio::use_awaitable));
    }
    stream_->finished(0, ec ? Result<void>(ec) : Result<void>());
  }
  co_return out;
}

void ClipReader::wait_for_requests() {
  std::unique_lock lock(inflight_mu);
  inflight_cv.wait(lock, [] { return inflight == 0; });
}

}  // namespace vigil::server
