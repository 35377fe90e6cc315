#pragma once
// Reads of archived segments (docs/archive.md, "Readers"): the pieces a GOP walk
// (storage::PlaybackStream) asks for, fetched from the segments' objects by S3 Range GETs on
// threads of its own — never a disk's IO thread, never a network thread waiting on the store.
// A piece's offset names its segment and object offset (catalog::lay_out_as_object); the pieces
// of one GOP become one Range GET (range_gets), and bytes past the object's end (a piece is read
// to its block's end) are zeros, as the GOP walk's scanner stops at the GOP's end anyway. The walk
// verifies every record's CRC and sequence, as for a volume.
// Thread: submit() and start_pump() from any thread; reads and DONE on its pool. Errors: a read's
// failure (the store down, a refusal, a short object) as an error code to DONE, logged here.
#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <boost/system/error_code.hpp>
#include <vector>

#include "archive/s3_client.hpp"
#include "catalog/playback_rows.hpp"
#include "common/errors.hpp"
#include "storage/playback_stream.hpp"

namespace vigil::server {

// One Range GET: object bytes [first, last] (inclusive, as HTTP's Range) of segment SLOT, and
// the pieces it fills.
struct RangeGet {
  std::size_t slot = 0;
  std::uint64_t first = 0, last = 0;
  std::vector<std::size_t> pieces;  // indices into the pieces given
};
// The Range GETs that read PIECES (offsets laid out by catalog::lay_out_as_object) of objects
// OBJECTS (by slot): pieces of one slot closer than MERGE_GAP_BYTES (an extent header between two
// extents' shares of a GOP) share one GET; each is clipped to its object's size. A piece of a
// slot with no object, or past its object's end, throws std::out_of_range.
std::vector<RangeGet> range_gets(std::span<const storage::IoPiece> pieces,
                                 const std::vector<std::optional<catalog::ArchivedObject>>& objects,
                                 std::uint64_t merge_gap_bytes = 64u << 10);

using ArchivedObjects = std::shared_ptr<const std::vector<std::optional<catalog::ArchivedObject>>>;

class ArchiveReads {
 public:
  explicit ArchiveReads(archive::S3Endpoint endpoint, std::size_t threads = 4);
  ~ArchiveReads();  // stops pumps, then waits for the reads in progress
  ArchiveReads(const ArchiveReads&) = delete;
  ArchiveReads& operator=(const ArchiveReads&) = delete;

  // Fills PIECES from OBJECTS on the pool, then calls DONE there (no error, or the first).
  // KEEP owns the pieces' buffers until DONE.
  void submit(ArchivedObjects objects, std::vector<storage::IoPiece> pieces, std::shared_ptr<void> keep,
              std::function<void(boost::system::error_code)> done);

  // Drives STREAM (a wire playback's read stream over OBJECTS) on the pool, as a disk's cycle
  // scheduler drives a local one: prepare, read, finished, again while its double buffer has room
  // (polling every POLL while the viewer holds a full one). Ends when the stream is read, fails,
  // is no longer owned elsewhere, or STOP is set.
  void start_pump(std::weak_ptr<storage::PlaybackStream> stream, ArchivedObjects objects,
                  std::shared_ptr<std::atomic<bool>> stop);

  std::uint64_t bytes_read() const noexcept { return bytes_read_.load(); }
  std::uint64_t gets() const noexcept { return gets_.load(); }

 private:
  boost::system::error_code read(const std::vector<std::optional<catalog::ArchivedObject>>& objects,
                                 std::span<const storage::IoPiece> pieces);
  struct Pump;
  void pump_step(std::shared_ptr<Pump> pump);

  archive::S3Endpoint endpoint_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> bytes_read_{0}, gets_{0};
  boost::asio::thread_pool pool_;  // last: its threads use the members above
};

}  // namespace vigil::server
