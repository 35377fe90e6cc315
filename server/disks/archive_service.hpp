#pragma once
// The archive tier's copier (docs/archive.md, issue [L]): every closed segment is copied to
// S3-compatible object storage once it has been closed for `after`, one object per segment
// holding its logical bytes [0, data_bytes), so a GOP index offset is an object offset and one
// Range GET reads one GOP.
//
// A copy is verified end to end before the catalog records it (segment_copies): the bytes are read
// through the disk's background broker (the cycles' slack, never an admitted stream's deadline),
// checked against the segment's record CRCs and catalog checksum before they are sent (a damaged
// segment is not copied: the scrubber reports it), sent with a CRC32C per part that the store
// checks on receipt, and the stored object's size is read back. Only a recorded copy counts:
// an upload that fails midway is aborted and retried at the next pass, and a segment reclaimed
// while it was copied has its object deleted again.
//
// Archive retention: a copy whose segment ended longer ago than its camera's
// archive_retention_days (or `retention_days`) has its object version deleted, then its row, and
// its segment's row when only the archive held it — never under an evidence lock or a legal hold.
//
// Evidence locks become S3 legal holds: each pass puts a hold on the copies of segments an active
// lock overlaps and lifts it from those no lock overlaps any more (segment_copies.legal_hold), so a
// locked copy cannot be deleted from the store while the case is open, even by its credentials.
//
// Memory: one segment's bytes at a time (at most 256 MiB, the largest segment a recording writes).
// Thread: its own (blocking S3 calls and catalog queries, never an IO or network thread).
// Errors: logged, counted (vigil_archive_failures_total) and retried at the next pass.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "archive/s3_client.hpp"
#include "server/disks/disk_set.hpp"

namespace vigil::catalog {
struct ArchiveTarget;
}

namespace vigil::server {

struct ArchiveOptions {
  archive::S3Endpoint endpoint;
  std::string bucket;
  std::chrono::milliseconds after{0};      // a segment is copied once it has been closed this long
  int retention_days = 0;                  // copies older than this are deleted (cameras may say); 0: kept
  std::int64_t day_us = 86'400'000'000LL;  // retention's day (tests shorten it)
  std::chrono::milliseconds poll{5000};    // how often the catalog is asked for segments to copy
  // Objects larger than this go up as multipart uploads of parts this size (S3: at least 5 MiB).
  std::uint64_t part_bytes = 16ull << 20;
};

class ArchiveService {
 public:
  // DISKS must outlive this; the disks' IO threads must run until it is destroyed.
  ArchiveService(std::string conninfo, std::span<const std::unique_ptr<Disk>> disks, ArchiveOptions options);
  ~ArchiveService();  // stops the thread; a read in progress is aborted, an upload is finished or abandoned
  ArchiveService(const ArchiveService&) = delete;
  ArchiveService& operator=(const ArchiveService&) = delete;

  // The object key of segment SEGMENT_ID of CAMERA's ROLE stream STREAM_ID.
  static std::string object_key(const std::string& camera, const std::string& role, std::uint64_t stream_id,
                                std::uint64_t segment_id);

 private:
  void run(std::stop_token stop);
  // One pass over every disk: copies what is due. False when stopped.
  bool pass(std::stop_token stop);
  // Sets and lifts the legal holds of DISK's copies as the evidence locks now say.
  void update_legal_holds(Disk& disk);
  // Archive retention: deletes DISK's expired copies (objects, then rows), never a held or locked one.
  void expire_copies(Disk& disk);
  // Copies T from DISK; true when the copy is recorded.
  bool copy(Disk& disk, const catalog::ArchiveTarget& t, std::stop_token stop);
  // Sends BYTES as KEY (one PUT, or a multipart upload of part_bytes parts); returns the ETag.
  std::string upload(const std::string& key, std::string bytes) const;

  std::string conninfo_;
  std::span<const std::unique_ptr<Disk>> disks_;
  ArchiveOptions options_;
  archive::S3Client s3_;
  bool bucket_ready_ = false;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::jthread thread_;  // last: started after everything it uses
};

}  // namespace vigil::server
