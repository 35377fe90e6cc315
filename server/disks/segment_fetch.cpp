#include "server/disks/segment_fetch.hpp"

#include <chrono>
#include <future>
#include <memory>

#include "catalog/scrub_rows.hpp"
#include "server/disks/disk_set.hpp"

namespace vigil::server {

std::optional<Result<ExtentBytes>> read_in_background(Disk& disk, const std::vector<storage::BrokerExtent>& extents,
                                                      std::stop_token stop, ReadDeadline* deadline) {
  const auto overdue = [deadline] {
    return deadline && deadline->promote_at && std::chrono::steady_clock::now() >= *deadline->promote_at;
  };
  // The blocks arrive in order on the IO thread, which only copies them.
  struct Read {
    std::vector<storage::BrokerExtent> extents;
    ExtentBytes bytes;
    std::size_t at = 0;
    std::promise<Result<void>> done;
  };
  auto read = std::make_shared<Read>();
  read->extents = extents;
  read->bytes.resize(extents.size());
  for (std::size_t i = 0; i < extents.size(); ++i) read->bytes[i].reserve(extents[i].bytes);
  auto finished = read->done.get_future();
  auto task = disk.io->broker().register_read(
      read->extents,
      [read](std::span<const std::byte> data, std::uint64_t) {
        while (read->at < read->extents.size() && read->bytes[read->at].size() >= read->extents[read->at].bytes)
          ++read->at;
        if (read->at < read->bytes.size())
          read->bytes[read->at].insert(read->bytes[read->at].end(), data.begin(), data.end());
      },
      [read](Result<void> r) { read->done.set_value(r); }, overdue());
  if (!task) return Result<ExtentBytes>(task.error());
  if (deadline) deadline->promoted = overdue();
  for (;;) {
    // Wake at the deadline too, so an overdue read is promoted when it falls due, not later.
    auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    if (deadline && deadline->promote_at && !deadline->promoted) wake = std::min(wake, *deadline->promote_at);
    if (finished.wait_until(wake) == std::future_status::ready) break;
    if (stop.stop_requested()) {
      disk.io->broker().abort(*task);
      return std::nullopt;
    }
    if (deadline && !deadline->promoted && overdue()) deadline->promoted = disk.io->broker().promote(*task);
  }
  if (auto r = finished.get(); !r) return Result<ExtentBytes>(r.error());
  return Result<ExtentBytes>(std::move(read->bytes));
}

std::optional<Result<VerifiedRead>> read_and_verify(Disk& disk, const catalog::ScrubTarget& t, std::stop_token stop,
                                                    ReadDeadline* deadline) {
  auto& vol = *disk.volume->volume;
  storage::SegmentVerifier verifier({.stream_id = t.stream_id,
                                     .extent_bytes = vol.extent_bytes(),
                                     .block_bytes = vol.block_bytes(),
                                     .end_offset = t.data_bytes,
                                     .start_us = t.start_us,
                                     .end_us = t.end_us});
  std::vector<storage::BrokerExtent> extents;
  for (std::uint32_t i = 0; i < t.extent_offsets.size(); ++i) {
    extents.push_back({t.extent_offsets[i], verifier.extent_read_bytes(i)});
  }
  auto read = read_in_background(disk, extents, stop, deadline);
  if (!read) return std::nullopt;  // stopped
  if (!*read) return Result<VerifiedRead>(read->error());
  VerifiedRead out;
  out.extents = std::move(**read);
  for (std::uint32_t i = 0; i < out.extents.size(); ++i) {
    out.bytes += out.extents[i].size();
    verifier.add_extent(i, out.extents[i]);
  }
  out.check = verifier.finish();
  return Result<VerifiedRead>(std::move(out));
}

}  // namespace vigil::server
