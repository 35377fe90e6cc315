#include "storage/fsck.hpp"

#include <algorithm>
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
  for (const auto& [id, uses] : volume.segments()) {
    ++report.segments;
    const std::uint64_t stream = uses.front().header.stream_id;
    // Named captures: clang before 16 cannot capture structured bindings (the fuzz build's clang-14).
    auto problem = [&, id = id, &uses = uses](ProblemKind kind, std::uint64_t logical) {
      const std::uint64_t ordinal = std::min<std::uint64_t>(logical / extent_bytes, uses.size() - 1);
      report.problems.push_back(
          {kind, id, stream, logical, volume.extent_offset(uses[ordinal].extent) + logical % extent_bytes});
      return &report.problems.back();
    };
    // Recovery's own scan, which goes on past damage (resynchronising on the next valid record)
    // and reads every record of the segment: each damaged span is a problem.
    std::size_t ordinals = 0;
    while (ordinals < uses.size() && uses[ordinals].header.ordinal == ordinals) ++ordinals;
    if (ordinals == 0) {
      problem(ProblemKind::missing_extent, 0);
      continue;
    }
    auto rec = recover_segment(volume, id, [&](const ScannedRecord& r) {
      ++report.records;
      report.bytes += kRecordHeaderBytes + r.payload.size();
    });
    if (!rec) {
      if (rec.error() != errc::corruption) return rec.error();  // a read error: the caller's to report
      problem(ProblemKind::segment_header, block);
      continue;
    }
    for (const auto& d : rec->damaged) {
      auto* p = problem(ProblemKind::damaged_records, d.from_offset);
      p->stop = d.stop;
      p->resumes_at = d.to_offset;
    }
    if (!rec->clean()) problem(ProblemKind::torn_tail, rec->stop_offset)->stop = rec->stop;
    if (ordinals < uses.size()) problem(ProblemKind::missing_extent, ordinals * extent_bytes);
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
