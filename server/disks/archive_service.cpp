#include "server/disks/archive_service.hpp"

#include <pqxx/pqxx>

#include "catalog/archive_rows.hpp"
#include "common/log.hpp"
#include "server/disks/segment_fetch.hpp"
#include "storage/crc32c.hpp"

namespace vigil::server {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kTargetsPerPass = 64;  // per disk: a pass ends and the lag is published often

std::int64_t wall_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::uint32_t crc32c_of(std::string_view bytes) {
  return storage::crc32c(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

}  // namespace

ArchiveService::ArchiveService(std::string conninfo, std::span<const std::unique_ptr<Disk>> disks,
                               ArchiveOptions options)
    : conninfo_(std::move(conninfo)),
      disks_(disks),
      options_(std::move(options)),
      s3_(options_.endpoint),
      thread_([this](std::stop_token s) { run(s); }) {}

ArchiveService::~ArchiveService() {
  thread_.request_stop();
  cv_.notify_all();
}

std::string ArchiveService::object_key(const std::string& camera, const std::string& role, std::uint64_t stream_id,
                                       std::uint64_t segment_id) {
  // Camera first, so a listing by prefix is a camera's archive; ids make the key unique even when
  // a camera is removed and another takes its name.
  return camera + "/" + role + "/" + std::to_string(stream_id) + "-" + std::to_string(segment_id) + ".vseg";
}

void ArchiveService::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    if (!pass(stop)) return;
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, stop, options_.poll, [] { return false; })) return;
  }
}

bool ArchiveService::pass(std::stop_token stop) {
  if (!bucket_ready_) {
    try {
      // Object lock on: evidence locks become legal holds on the copies (S3 allows it only on a
      // bucket made with it). A bucket that exists already is used as it is.
      s3_.create_bucket(options_.bucket, true);
      bucket_ready_ = true;
    } catch (const archive::S3Error& e) {
      if (e.code == "BucketAlreadyOwnedByYou" || e.code == "BucketAlreadyExists") {
        bucket_ready_ = true;
      } else {
        log::warn("archive: cannot create the bucket; retried", {{"bucket", options_.bucket}, {"error", e.what()}});
        return true;
      }
    } catch (const std::exception& e) {
      log::warn("archive: the object store does not answer; retried",
                {{"endpoint", options_.endpoint.host + ":" + std::to_string(options_.endpoint.port)},
                 {"error", e.what()}});
      return true;
    }
  }
  for (const auto& d : disks_) {
    Disk& disk = *d;
    std::vector<catalog::ArchiveTarget> targets;
    try {
      pqxx::connection conn(conninfo_);
      pqxx::work tx(conn);
      targets = catalog::archive_targets(tx, disk.volume->volume_id, wall_now_us(),
                                         std::chrono::duration_cast<std::chrono::microseconds>(options_.after).count(),
                                         kTargetsPerPass);
    } catch (const std::exception& e) {
      log::warn("archive: cannot read the catalog; retried", {{"error", e.what()}});
      return true;
    }
    for (const auto& t : targets) {
      if (stop.stop_requested()) return false;
      if (disk.io->volume_failed()) break;
      if (!copy(disk, t, stop)) {
        if (stop.stop_requested()) return false;
        if (auto* m = disk.io->metrics()) m->archive_failed();
      }
    }
    // Holds first: a copy a lock now covers is held before expiry looks at it.
    update_legal_holds(disk);
    expire_copies(disk);
    try {
      pqxx::connection conn(conninfo_);
      pqxx::work tx(conn);
      const auto oldest = catalog::oldest_uncopied_closed_at_us(tx, disk.volume->volume_id);
      if (auto* m = disk.io->metrics())
        m->archive_lag(oldest ? static_cast<double>(std::max<std::int64_t>(0, wall_now_us() - *oldest)) / 1e6 : 0.0);
    } catch (const std::exception&) {
      // The lag waits for the next pass; the copies above are what matters.
    }
  }
  return true;
}

void ArchiveService::update_legal_holds(Disk& disk) {
  std::vector<catalog::HoldChange> changes;
  try {
    pqxx::connection conn(conninfo_);
    pqxx::work tx(conn);
    changes = catalog::legal_hold_changes(tx, disk.volume->volume_id, kTargetsPerPass);
    for (const auto& c : changes) {
      try {
        s3_.put_object_legal_hold(c.copy.bucket, c.copy.object_key, c.hold);
      } catch (const std::exception& e) {
        // A bucket made without object lock refuses every hold: said at every pass, counted.
        log::warn("archive: cannot change a copy's legal hold; retried",
                  {{"key", c.copy.object_key}, {"hold", c.hold}, {"error", e.what()}});
        if (auto* m = disk.io->metrics()) m->archive_failed();
        continue;
      }
      catalog::record_legal_hold(tx, c.copy.segment_id, c.hold);
      log::info(c.hold ? "archive: legal hold set (evidence lock)" : "archive: legal hold lifted (lock released)",
                {{"segment", c.copy.segment_id}, {"key", c.copy.object_key}});
    }
    tx.commit();
  } catch (const std::exception& e) {
    log::warn("archive: cannot read or record legal holds; retried", {{"error", e.what()}});
  }
}

void ArchiveService::expire_copies(Disk& disk) {
  std::vector<catalog::SegmentCopy> expired;
  try {
    pqxx::connection conn(conninfo_);
    pqxx::work tx(conn);
    expired = catalog::expired_copies(tx, disk.volume->volume_id, wall_now_us(), options_.retention_days,
                                      options_.day_us, kTargetsPerPass);
  } catch (const std::exception& e) {
    log::warn("archive: cannot read expired copies; retried", {{"error", e.what()}});
    return;
  }
  for (const auto& c : expired) {
    try {
      pqxx::connection conn(conninfo_);
      pqxx::work tx(conn);
      // Held across the deletion: a lock taken now waits for one DELETE call, and is then seen.
      if (!catalog::lock_copy_for_deletion(tx, c.segment_id)) continue;
      // The version itself: a plain DELETE in a versioned (object-lock) bucket only adds a delete
      // marker, which a legal hold allows and which leaves the bytes stored.
      std::string version;
      try {
        version = s3_.head_object(c.bucket, c.object_key).version_id;
      } catch (const archive::S3Error& e) {
        if (e.http_status != 404) throw;  // gone already: only the rows are left to forget
      }
      s3_.delete_object(c.bucket, c.object_key, version);
      catalog::forget_copy(tx, c.segment_id);
      tx.commit();
      log::info("archive: expired copy deleted", {{"segment", c.segment_id}, {"key", c.object_key}});
    } catch (const std::exception& e) {
      // A legal hold the catalog does not know of (set by hand on the store) refuses here: kept.
      log::warn("archive: cannot delete an expired copy; kept, retried",
                {{"segment", c.segment_id}, {"key", c.object_key}, {"error", e.what()}});
      if (auto* m = disk.io->metrics()) m->archive_failed();
    }
  }
}

bool ArchiveService::copy(Disk& disk, const catalog::ArchiveTarget& t, std::stop_token stop) {
  const auto& s = t.segment;
  auto read = read_and_verify(disk, s, stop);
  if (!read) return false;  // stopped
  if (!*read) {
    log::warn("archive: cannot read segment; retried",
              {{"segment", s.segment_id}, {"volume", disk.volume->path.string()}, {"error", read->error().message()}});
    return false;
  }
  if (!(*read)->intact(s.checksum_crc32c)) {
    // Not copied: a copy must be what was recorded. The scrubber records the damage as a gap.
    log::error("archive: segment does not verify; not copied", {{"segment", s.segment_id},
                                                                {"volume", disk.volume->path.string()},
                                                                {"damaged_runs", (*read)->check.damage.size()}});
    return false;
  }
  // The object: the segment's logical bytes, each extent's share of [0, data_bytes) in order.
  const std::uint64_t extent_bytes = disk.volume->volume->extent_bytes();
  std::string object;
  object.reserve(s.data_bytes);
  for (const auto& extent : (*read)->extents) {
    const std::uint64_t take = std::min<std::uint64_t>({s.data_bytes - object.size(), extent_bytes, extent.size()});
    object.append(reinterpret_cast<const char*>(extent.data()), take);
    if (object.size() == s.data_bytes) break;
  }
  if (object.size() != s.data_bytes) {
    log::error("archive: segment reads short; not copied", {{"segment", s.segment_id}, {"bytes", object.size()}});
    return false;
  }
  const std::string key = object_key(t.camera, t.role, s.stream_id, s.segment_id);
  const std::uint64_t bytes = object.size();
  std::string etag;
  try {
    etag = upload(key, std::move(object));
    const auto info = s3_.head_object(options_.bucket, key);
    if (info.size_bytes != bytes)
      throw std::runtime_error("stored object holds " + std::to_string(info.size_bytes) + " bytes, not " +
                               std::to_string(bytes));
  } catch (const std::exception& e) {
    log::warn("archive: upload failed; retried",
              {{"segment", s.segment_id}, {"key", key}, {"bucket", options_.bucket}, {"error", e.what()}});
    return false;
  }
  bool recorded = false;
  try {
    pqxx::connection conn(conninfo_);
    pqxx::work tx(conn);
    recorded = catalog::record_segment_copy(
        tx, {.segment_id = s.segment_id, .bucket = options_.bucket, .object_key = key, .etag = etag, .bytes = bytes});
    tx.commit();
  } catch (const std::exception& e) {
    // The object stays; the next pass copies the segment again over the same key.
    log::warn("archive: cannot record the copy; retried", {{"segment", s.segment_id}, {"error", e.what()}});
    return false;
  }
  if (!recorded) {
    // Reclaimed while it was copied: its object would be a copy no row points at.
    try {
      s3_.delete_object(options_.bucket, key);
    } catch (const std::exception& e) {
      log::warn("archive: cannot delete the copy of a reclaimed segment", {{"key", key}, {"error", e.what()}});
    }
    return true;
  }
  if (auto* m = disk.io->metrics()) m->archived(bytes);
  log::info("archive: segment copied", {{"segment", s.segment_id}, {"key", key}, {"bytes", bytes}});
  return true;
}

std::string ArchiveService::upload(const std::string& key, std::string bytes) const {
  if (bytes.size() <= options_.part_bytes) {
    const auto crc = crc32c_of(bytes);
    return s3_.put_object(options_.bucket, key, std::move(bytes), crc);
  }
  const std::string upload_id = s3_.create_multipart_upload(options_.bucket, key, true);
  try {
    std::vector<archive::CompletedPart> parts;
    const std::string_view all(bytes);
    for (std::uint64_t at = 0; at < all.size(); at += options_.part_bytes) {
      const auto part = all.substr(at, options_.part_bytes);
      const auto crc = crc32c_of(part);
      const int number = static_cast<int>(parts.size()) + 1;
      parts.push_back({.part_number = number,
                       .etag = s3_.upload_part(options_.bucket, key, upload_id, number, std::string(part), crc),
                       .crc32c = crc});
    }
    return s3_.complete_multipart_upload(options_.bucket, key, upload_id, parts);
  } catch (...) {
    try {
      s3_.abort_multipart_upload(options_.bucket, key, upload_id);
    } catch (const std::exception&) {
      // The store expires abandoned uploads; the failure above is what is reported.
    }
    throw;
  }
}

}  // namespace vigil::server
