#pragma once
// Reads a range of recorded video for the interactive query API (MP4 export, HLS segments,
// thumbnails): the GOPs of a playback plan, read as *interactive* IO on the disk's cycle
// scheduler — requests that cut in between chunks of stream IO when the cycle's slack allows
// (Semi-preemptible IO, docs/scheduler.md), so a clip fetch is fast without taking admitted
// streams' time. Nothing is admitted: interactive IO lives in the 1 − r_RT share.
//
// The GOP walk and the verification (every record's CRC and sequence; damaged GOPs become
// gaps) are PlaybackStream's: this class drives one the way the IO thread drives a real-time
// stream — prepare() a batch, issue its pieces, finished() — but issues the pieces as
// interactive requests, a batch at a time, and awaits them from a coroutine. Buffers stay
// owned by the stream (shared with the in-flight requests), so a request that completes after
// the reader is gone writes into live memory.
// Archived segments (only the object store holds them) are read the same way, their pieces by S3
// Range GETs on the archive's own threads (ArchiveReads) instead of the disk's scheduler.
// Thread: one coroutine at a time (the session's network thread). Errors: next() throws
// std::system_error for a device error; damaged GOPs are returned flagged, not thrown.
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <vector>

#include "server/disks/archive_reads.hpp"
#include "storage/cycle_scheduler.hpp"
#include "storage/playback_stream.hpp"

namespace vigil::server {

class ClipReader {
 public:
  // BATCH_BYTES: how much one round of interactive requests reads (a few chunks: small enough
  // that each request passes the slack test quickly under load, large enough for throughput).
  ClipReader(storage::CycleScheduler& scheduler, std::vector<storage::PlaybackSegment> segments,
             storage::PlaybackRange range, std::size_t block_bytes, std::size_t batch_bytes = 4u << 20);
  // Archived SEGMENTS (laid out by catalog::lay_out_as_object over OBJECTS): the same walk, its
  // pieces read by Range GETs on ARCHIVE's threads (docs/archive.md, "Readers").
  ClipReader(ArchiveReads& archive, ArchivedObjects objects, std::vector<storage::PlaybackSegment> segments,
             storage::PlaybackRange range, std::size_t block_bytes, std::size_t batch_bytes = 4u << 20);

  // The next GOPs in serving order; empty once the range is read.
  boost::asio::awaitable<std::vector<std::shared_ptr<storage::PlaybackGop>>> next();

  std::size_t gop_total() const noexcept { return stream_->gop_total(); }
  std::uint64_t bytes_read() const { return stream_->bytes_read(); }
  std::uint64_t requests() const noexcept { return requests_; }

  // Blocks until no reader's request is in flight. vigild calls it at shutdown after the
  // network threads stopped and before their io_contexts are destroyed: a completion posts to
  // the io_context of the coroutine that awaits it.
  static void wait_for_requests();

 private:
  storage::CycleScheduler* scheduler_ = nullptr;  // one of these two reads the pieces
  ArchiveReads* archive_ = nullptr;
  ArchivedObjects objects_;
  std::shared_ptr<storage::PlaybackStream> stream_;
  std::uint64_t requests_ = 0;
};

}  // namespace vigil::server
