#include "server/disks/archive_reads.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "common/log.hpp"

namespace asio = boost::asio;

namespace vigil::server {

std::vector<RangeGet> range_gets(std::span<const storage::IoPiece> pieces,
                                 const std::vector<std::optional<catalog::ArchivedObject>>& objects,
                                 std::uint64_t merge_gap_bytes) {
  std::vector<RangeGet> gets;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto& p = pieces[i];
    const std::size_t slot = p.offset / catalog::kArchiveSlotBytes;
    const std::uint64_t first = p.offset % catalog::kArchiveSlotBytes;
    if (slot >= objects.size() || !objects[slot]) {
      throw std::out_of_range("archive read: piece at " + std::to_string(p.offset) + " names no archived segment");
    }
    const std::uint64_t size = objects[slot]->bytes;
    if (p.buf.empty() || first >= size) {
      throw std::out_of_range("archive read: piece at object offset " + std::to_string(first) + " is past the " +
                              std::to_string(size) + "-byte object " + objects[slot]->key);
    }
    const std::uint64_t last = std::min<std::uint64_t>(first + p.buf.size(), size) - 1;
    // The walk hands a batch's pieces in order: one that starts inside or close after the previous
    // GET (the next extent's share of a GOP past its header, or the next GOP sharing a block) is
    // read by the same GET.
    if (!gets.empty() && gets.back().slot == slot && first >= gets.back().first &&
        first <= gets.back().last + 1 + merge_gap_bytes) {
      gets.back().last = std::max(gets.back().last, last);
      gets.back().pieces.push_back(i);
      continue;
    }
    gets.push_back({.slot = slot, .first = first, .last = last, .pieces = {i}});
  }
  return gets;
}

ArchiveReads::ArchiveReads(archive::S3Endpoint endpoint, std::size_t threads)
    : endpoint_(std::move(endpoint)), pool_(threads) {}

ArchiveReads::~ArchiveReads() {
  stopping_ = true;
  pool_.join();  // the reads in progress end (each bounded by the client's deadline); pumps see stopping_
}

boost::system::error_code ArchiveReads::read(const std::vector<std::optional<catalog::ArchivedObject>>& objects,
                                             std::span<const storage::IoPiece> pieces) {
  try {
    const archive::S3Client s3(endpoint_);  // one connection per call: nothing shared between threads
    for (const auto& get : range_gets(pieces, objects)) {
      const auto& object = *objects[get.slot];
      const std::string bytes = s3.get_object(object.bucket, object.key, archive::ByteRange{get.first, get.last});
      if (bytes.size() != get.last - get.first + 1) {
        throw std::runtime_error("Range GET returned " + std::to_string(bytes.size()) + " bytes, not " +
                                 std::to_string(get.last - get.first + 1));
      }
      ++gets_;
      bytes_read_ += bytes.size();
      for (const std::size_t i : get.pieces) {
        const auto& p = pieces[i];
        const std::uint64_t at = p.offset % catalog::kArchiveSlotBytes - get.first;
        const std::size_t have = static_cast<std::size_t>(std::min<std::uint64_t>(p.buf.size(), bytes.size() - at));
        std::memcpy(p.buf.data(), bytes.data() + at, have);
        // Past the object's end: the rest of the piece's last block, which no GOP reaches.
        std::memset(p.buf.data() + have, 0, p.buf.size() - have);
      }
    }
    return {};
  } catch (const std::exception& e) {
    log::warn("archive: reading an archived segment failed", {{"error", e.what()}});
    return make_error_code(errc::unavailable);
  }
}

void ArchiveReads::submit(ArchivedObjects objects, std::vector<storage::IoPiece> pieces, std::shared_ptr<void> keep,
                          std::function<void(boost::system::error_code)> done) {
  asio::post(pool_, [this, objects = std::move(objects), pieces = std::move(pieces), keep = std::move(keep),
                     done = std::move(done)] { done(read(*objects, pieces)); });
}

struct ArchiveReads::Pump {
  Pump(asio::thread_pool& pool, std::weak_ptr<storage::PlaybackStream> s, ArchivedObjects o,
       std::shared_ptr<std::atomic<bool>> st)
      : stream(std::move(s)), objects(std::move(o)), stop(std::move(st)), timer(pool) {}
  std::weak_ptr<storage::PlaybackStream> stream;
  ArchivedObjects objects;
  std::shared_ptr<std::atomic<bool>> stop;
  asio::steady_timer timer;
  int no_data = 0;  // prepare() found nothing to read this many times in a row
};

void ArchiveReads::start_pump(std::weak_ptr<storage::PlaybackStream> stream, ArchivedObjects objects,
                              std::shared_ptr<std::atomic<bool>> stop) {
  auto pump = std::make_shared<Pump>(pool_, std::move(stream), std::move(objects), std::move(stop));
  asio::post(pool_, [this, pump] { pump_step(pump); });
}

void ArchiveReads::pump_step(std::shared_ptr<Pump> pump) {
  if (stopping_ || pump->stop->load()) return;
  auto stream = pump->stream.lock();
  if (!stream) return;  // the playback is gone
  storage::StreamIo io = stream->prepare(0);
  if (io.pieces.empty()) {
    const std::string why = io.skip_reason ? io.skip_reason : "";
    if (why == "failed") return;
    // No data three times running: every GOP was read (one round may hand over damaged GOPs only).
    if (why == "no_data") {
      if (++pump->no_data > 2) return;
      asio::post(pool_, [this, pump] { pump_step(pump); });
      return;
    }
    // The viewer holds a full buffer: look again shortly (a disk's scheduler looks every cycle).
    pump->timer.expires_after(std::chrono::milliseconds(20));
    pump->timer.async_wait([this, pump](const boost::system::error_code& ec) {
      if (!ec) pump_step(pump);
    });
    return;
  }
  pump->no_data = 0;
  const auto ec = read(*pump->objects, io.pieces);
  stream->finished(0, ec ? Result<void>(ec) : Result<void>());
  asio::post(pool_, [this, pump] { pump_step(pump); });
}

}  // namespace vigil::server
