#include "storage/fsck.hpp"

#include <set>

#include "storage/retention.hpp"
#include "storage/segment_recovery.hpp"

namespace vigil::storage {

const char* problem_kind_name(ProblemKind k) noexcept {
  switch (k) {
    case ProblemKind::segment_header: return "unreadable segment header";
    case ProblemKind::missing_extent: return "missing extent";
    case ProblemKind::damaged_records: return "damaged records";
    case ProblemKind::torn_tail: return "torn tail (unclean stop)";
  }
  return "unknown";
}

std::string Problem::describe() const {
  std::string s = "segment " + std::to_string(segment_id) + " (stream " + std::to_string(stream_id) +
                  "): " + problem_kind_name(kind) + " at offset " + std::to_string(logical_offset) +
                  " (volume offset " + std::to_string(device_offset) + ")";
  if (stop != ScanStop::none) s += ", " + std::string(scan_stop_name(stop));
  if (kind == ProblemKind::damaged_records) s += ", valid records resume at offset " + std::to_string(resumes_at);
  return s;
}

std::size_t FsckReport::serious() const noexcept {
  std::size_t n = 0;
  for (const auto& p : problems) n += p.kind != ProblemKind::torn_tail;
  return n;
}

Result<FsckReport> check_volume(Volume& volume) noexcept {
  FsckReport report;
  const std::size_t block = volume.block_bytes();
  const std::uint64_t extent_bytes = volume.extent_bytes();
  AlignedBuffer buf(extent_bytes, block);
  for (const auto& [id, uses] : volume.segments()) {
    ++report.segments;
    const std::uint64_t stream = uses.front().header.stream_id;
    auto problem = [&](ProblemKind kind, std::uint32_t ordinal, std::uint64_t extent, std::size_t at) {
      Problem p{kind, id, stream, ordinal * extent_bytes + at, volume.extent_offset(extent) + at};
      report.problems.push_back(p);
      return &report.problems.back();
    };
    std::uint64_t last_sequence = 0;
    std::optional<std::uint64_t> next_sequence;
    for (std::uint32_t i = 0; i < uses.size(); ++i) {
      const auto& use = uses[i];
      if (use.header.ordinal != i) {
        problem(ProblemKind::missing_extent, i, use.extent, 0);
        break;
      }
      if (auto r = read_sync(volume.device(), volume.extent_offset(use.extent), buf.span()); !r) return r.error();
      std::size_t start = block;
      if (i == 0) {
        auto sh = decode_segment_header(buf.span().subspan(block));
        if (!sh || sh->segment_id != id) {
          problem(ProblemKind::segment_header, 0, use.extent, block);
          break;
        }
        start = block * (1 + segment_header_blocks(sh->codec_parameters.size(), block));
        next_sequence = sh->first_sequence;
      }
      RecordScanner scan(buf.span(), block, stream, next_sequence, start);
      while (auto rec = scan.next()) {
        ++report.records;
        report.bytes += kRecordHeaderBytes + rec->payload.size();
        last_sequence = rec->header.sequence;
      }
      next_sequence = scan.next_sequence();
      if (scan.stop() == ScanStop::end_of_data) continue;
      // Valid records after the damage (here or in a later extent) mean frames were lost.
      auto resume = find_resync(buf.span(), scan.stop_offset(), block, stream, last_sequence + 1);
      const bool later_extents = i + 1 < uses.size();
      auto* p = problem(resume || later_extents ? ProblemKind::damaged_records : ProblemKind::torn_tail, i, use.extent,
                        scan.stop_offset());
      p->stop = scan.stop();
      p->resumes_at = resume ? i * extent_bytes + resume->at : (i + 1) * extent_bytes + block;
      break;
    }
  }
  return report;
}

Result<std::size_t> repair_volume(Volume& volume, const FsckReport& report) noexcept {
  std::set<std::uint64_t> doomed;
  for (const auto& p : report.problems) {
    if (p.kind == ProblemKind::segment_header) doomed.insert(p.segment_id);
  }
  for (auto id : doomed) {
    if (auto r = reclaim_segment(volume, id); !r) return r.error();
  }
  return doomed.size();
}

}  // namespace vigil::storage
